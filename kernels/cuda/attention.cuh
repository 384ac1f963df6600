// attention.cuh -- the steps of the attention twin's consumer (attention_fa3.cu), named as in
// sim/ and the Gluon kernels: qk (S = Q K_j^T), softmax, rescale, pack (P into the A operand
// of the next wgmma), pv (O += P V_j); and the producer's loads, load_q and load_block.
#pragma once

#include <math.h>

#include "hopper.cuh"

namespace {

using namespace hopper;

constexpr int D = 128;                // head dim
constexpr int BM = 128;               // Q rows per CTA (2 consumers x 64)
constexpr int BN = 128;               // K/V rows per block
constexpr int CHUNK = 128 * 128;      // bytes of one 128-row x 64-column box (128-byte rows)
constexpr int Q_BYTES = BM * D * 2;   // 32 KiB: two column chunks of 128 rows
constexpr int KV_BYTES = BN * D * 2;  // 32 KiB per block of K or of V
constexpr float LN2 = 0.6931471805599453f;

// Producer: this CTA's 128 rows of Q, 2 column chunks x 2 consumers' 64 rows, one barrier for
// all four boxes.
__device__ __forceinline__ void load_q(uint8_t* q_smem, const CUtensorMap* map, uint64_t* q_full,
                                       int m0, int bh) {
  mbar_arrive_expect_tx(q_full, Q_BYTES);
#pragma unroll
  for (int c = 0; c < 2; ++c)
#pragma unroll
    for (int w = 0; w < 2; ++w)
      tma_load_3d(q_smem + c * CHUNK + w * (CHUNK / 2), map, q_full, c * 64, m0 + w * 64, bh);
}

// Producer: block j of K or V (two 64-column chunks of 128 rows) into its slot, on `full`.
__device__ __forceinline__ void load_block(uint8_t* slot, const CUtensorMap* map, uint64_t* full,
                                           int j, int bh) {
#pragma unroll
  for (int c = 0; c < 2; ++c) tma_load_3d(slot + c * CHUNK, map, full, c * 64, j * BN, bh);
}

// S = Q K_j^T: both operands K-major (d contiguous), 8 k16 steps over d, crossing from the
// first 64-column chunk into the second after four.
template <bool BF16>
__device__ __forceinline__ void qk(float (&s)[64], const uint8_t* my_q, const uint8_t* k_tile) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int off = (kk / 4) * CHUNK + (kk % 4) * 32;
    wgmma_m64n128k16_ss<BF16, 0>(s, smem_desc(my_q + off, 16, 1024),
                                 smem_desc(k_tile + off, 16, 1024), kk > 0);
  }
}

// O += P V_j: P from registers, V N-major (d contiguous): a k16 step is 16 rows = 2048
// bytes; its two 64-column chunks lie CHUNK apart (LBO).
template <bool BF16>
__device__ __forceinline__ void pv(float (&o)[64], const uint32_t (&p)[32],
                                   const uint8_t* v_tile) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    const uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
    wgmma_m64n128k16_rs<BF16, 1>(o, a, smem_desc(v_tile + kk * 2048, CHUNK, 1024), 1);
  }
}

// Online softmax of one 64 x 128 block of scores held in wgmma accumulator layout: s[4j+2h+e]
// is row (lane/4 + 8h) of this warp's 16, column 8j + 2(lane%4) + e. Masks, updates the running
// max m[h] and (thread-partial) sum l[h], turns s into P (fp32) and returns the rescale factor
// of each of the thread's two rows in alpha[h]. Base 2: qk_scale = scale * log2(e).
template <bool CAUSAL>
__device__ __forceinline__ void softmax(float (&s)[64], float (&m)[2], float (&l)[2],
                                        float (&alpha)[2], int j, int row0, int seqlen,
                                        float qk_scale) {
  const int lane = threadIdx.x % 32;
  const int col0 = j * BN + 2 * (lane % 4);
  // Only blocks that reach past the end of the sequence (or, causal, past this warp's first
  // row) need the mask; it is uniform per warp, so the branch does not diverge.
  const int warp_row0 = row0 - lane / 4;
  bool needs_mask = j * BN + BN > seqlen;
  if (CAUSAL) needs_mask |= j * BN + BN - 1 > warp_row0;
  if (needs_mask) {
#pragma unroll
    for (int i = 0; i < 64; ++i) {
      const int col = col0 + 8 * (i / 4) + (i % 2);
      const int row = row0 + 8 * ((i / 2) % 2);
      bool valid = col < seqlen;
      if (CAUSAL) valid &= col <= row;
      if (!valid) s[i] = -INFINITY;
    }
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int i = 0; i < 64; ++i) mx[(i / 2) % 2] = fmaxf(mx[(i / 2) % 2], s[i]);
  float m_new[2], neg[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    // the four threads of a quad hold one row between them
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffff, mx[h], 1));
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffff, mx[h], 2));
    m_new[h] = fmaxf(m[h], mx[h] * qk_scale);  // m starts finite: a masked row cannot make NaN
    alpha[h] = exp2_approx(m[h] - m_new[h]);
    neg[h] = -m_new[h];
    m[h] = m_new[h];
  }
  float sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    const int h = (i / 2) % 2;
    s[i] = exp2_approx(fmaf(s[i], qk_scale, neg[h]));
    sum[h] += s[i];
  }
  // l stays a per-thread partial sum (alpha is the same for the whole quad); the quad's four
  // partials are added once, in the epilogue.
#pragma unroll
  for (int h = 0; h < 2; ++h) l[h] = l[h] * alpha[h] + sum[h];
}

// O *= alpha, row by row: the running max moved, so the sum so far is rescaled (FA3 alg. 1).
__device__ __forceinline__ void rescale(float (&o)[64], const float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] *= alpha[(i / 2) % 2];
}

// P (fp32, accumulator layout) -> the A operand of P V in registers. For the k16 step kk the
// A fragment is {row g cols 2t.., row g+8 cols 2t.., row g cols 2t+8.., row g+8 cols 2t+8..},
// which is exactly accumulator columns 16kk..16kk+15: no data moves between threads.
template <bool BF16>
__device__ __forceinline__ void pack(const float (&s)[64], uint32_t (&p)[32]) {
#pragma unroll
  for (int i = 0; i < 32; ++i) p[i] = pack2<BF16>(s[2 * i], s[2 * i + 1]);
}

}  // namespace
