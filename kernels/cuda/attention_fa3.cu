// attention_fa3.cu -- the CUDA C++ twin of kernels/attention/fa3.py: FlashAttention-3-style
// forward, O = softmax(Q K^T * scale) V and the row logsumexp, head dim 128, fp16/bf16. The
// consumer's steps (qk, softmax, rescale, pack, pv) are in attention.cuh, the ring and the
// turns in ring.cuh.
//
// One CTA owns 128 rows of Q of one (batch, head); K and V come in blocks of 128 rows.
// Roles (384 threads = 3 warpgroups), as in sim/'s `fa3` schedule:
//
//   warpgroup 0: the producer. setmaxnreg.dec to 24; one thread: load_q once, then per block
//     produce(k, j), produce(v, j): K and V in rings of their own, since K_j's slot frees as
//     soon as Q K_j^T is done while V_j is still needed for P V_j (FA3 §3.1).
//   warpgroups 1 and 2: the consumers, 64 rows of Q each. setmaxnreg.inc to 240.
//
// Each consumer runs FA3's intra-warpgroup overlap (FA3 §3.2, alg. 2): in iteration j it
// issues S_j = Q K_j^T and O += P_{j-1} V_{j-1} back to back (async wgmma), then waits only
// for S_j and runs softmax j while P_{j-1} V_{j-1} is still on the tensor cores. So per block
// the steps run in this order (the model's, overlapped):
//
//   acquire(k, j), acquire(v, j-1), wait_turn, qk(j), pv(j-1), pass_turn,
//   [S_j done] release(k, j), softmax(j), [P V done] release(v, j-1), rescale, pack(j)
//
// and the last block's pv, then the epilogue. The turns (FA3 §3.1's pingpong) make one
// consumer's GEMMs run while the other does its softmax: the exp2 unit and the tensor cores
// are busy at the same time.
//
// Masking: columns past the sequence (and, causal, past the row) are -inf. Rows of Q past the
// sequence read zeros (TMA) and are not stored (the O store is clipped by its 3-D tensor map;
// the LSE store is predicated). A 3-D map (d, seq, batch*heads) means a box never reads the
// next head's rows. LSE = (m + log2 l) ln 2 (the scores are kept in base 2).
//
// Shared memory (2 stages): Q 32 KiB + K ring 2 x 32 KiB + V ring 2 x 32 KiB = 160 KiB.

#include "attention.cuh"
#include "ring.cuh"
#include "staging.cuh"
#include "twins.h"

namespace {

constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;  // 128 x 24 + 256 x 240 = 64512
constexpr int EMPTY_ARRIVALS = 8;     // one per consumer warp
constexpr int EPILOGUE_BAR = 3;       // named barriers 3, 4: one per consumer warpgroup

template <int STAGES>
constexpr int smem_bytes() {
  return 1024 + Q_BYTES + 2 * STAGES * KV_BYTES + (1 + 4 * STAGES) * 8;
}

template <bool BF16, bool CAUSAL, int STAGES>
__global__ void __launch_bounds__(384, 1)
    attention_fa3_kernel(const __grid_constant__ CUtensorMap q_map,
                         const __grid_constant__ CUtensorMap k_map,
                         const __grid_constant__ CUtensorMap v_map,
                         const __grid_constant__ CUtensorMap o_map, float* __restrict__ lse,
                         int seqlen, float qk_scale) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* q_smem = smem;  // [chunk c of 64 columns][128 rows][128 bytes]
  uint8_t* k_smem = q_smem + Q_BYTES;
  uint8_t* v_smem = k_smem + STAGES * KV_BYTES;
  uint64_t* q_full = reinterpret_cast<uint64_t*>(v_smem + STAGES * KV_BYTES);
  const Ring<STAGES> k{q_full + 1, q_full + 1 + STAGES};
  const Ring<STAGES> v{q_full + 1 + 2 * STAGES, q_full + 1 + 3 * STAGES};

  const int bh = blockIdx.y;
  // Causal: the longest rows (last Q tiles) are launched first.
  const int pid_m = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int m0 = pid_m * BM;
  const int n_blocks = CAUSAL ? (min(seqlen, m0 + BM) + BN - 1) / BN : (seqlen + BN - 1) / BN;

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < STAGES; ++s) {
      k.init(s, EMPTY_ARRIVALS);
      v.init(s, EMPTY_ARRIVALS);
    }
    mbar_fence_init();
  }
  __syncthreads();

  if (wg == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid == 0) {
      tma_prefetch_map(&k_map);
      tma_prefetch_map(&v_map);
      load_q(q_smem, &q_map, q_full, m0, bh);
      for (int j = 0; j < n_blocks; ++j) {
        produce(k, j, KV_BYTES, [&](int s, uint64_t* full) {
          load_block(k_smem + s * KV_BYTES, &k_map, full, j, bh);
        });
        produce(v, j, KV_BYTES, [&](int s, uint64_t* full) {
          load_block(v_smem + s * KV_BYTES, &v_map, full, j, bh);
        });
      }
    }
    return;
  }

  // ------------------------------------------------------------------ consumers
  setmaxnreg_inc<CONSUMER_REGS>();
  const int cw = wg - 1;  // which 64 rows of the tile
  const int warp = tid / 32, lane = tid % 32;
  const int row0 = m0 + cw * 64 + warp * 16 + lane / 4;  // this thread's first row (+8: second)
  const uint8_t* my_q = q_smem + cw * (CHUNK / 2);

  float o[64], s[64], m[2] = {-1.0e30f, -1.0e30f}, l[2] = {0.f, 0.f}, alpha[2];
  uint32_t p[32];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.f;

  // Consumer 1 opens the first turn, so consumer 0 goes first; consumer 1 does not pass its
  // last turn, so every bar.sync meets exactly one bar.arrive.
  if (cw == 1) pass_turn(cw);
  mbar_wait(q_full, 0);

  // Block 0: S_0 = Q K_0^T alone (no P V yet), then its softmax.
  {
    const int sk = acquire(k, 0);
    wait_turn(cw);
    wgmma_fence();
    qk<BF16>(s, my_q, k_smem + sk * KV_BYTES);
    wgmma_commit();
    if (!(cw == 1 && n_blocks == 1)) pass_turn(cw);
    wgmma_wait<0>();
    reg_fence(s);
    release(k, 0);
    softmax<CAUSAL>(s, m, l, alpha, 0, row0, seqlen, qk_scale);
    pack<BF16>(s, p);
  }

  for (int j = 1; j < n_blocks; ++j) {
    const int sk = k.slot(j), sv = v.slot(j - 1);
    acquire(k, j);
    acquire(v, j - 1);
    wait_turn(cw);
    reg_fence(o);
    reg_fence(p);
    wgmma_fence();
    qk<BF16>(s, my_q, k_smem + sk * KV_BYTES);  // S_j = Q K_j^T
    wgmma_commit();
    pv<BF16>(o, p, v_smem + sv * KV_BYTES);  // O += P_{j-1} V_{j-1}
    wgmma_commit();
    if (!(cw == 1 && j == n_blocks - 1)) pass_turn(cw);
    wgmma_wait<1>();  // S_j is done; P_{j-1} V_{j-1} may still run
    reg_fence(s);
    release(k, j);
    softmax<CAUSAL>(s, m, l, alpha, j, row0, seqlen, qk_scale);  // under P V on the tensor cores
    schedule_fence(lse, seqlen);  // or ptxas hoists the wait above the softmax
    wgmma_wait<0>();
    reg_fence(o);
    reg_fence(p);  // p stays live until here: the wgmma read it from registers
    release(v, j - 1);
    rescale(o, alpha);
    pack<BF16>(s, p);
  }
  // The last P V.
  {
    const int sv = acquire(v, n_blocks - 1);
    reg_fence(o);
    reg_fence(p);
    wgmma_fence();
    pv<BF16>(o, p, v_smem + sv * KV_BYTES);
    wgmma_commit();
    wgmma_wait<0>();
    reg_fence(o);
    reg_fence(p);
    release(v, n_blocks - 1);
  }

  // ---- epilogue: O / l -> dtype -> this consumer's half of the Q buffer (swizzled as TMA
  // writes it) -> TMA store clipped at the sequence's end; LSE by predicated stores.
  float inv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(0xffffffff, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffff, l[h], 2);
    inv[h] = 1.f / l[h];
    const int row = row0 + 8 * h;
    if (lane % 4 == 0 && row < seqlen)
      lse[static_cast<size_t>(bh) * seqlen + row] = (m[h] + __log2f(l[h])) * LN2;
  }
  // Our own Q rows were last read by our own wgmmas (all complete); the other consumer never
  // reads them. Order those async-proxy reads before our generic writes, then the writes
  // before the TMA store.
  fence_proxy_async_smem();
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] *= inv[(i / 2) % 2];
  stage_accumulator_sts<BF16, D>(o, smem_u32(my_q), CHUNK);
  fence_proxy_async_smem();
  named_bar_sync(EPILOGUE_BAR + cw, 128);
  if (tid == 0) {
#pragma unroll
    for (int c = 0; c < 2; ++c) tma_store_3d(&o_map, my_q + c * CHUNK, c * 64, m0 + cw * 64, bh);
    tma_store_commit();
    tma_store_wait0();
  }
}

template <bool BF16, bool CAUSAL>
const char* launch(const CUtensorMap* maps, float* lse, int BH, int S, float qk_scale,
                   cudaStream_t stream) {
  constexpr int STAGES = 2;
  auto kernel = attention_fa3_kernel<BF16, CAUSAL, STAGES>;
  constexpr int smem = smem_bytes<STAGES>();
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
      cudaSuccess)
    return "cudaFuncSetAttribute(max dynamic shared memory) failed";
  const dim3 grid((S + BM - 1) / BM, BH);
  kernel<<<grid, 384, smem, stream>>>(maps[0], maps[1], maps[2], maps[3], lse, S, qk_scale);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace

const char* twin_attention_fa3(const void* q, const void* k, const void* v, void* o, float* lse,
                               int BH, int S, float scale, bool causal, bool bf16,
                               cudaStream_t stream) {
  // (d, seq, batch*heads): boxes of 64 columns (one 128-byte swizzle row) by 64 rows (Q, O:
  // one consumer's share) or 128 rows (K, V: one block).
  CUtensorMap maps[4];
  const uint64_t dims[3] = {uint64_t(D), uint64_t(S), uint64_t(BH)};
  const uint64_t row = D * 2, plane = uint64_t(S) * D * 2;
  const uint32_t box_q[2] = {64, 64}, box_kv[2] = {64, BN};
  const void* ptrs[4] = {q, k, v, o};
  for (int i = 0; i < 4; ++i)
    if (make_map(&maps[i], ptrs[i], bf16, 3, dims, row, plane,
                 (i == 0 || i == 3) ? box_q : box_kv) != CUDA_SUCCESS)
      return "cuTensorMapEncodeTiled failed";
  const float qk_scale = scale * 1.4426950408889634f;  // base 2: exp(x) = exp2(x log2 e)
  if (bf16)
    return causal ? launch<true, true>(maps, lse, BH, S, qk_scale, stream)
                  : launch<true, false>(maps, lse, BH, S, qk_scale, stream);
  return causal ? launch<false, true>(maps, lse, BH, S, qk_scale, stream)
                : launch<false, false>(maps, lse, BH, S, qk_scale, stream);
}
