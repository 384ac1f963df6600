// twins.h -- the host entry points of the CUDA C++ twins (defined in gemm_ws.cu,
// gemm_ws_pingpong.cu and attention_fa3.cu). Plain C: pointers, sizes and the stream, called
// through ctypes from kernels/cuda/__init__.py, which makes the shape/dtype checks (the same
// ones as the Gluon kernels) before it calls. No torch header is compiled: the build stays a
// few seconds.
#pragma once

#include <cuda_runtime.h>

extern "C" {

// C (M x N) = A (M x K) @ B (K x N); row-major, fp16 or bf16, fp32 accumulation.
// `ablation` (0 = none; 1 = the epilogue staged with stmatrix, 2 = consumers in lockstep,
// 3 = TMA descriptors with 128-byte L2 promotion; stages 3 only) picks a variant for the
// benchmark's A/B rows. Returns a message on failure (nullptr on success).
const char* twin_gemm_ws(const void* a, const void* b, void* c, int M, int N, int K, bool bf16,
                         int stages, int ablation, int num_sms, cudaStream_t stream);

// The same with the pingpong schedule (128 x 128 tiles, one per consumer warpgroup).
const char* twin_gemm_ws_pingpong(const void* a, const void* b, void* c, int M, int N, int K,
                                  bool bf16, int stages, int num_sms, cudaStream_t stream);

// O = softmax(Q K^T * scale) V and LSE (natural log), q/k/v/o (batch*heads, S, D) row-major,
// with the instance of tile block_m x block_n at head dim D (attention_fa3.cu lists them; an
// unknown one returns a message); cond_rescale: FA4's conditional rescaling (d 128 only);
// persistent: min(num_sms, tiles) CTAs walking the tiles (causal: in pairs), at the tiles
// attention_fa3.cu's persistent_built lists.
const char* twin_attention_fa3(const void* q, const void* k, const void* v, void* o, float* lse,
                               int BH, int S, int D, int block_m, int block_n, float scale,
                               bool causal, bool bf16, bool cond_rescale, bool persistent,
                               int num_sms, cudaStream_t stream);
}
