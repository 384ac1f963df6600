// attention_fa3.cu -- the CUDA C++ twin of kernels/attention/fa3.py: FlashAttention-3-style
// forward, O = softmax(Q K^T * scale) V and the row logsumexp, head dim 128, fp16/bf16.
//
// One CTA owns 128 rows of Q of one (batch, head); K and V come in blocks of 128 rows.
// Roles (384 threads = 3 warpgroups), as in sim/'s `fa3` schedule:
//
//   warpgroup 0: the producer. setmaxnreg.dec to 24; one thread loads Q once, then K_j and V_j
//     into rings of their own (FA3: K_j's slot frees as soon as Q K_j^T is done, while V_j is
//     still needed for P V_j), each slot a full/empty mbarrier pair, bytes announced by
//     expect_tx.
//   warpgroups 1 and 2: the consumers, 64 rows of Q each. setmaxnreg.inc to 240.
//
// Each consumer runs FA3's intra-warpgroup overlap (alg. 2): in iteration j it issues
// S = Q K_j^T and O += P_{j-1} V_{j-1} back to back (async wgmma), then waits only for S and
// runs the softmax of block j while P_{j-1} V_{j-1} is still on the tensor cores.
//
// Pingpong between the two consumers uses two named barriers ("turns"): a consumer issues its
// wgmmas only after bar.sync on its own turn barrier, and passes the turn with bar.arrive on
// the other's. So one consumer's GEMMs run while the other does its softmax (the exp2 unit and
// the tensor cores are busy at the same time). Consumer 1 opens the first turn for consumer 0
// and skips its own last hand-over, so every barrier ends with as many arrivals as waits.
//
// Scores are kept in base 2: qk = scale * log2(e), P = exp2(S qk - m), LSE = (m + log2 l) ln 2.
// Masking: columns past the sequence (and, causal, past the row) are -inf. Rows of Q past the
// sequence read zeros (TMA) and are not stored (the O store is clipped by its 3-D tensor map;
// the LSE store is predicated). A 3-D map (d, seq, batch*heads) means a box never reads the
// next head's rows.
//
// Shared memory (2 stages): Q 32 KiB + K ring 2 x 32 KiB + V ring 2 x 32 KiB = 160 KiB.

#include "hopper.cuh"
#include "twins.h"

namespace {

using namespace hopper;

constexpr int D = 128;                // head dim
constexpr int BM = 128;               // Q rows per CTA (2 consumers x 64)
constexpr int BN = 128;               // K/V rows per block
constexpr int CHUNK = 128 * 128;      // bytes of one 128-row x 64-column box (128-byte rows)
constexpr int Q_BYTES = BM * D * 2;   // 32 KiB: two column chunks of 128 rows
constexpr int KV_BYTES = BN * D * 2;  // 32 KiB per block of K or of V
constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;  // 128 x 24 + 256 x 240 = 64512
constexpr int EMPTY_ARRIVALS = 8;     // one per consumer warp
constexpr int TURN_BAR = 1;           // named barriers 1, 2: consumer c waits on TURN_BAR + c
constexpr int EPILOGUE_BAR = 3;       // named barriers 3, 4: one per consumer warpgroup
constexpr float LN2 = 0.6931471805599453f;

template <int STAGES>
constexpr int smem_bytes() {
  return 1024 + Q_BYTES + 2 * STAGES * KV_BYTES + (1 + 4 * STAGES) * 8;
}

// Online softmax of one 64 x 128 block of scores held in wgmma accumulator layout: s[4j+2h+e]
// is row (lane/4 + 8h) of this warp's 16, column 8j + 2(lane%4) + e. Masks, updates the running
// max m[h] and (thread-partial) sum l[h], turns s into P (fp32) and returns the rescale factor
// of each of the thread's two rows in alpha[h].
template <bool CAUSAL>
__device__ __forceinline__ void softmax_block(float (&s)[64], float (&m)[2], float (&l)[2],
                                              float (&alpha)[2], int j, int row0, int seqlen,
                                              float qk) {
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
    m_new[h] = fmaxf(m[h], mx[h] * qk);  // m starts finite: a fully masked row cannot make NaN
    alpha[h] = exp2_approx(m[h] - m_new[h]);
    neg[h] = -m_new[h];
    m[h] = m_new[h];
  }
  float sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    const int h = (i / 2) % 2;
    s[i] = exp2_approx(fmaf(s[i], qk, neg[h]));
    sum[h] += s[i];
  }
  // l stays a per-thread partial sum (alpha is the same for the whole quad); the quad's four
  // partials are added once, in the epilogue.
#pragma unroll
  for (int h = 0; h < 2; ++h) l[h] = l[h] * alpha[h] + sum[h];
}

// P (fp32, accumulator layout) -> the A operand of P V in registers. For the k16 step kk the
// A fragment is {row g cols 2t.., row g+8 cols 2t.., row g cols 2t+8.., row g+8 cols 2t+8..},
// which is exactly accumulator columns 16kk..16kk+15: no data moves between threads.
template <bool BF16>
__device__ __forceinline__ void to_operand(const float (&s)[64], uint32_t (&p)[32]) {
#pragma unroll
  for (int i = 0; i < 32; ++i) p[i] = pack2<BF16>(s[2 * i], s[2 * i + 1]);
}

template <bool BF16, bool CAUSAL, int STAGES>
__global__ void __launch_bounds__(384, 1)
    attention_fa3_kernel(const __grid_constant__ CUtensorMap q_map,
                         const __grid_constant__ CUtensorMap k_map,
                         const __grid_constant__ CUtensorMap v_map,
                         const __grid_constant__ CUtensorMap o_map, float* __restrict__ lse,
                         int seqlen, float qk) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* q_smem = smem;  // [chunk c of 64 columns][128 rows][128 bytes]
  uint8_t* k_ring = q_smem + Q_BYTES;
  uint8_t* v_ring = k_ring + STAGES * KV_BYTES;
  uint64_t* q_full = reinterpret_cast<uint64_t*>(v_ring + STAGES * KV_BYTES);
  uint64_t* k_full = q_full + 1;
  uint64_t* k_empty = k_full + STAGES;
  uint64_t* v_full = k_empty + STAGES;
  uint64_t* v_empty = v_full + STAGES;

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
      mbar_init(&k_full[s], 1);
      mbar_init(&k_empty[s], EMPTY_ARRIVALS);
      mbar_init(&v_full[s], 1);
      mbar_init(&v_empty[s], EMPTY_ARRIVALS);
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
      // Q: 2 column chunks x 2 consumers' 64 rows, one barrier for all four boxes.
      mbar_arrive_expect_tx(q_full, Q_BYTES);
#pragma unroll
      for (int c = 0; c < 2; ++c)
#pragma unroll
        for (int w = 0; w < 2; ++w)
          tma_load_3d(q_smem + c * CHUNK + w * (CHUNK / 2), &q_map, q_full, c * 64,
                      m0 + w * 64, bh);
      for (int j = 0; j < n_blocks; ++j) {
        const int s = j % STAGES;
        const uint32_t free_parity = ((j / STAGES) & 1) ^ 1;  // first lap passes
        mbar_wait(&k_empty[s], free_parity);
        mbar_arrive_expect_tx(&k_full[s], KV_BYTES);
#pragma unroll
        for (int c = 0; c < 2; ++c)
          tma_load_3d(k_ring + s * KV_BYTES + c * CHUNK, &k_map, &k_full[s], c * 64, j * BN, bh);
        mbar_wait(&v_empty[s], free_parity);
        mbar_arrive_expect_tx(&v_full[s], KV_BYTES);
#pragma unroll
        for (int c = 0; c < 2; ++c)
          tma_load_3d(v_ring + s * KV_BYTES + c * CHUNK, &v_map, &v_full[s], c * 64, j * BN, bh);
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

  // S = Q K_j^T: both operands K-major (d contiguous), 8 k16 steps over d, crossing from the
  // first 64-column chunk into the second after four.
  auto issue_qk = [&](float (&s)[64], int slot) {
    const uint8_t* k_tile = k_ring + slot * KV_BYTES;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const int off = (kk / 4) * CHUNK + (kk % 4) * 32;
      wgmma_m64n128k16_ss<BF16, 0>(s, smem_desc(my_q + off, 16, 1024),
                                   smem_desc(k_tile + off, 16, 1024), kk > 0);
    }
  };
  // O += P V_j: P from registers, V N-major (d contiguous): a k16 step is 16 rows = 2048
  // bytes; its two 64-column chunks lie CHUNK apart (LBO).
  auto issue_pv = [&](float (&o)[64], const uint32_t (&p)[32], int slot) {
    const uint8_t* v_tile = v_ring + slot * KV_BYTES;
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      const uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
      wgmma_m64n128k16_rs<BF16, 1>(o, a, smem_desc(v_tile + kk * 2048, CHUNK, 1024), 1);
    }
  };
  auto rescale = [&](float (&o)[64], const float (&alpha)[2]) {
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] *= alpha[(i / 2) % 2];
  };
  auto release = [&](uint64_t* bar) {
    if (lane == 0) mbar_arrive(bar);
  };
  auto wait_turn = [&]() { named_bar_sync(TURN_BAR + cw, 256); };
  auto pass_turn = [&]() { named_bar_arrive(TURN_BAR + (cw ^ 1), 256); };

  float o[64], s[64], m[2] = {-1.0e30f, -1.0e30f}, l[2] = {0.f, 0.f}, alpha[2];
  uint32_t p[32];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.f;

  if (cw == 1) pass_turn();  // consumer 0 goes first
  mbar_wait(q_full, 0);

  // Block 0: S_0 = Q K_0^T alone (no P V yet), then its softmax.
  mbar_wait(&k_full[0], 0);
  wait_turn();
  wgmma_fence();
  issue_qk(s, 0);
  wgmma_commit();
  if (!(cw == 1 && n_blocks == 1)) pass_turn();
  wgmma_wait<0>();
  reg_fence(s);
  release(&k_empty[0]);
  softmax_block<CAUSAL>(s, m, l, alpha, 0, row0, seqlen, qk);
  to_operand<BF16>(s, p);

  for (int j = 1; j < n_blocks; ++j) {
    const int sk = j % STAGES, sv = (j - 1) % STAGES;
    mbar_wait(&k_full[sk], (j / STAGES) & 1);
    mbar_wait(&v_full[sv], ((j - 1) / STAGES) & 1);
    wait_turn();
    reg_fence(o);
    reg_fence(p);
    wgmma_fence();
    issue_qk(s, sk);  // S_j = Q K_j^T
    wgmma_commit();
    issue_pv(o, p, sv);  // O += P_{j-1} V_{j-1}
    wgmma_commit();
    if (!(cw == 1 && j == n_blocks - 1)) pass_turn();
    wgmma_wait<1>();  // S_j is done; P_{j-1} V_{j-1} may still run
    reg_fence(s);
    release(&k_empty[sk]);
    softmax_block<CAUSAL>(s, m, l, alpha, j, row0, seqlen, qk);  // under P V on the tensor cores
    schedule_fence(lse, seqlen);  // or ptxas hoists the wait above the softmax
    wgmma_wait<0>();
    reg_fence(o);
    reg_fence(p);  // p stays live until here: the wgmma read it from registers
    release(&v_empty[sv]);
    rescale(o, alpha);
    to_operand<BF16>(s, p);
  }
  // The last P V.
  {
    const int sv = (n_blocks - 1) % STAGES;
    mbar_wait(&v_full[sv], ((n_blocks - 1) / STAGES) & 1);
    reg_fence(o);
    reg_fence(p);
    wgmma_fence();
    issue_pv(o, p, sv);
    wgmma_commit();
    wgmma_wait<0>();
    reg_fence(o);
    reg_fence(p);
    release(&v_empty[sv]);
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
const char* launch(const CUtensorMap* maps, float* lse, int BH, int S, float qk,
                   cudaStream_t stream) {
  constexpr int STAGES = 2;
  auto kernel = attention_fa3_kernel<BF16, CAUSAL, STAGES>;
  constexpr int smem = smem_bytes<STAGES>();
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
      cudaSuccess)
    return "cudaFuncSetAttribute(max dynamic shared memory) failed";
  const dim3 grid((S + BM - 1) / BM, BH);
  kernel<<<grid, 384, smem, stream>>>(maps[0], maps[1], maps[2], maps[3], lse, S, qk);
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
  const float qk = scale * 1.4426950408889634f;
  if (bf16)
    return causal ? launch<true, true>(maps, lse, BH, S, qk, stream)
                  : launch<true, false>(maps, lse, BH, S, qk, stream);
  return causal ? launch<false, true>(maps, lse, BH, S, qk, stream)
                : launch<false, false>(maps, lse, BH, S, qk, stream);
}
