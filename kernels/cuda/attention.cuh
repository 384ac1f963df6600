// attention.cuh -- the steps of the attention twin's consumer (attention_fa3.cu), named as in
// sim/ and the Gluon kernels: qk (S = Q K_j^T), softmax, rescale, pack (P into the A operand
// of the next wgmma), pv (O += P V_j); and the producer's loads, load_q and load_block.
//
// Every step is written for a Tile<D, BM, BN>: head dim D (64, 128 or 256), BM rows of Q per
// CTA (64 per consumer warpgroup: 128 = 2 consumers, 192 = 3) and K/V blocks of BN rows (any
// multiple of 16 up to 256: raw PTX has no power-of-two limit, so FA3's own 128 x 176 at d 128
// and 128 x 80 at d 256 are tiles like any other). The shared-memory layout is the one TMA
// writes with 128-byte swizzle: a tile of R rows is D / 64 column chunks of R rows x 128 bytes.
#pragma once

#include <math.h>

#include "hopper.cuh"
#include "ptx/wgmma_shapes.cuh"

namespace {

using namespace hopper;

constexpr float LN2 = 0.6931471805599453f;

// Conditional rescaling (FlashAttention-4, arXiv 2603.05451, "conditional softmax rescaling";
// its Blackwell forward passes rescale_threshold 8.0 for 16-bit inputs, log2 of 256): a row
// keeps its old running max m until the max of the scores seen passes it by more than
// RESCALE_THRESHOLD (base 2). So every P = 2^(s - m) <= 2^8 = 256, which fp16 and bf16 hold with
// the same relative precision as P <= 1, and l and O are at most 256x what they would be, far
// inside fp32's range. O and l are always scaled against the same m, and the LSE is m + log2 l
// with that m, so the stale max cancels in O / l: the same attention, up to rounding.
constexpr float RESCALE_THRESHOLD = 8.0f;

template <int D_, int BM_, int BN_>
struct Tile {
  static constexpr int D = D_;                     // head dim
  static constexpr int BM = BM_;                   // Q rows per CTA
  static constexpr int BN = BN_;                   // K/V rows per block
  static constexpr int CONSUMERS = BM / 64;        // consumer warpgroups, 64 rows of Q each
  static constexpr int THREADS = 128 * (1 + CONSUMERS);  // + the producer warpgroup
  static constexpr int CHUNKS = D / 64;            // 64-column (128-byte) chunks of a row
  static constexpr int Q_CHUNK = BM * 128;         // bytes of one column chunk of Q
  static constexpr int KV_CHUNK = BN * 128;        // ... of one block of K or V
  static constexpr int Q_BYTES = BM * D * 2;
  static constexpr int KV_BYTES = BN * D * 2;
  static_assert(D == 64 || D == 128 || D == 256, "head dim 64, 128 or 256");
  static_assert(BM % 64 == 0 && CONSUMERS >= 2 && CONSUMERS <= 3, "2 or 3 consumers");
  // wgmma's N (the score GEMM's) is a multiple of 8 up to 256; P V's k-steps need 16 | BN;
  // a TMA box is at most 256 rows; K/V slots stay 1024-byte (swizzle-atom) aligned.
  static_assert(BN % 16 == 0 && BN >= 16 && BN <= 256, "BN: a multiple of 16 up to 256");
};

// The tile every instance before FA3's tiles had (d 128, 128 x 128): what results/h200-cuda.json
// measures as cuda_fa3.
using Tile128 = Tile<128, 128, 128>;

// Producer: this CTA's BM rows of Q, D / 64 column chunks x CONSUMERS boxes of 64 rows, one
// barrier for all of them.
template <class T>
__device__ __forceinline__ void load_q(uint8_t* q_smem, const CUtensorMap* map, uint64_t* q_full,
                                       int m0, int bh) {
  mbar_arrive_expect_tx(q_full, T::Q_BYTES);
#pragma unroll
  for (int c = 0; c < T::CHUNKS; ++c)
#pragma unroll
    for (int w = 0; w < T::CONSUMERS; ++w)
      tma_load_3d(q_smem + c * T::Q_CHUNK + w * (64 * 128), map, q_full, c * 64, m0 + w * 64, bh);
}

// Producer: block j of K or V (D / 64 column chunks of BN rows) into its slot, on `full`. A
// block past the sequence's end reads zeros there (and still counts its whole box's bytes).
template <class T>
__device__ __forceinline__ void load_block(uint8_t* slot, const CUtensorMap* map, uint64_t* full,
                                           int j, int bh) {
#pragma unroll
  for (int c = 0; c < T::CHUNKS; ++c)
    tma_load_3d(slot + c * T::KV_CHUNK, map, full, c * 64, j * T::BN, bh);
}

// S = Q K_j^T: both operands K-major (d contiguous), D / 16 k16 steps over d, crossing into the
// next 64-column chunk every four. wgmma m64nBNk16.
template <class T, bool BF16>
__device__ __forceinline__ void qk(float (&s)[T::BN / 2], const uint8_t* my_q,
                                   const uint8_t* k_tile) {
#pragma unroll
  for (int kk = 0; kk < T::D / 16; ++kk) {
    const int in_chunk = (kk % 4) * 32;
    wgmma_ss<T::BN, BF16, 0>(s, smem_desc(my_q + (kk / 4) * T::Q_CHUNK + in_chunk, 16, 1024),
                             smem_desc(k_tile + (kk / 4) * T::KV_CHUNK + in_chunk, 16, 1024),
                             kk > 0);
  }
}

// O += P V_j: P from registers, V N-major (d contiguous): a k16 step is 16 rows = 2048
// bytes; its 64-column chunks lie KV_CHUNK apart (LBO). wgmma m64nDk16, BN / 16 steps.
template <class T, bool BF16>
__device__ __forceinline__ void pv(float (&o)[T::D / 2], const uint32_t (&p)[T::BN / 4],
                                   const uint8_t* v_tile) {
#pragma unroll
  for (int kk = 0; kk < T::BN / 16; ++kk) {
    const uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
    wgmma_rs<T::D, BF16, 1>(o, a, smem_desc(v_tile + kk * 2048, T::KV_CHUNK, 1024), 1);
  }
}

// The running max a row goes on with, given the max of everything seen so far. Plain: that max.
// COND_RESCALE: the old one while the new max stays within RESCALE_THRESHOLD of it.
template <bool COND_RESCALE>
__device__ __forceinline__ float next_max(float m_old, float m_seen) {
  if constexpr (COND_RESCALE) return m_seen - m_old > RESCALE_THRESHOLD ? m_seen : m_old;
  return m_seen;
}

// Online softmax of one 64 x BN block of scores held in wgmma accumulator layout: s[4j+2h+e]
// is row (lane/4 + 8h) of this warp's 16, column 8j + 2(lane%4) + e. Masks, updates the running
// max m[h] and (thread-partial) sum l[h], turns s into P (fp32) and returns the rescale factor
// of each of the thread's two rows in alpha[h]. Base 2: qk_scale = scale * log2(e).
// Returns whether O must be rescaled: always in the plain build; with COND_RESCALE, whether any
// of the warp's 16 rows moved its max (one vote a warp, as FA4's correction warps vote: O's
// registers are the thread's own, so a warp-uniform branch may skip them; the 4 warps of the
// warpgroup need not agree, and agreeing would cost a barrier).
template <class T, bool CAUSAL, bool COND_RESCALE>
__device__ __forceinline__ bool softmax(float (&s)[T::BN / 2], float (&m)[2], float (&l)[2],
                                        float (&alpha)[2], int j, int row0, int seqlen,
                                        float qk_scale) {
  constexpr int BN = T::BN;
  const int lane = threadIdx.x % 32;
  const int col0 = j * BN + 2 * (lane % 4);
  // Only blocks that reach past the end of the sequence (or, causal, past this warp's first
  // row) need the mask; it is uniform per warp, so the branch does not diverge. When BN does
  // not divide S (176 and 1024) the last block is such a block: its tail is masked here and
  // was read as zeros by TMA.
  const int warp_row0 = row0 - lane / 4;
  bool needs_mask = j * BN + BN > seqlen;
  if (CAUSAL) needs_mask |= j * BN + BN - 1 > warp_row0;
  if (needs_mask) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
      const int col = col0 + 8 * (i / 4) + (i % 2);
      const int row = row0 + 8 * ((i / 2) % 2);
      bool valid = col < seqlen;
      if (CAUSAL) valid &= col <= row;
      if (!valid) s[i] = -INFINITY;
    }
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) mx[(i / 2) % 2] = fmaxf(mx[(i / 2) % 2], s[i]);
  float m_new[2], neg[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    // the four threads of a quad hold one row between them
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffff, mx[h], 1));
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffff, mx[h], 2));
    // m starts finite: a masked row cannot make NaN
    m_new[h] = next_max<COND_RESCALE>(m[h], fmaxf(m[h], mx[h] * qk_scale));
    // a row that kept its max has alpha exactly 1 (not ex2.approx(0)): O and l stay as they are
    alpha[h] = COND_RESCALE && m_new[h] == m[h] ? 1.f : exp2_approx(m[h] - m_new[h]);
    neg[h] = -m_new[h];
  }
  const bool moved = m_new[0] != m[0] || m_new[1] != m[1];
  m[0] = m_new[0];
  m[1] = m_new[1];
  float sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) {
    const int h = (i / 2) % 2;
    s[i] = exp2_approx(fmaf(s[i], qk_scale, neg[h]));
    sum[h] += s[i];
  }
  // l stays a per-thread partial sum (alpha is the same for the whole quad); the quad's four
  // partials are added once, in the epilogue.
#pragma unroll
  for (int h = 0; h < 2; ++h) l[h] = l[h] * alpha[h] + sum[h];  // one FFMA, alpha 1 or not
  return COND_RESCALE ? __any_sync(0xffffffff, moved) : true;
}

// O *= alpha, row by row: the running max moved, so the sum so far is rescaled (FA3 alg. 1).
template <int N>
__device__ __forceinline__ void rescale(float (&o)[N], const float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < N; ++i) o[i] *= alpha[(i / 2) % 2];
}

// P (fp32, accumulator layout) -> the A operand of P V in registers. For the k16 step kk the
// A fragment is {row g cols 2t.., row g+8 cols 2t.., row g cols 2t+8.., row g+8 cols 2t+8..},
// which is exactly accumulator columns 16kk..16kk+15: no data moves between threads.
template <bool BF16, int N>
__device__ __forceinline__ void pack(const float (&s)[N], uint32_t (&p)[N / 2]) {
#pragma unroll
  for (int i = 0; i < N / 2; ++i) p[i] = pack2<BF16>(s[2 * i], s[2 * i + 1]);
}

}  // namespace
