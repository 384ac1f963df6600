// attention_fa3.cu -- the CUDA C++ twin of kernels/attention/fa3.py: FlashAttention-3-style
// forward, O = softmax(Q K^T * scale) V and the row logsumexp, fp16/bf16. The consumer's steps
// (qk, softmax, rescale, pack, pv) are in attention.cuh, the ring and the turns in ring.cuh.
//
// The tile is a template parameter, Tile<D, BM, BN> (attention.cuh): one CTA owns BM rows of Q
// of one (batch, head), K and V come in blocks of BN rows. The instances (TILES below):
//
//   d 128, 128 x 128   the twin results/h200-cuda.json measures (cuda_fa3)
//   d 128, 128 x 176   FA3's own tile at d 128 (hopper/tile_size.h): 176 divides no power of
//                      two, so at S = 1024 the last block of every row is 144 keys of 176
//   d 256, 128 x 80    FA3's tile at d 256;  128 x 64: the Gluon fa3's (a power of two)
//   d 64,  192 x 128   FA3's tile at d 64 and the Gluon fa3's: 3 consumer warpgroups
//   d 64,  128 x 128   the Gluon fa3's tile when it runs persistent at d 64 (host.py SHORT_TILE)
//
// PERSISTENT (built at the tiles of persistent_built): min(SMs, tiles) CTAs, each walking its
// tiles in the Gluon persistent fa3's order (Schedule; causal: in pairs, which gives every CTA
// the same number of blocks). The producer waits on q_empty before it loads a tile's Q and
// counts ring positions on across tiles; the consumers wait on q_full at the tile count's
// parity, stage O in the Q buffer as the plain launch does and run without turns
// (consume_tiles says why). Off, none of it is compiled in: the plain instances' SASS is held
// to hashes by tests/kernels/test_cuda_persistent_compile.py.
//
// COND_RESCALE (off by default; built at d 128, both tiles): FA4's conditional rescaling
// (attention.cuh, RESCALE_THRESHOLD). A row keeps a stale running max while the new one stays
// within 2^8 of it, and a warp whose 16 rows all kept theirs skips O *= alpha (64 FMULs a thread
// at d 128, the block's last serial work before the next turn's wgmma issue).
//
// Described below at d 128, 128 x 128 (BM = 192: a third consumer, turns going round 0-1-2).
// Roles (384 threads = 3 warpgroups; 512 with 3 consumers), as in sim/'s `fa3` schedule:
//
//   warpgroup 0: the producer. setmaxnreg.dec to 24; one thread: load_q once, then per block
//     produce(k, j), produce(v, j): K and V in rings of their own, since K_j's slot frees as
//     soon as Q K_j^T is done while V_j is still needed for P V_j (FA3 §3.1).
//   warpgroups 1 and 2: the consumers, 64 rows of Q each. setmaxnreg.inc to 240 (3
//     consumers: 160, FA3's split of the 64K registers for 4 warpgroups).
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
// Shared memory (2 stages): Q 32 KiB + K ring 2 x 32 KiB + V ring 2 x 32 KiB = 160 KiB at
// 128 x 128; 32 + 4 x 44 = 208 KiB at 128 x 176; 64 + 4 x 40 = 224 KiB at d 256, 128 x 80
// (the largest: 230,472 bytes with the alignment slack and barriers, of 232,448); 24 + 4 x 16
// = 88 KiB at d 64, 192 x 128.

#include "attention.cuh"
#include "ring.cuh"
#include "staging.cuh"
#include "twins.h"

namespace {

constexpr int PRODUCER_REGS = 24;
// 128 x 24 + 256 x 240 = 64512; 3 consumers: 128 x 24 + 384 x 160 = 64512 (of 65536)
template <class T>
__host__ __device__ constexpr int consumer_regs() { return T::CONSUMERS == 2 ? 240 : 160; }

constexpr int SMEM_LIMIT = 227 * 1024;  // the opt-in maximum of dynamic shared memory per CTA

// The persistent launch adds one mbarrier after the rings' (q_empty: attention_fa3_kernel).
template <class T, int STAGES, bool PERSISTENT = false>
__host__ __device__ constexpr int smem_bytes() {
  return 1024 + T::Q_BYTES + 2 * STAGES * T::KV_BYTES + (1 + 4 * STAGES + PERSISTENT) * 8;
}

// Shared memory as the kernel lays it out: Q, the K ring, the V ring, then the barriers.
template <class T, int STAGES>
struct Smem {
  uint8_t* q;  // [chunk c of 64 columns][BM rows][128 bytes]
  uint8_t* k;  // [STAGES][KV_BYTES]
  uint8_t* v;
  uint64_t* q_full;
  Ring<STAGES> k_ring, v_ring;
  uint64_t* q_empty;  // persistent: every consumer is done with the Q buffer (after q_full's)
};

// K/V blocks of the Q tile at row m0: all of them, or (causal) those left of its last row.
template <class T, bool CAUSAL>
__device__ __forceinline__ int num_blocks(int m0, int seqlen) {
  return CAUSAL ? (min(seqlen, m0 + T::BM) + T::BN - 1) / T::BN : (seqlen + T::BN - 1) / T::BN;
}

// The persistent launch's tile order, the Gluon kernel's (kernels/attention/persistent.py:
// rounds, cta_tile, tile_coords), so both walk the same tiles in the same rounds. CTA p of P
// takes tile i * P + p in round i; not causal, a head's Q tiles are consecutive (the tiles in
// flight share few heads' K and V in L2). Causal ("pairs"): pair q = (i / 2) * P + p is one
// head's Q tiles n_m-1-k (round i even) and k (the next round), n_m + 1 blocks a pair at
// BM = BN, so every CTA has the same work; the middle tile of an odd n_m has no second round.
template <bool CAUSAL>
struct Schedule {
  int n_m;    // Q tiles a head
  int heads;  // batch * heads
  int ctas;   // P, the grid: min(SMs, tiles)

  __device__ int rounds() const {
    if (CAUSAL) return 2 * ((heads * ((n_m + 1) / 2) + ctas - 1) / ctas);
    return (n_m * heads + ctas - 1) / ctas;
  }
  // This CTA's tile of round i, (batch*head, Q tile) by reference; false if it has none.
  __device__ bool tile(int i, int& bh, int& pid_m) const {
    if (CAUSAL) {
      const int half = (n_m + 1) / 2;
      const int q = (i / 2) * ctas + blockIdx.x;
      bh = q / half;
      const int k = q - bh * half;
      pid_m = i % 2 == 0 ? n_m - 1 - k : k;
      return q < heads * half && (i % 2 == 0 || k < n_m - 1 - k);
    }
    const int t = i * ctas + blockIdx.x;
    bh = t / n_m;
    pid_m = t - bh * n_m;
    return t < n_m * heads;
  }
};

// Producer: the K and V blocks j0 ... n_blocks-1 of one tile, block j at ring position it + j
// (it: the blocks of the CTA's earlier tiles, so the ring's phases carry on across a persistent
// CTA's tiles).
template <class T, int STAGES>
__device__ __forceinline__ void produce_tile(const Smem<T, STAGES>& sm, const CUtensorMap* k_map,
                                             const CUtensorMap* v_map, int it, int j0,
                                             int n_blocks, int bh) {
  for (int j = j0; j < n_blocks; ++j) {
    produce(sm.k_ring, it + j, T::KV_BYTES, [&](int s, uint64_t* full) {
      load_block<T>(sm.k + s * T::KV_BYTES, k_map, full, j, bh);
    });
    produce(sm.v_ring, it + j, T::KV_BYTES, [&](int s, uint64_t* full) {
      load_block<T>(sm.v + s * T::KV_BYTES, v_map, full, j, bh);
    });
  }
}

// Producer, persistent: per tile of the Schedule, block 0's K and V (their slots come back as
// the consumers finish the last tile's blocks), then wait until every consumer has stored the
// last tile's O out of the Q buffer (q_empty at the tile count's parity; a fresh barrier passes
// parity 1), load Q, then the tile's other blocks, at ring positions counted on. Block 0 goes
// first because Q's buffer is freed late, after the O stores that are staged in it: so its
// K and V land under the epilogue.
template <class T, bool CAUSAL, int STAGES>
__device__ __forceinline__ void produce_tiles(const Smem<T, STAGES>& sm, const CUtensorMap* q_map,
                                              const CUtensorMap* k_map,
                                              const CUtensorMap* v_map, int seqlen, int heads) {
  const Schedule<CAUSAL> sched{(seqlen + T::BM - 1) / T::BM, heads, int(gridDim.x)};
  int it = 0, ti = 0;  // ring position of the tile's block 0; tiles so far
  for (int i = 0; i < sched.rounds(); ++i) {
    int bh, pid_m;
    if (!sched.tile(i, bh, pid_m)) continue;
    const int n_blocks = num_blocks<T, CAUSAL>(pid_m * T::BM, seqlen);
    produce_tile(sm, k_map, v_map, it, 0, 1, bh);
    mbar_wait(sm.q_empty, (ti & 1) ^ 1);
    load_q<T>(sm.q, q_map, sm.q_full, pid_m * T::BM, bh);
    produce_tile(sm, k_map, v_map, it, 1, n_blocks, bh);
    it += n_blocks;
    ++ti;
  }
}

// Consumer cw, one tile: wait for Q (q_full at parity q_phase), then the block loop over
// n_blocks blocks at ring positions it, it + 1, ... (FA3's intra-warpgroup overlap, the order
// at the top of this file), up to the last P V: O unnormalized, m and the partial l for the
// epilogue. TURNS: the pingpong, whose first turn the caller opens; the last consumer does not
// pass its last turn, so every bar.sync meets exactly one bar.arrive. Without TURNS a consumer
// issues its wgmmas as soon as its blocks are in.
template <class T, bool BF16, bool CAUSAL, bool COND_RESCALE, bool TURNS, int STAGES>
__device__ __forceinline__ void consume_tile(const Smem<T, STAGES>& sm, uint32_t q_phase, int it,
                                             int n_blocks, int cw, int row0, int seqlen,
                                             float qk_scale, float* lse, float (&o)[T::D / 2],
                                             float (&m)[2], float (&l)[2]) {
  constexpr int CONSUMERS = T::CONSUMERS, KV_BYTES = T::KV_BYTES;
  const Ring<STAGES>& k = sm.k_ring;
  const Ring<STAGES>& v = sm.v_ring;
  const uint8_t* my_q = sm.q + cw * (64 * 128);
  float s[T::BN / 2], alpha[2];
  uint32_t p[T::BN / 4];
  m[0] = m[1] = -1.0e30f;
  l[0] = l[1] = 0.f;
#pragma unroll
  for (int i = 0; i < T::D / 2; ++i) o[i] = 0.f;
  mbar_wait(sm.q_full, q_phase);

  // Block 0: S_0 = Q K_0^T alone (no P V yet), then its softmax.
  {
    const int sk = acquire(k, it);
    if (TURNS) wait_turn(cw);
    wgmma_fence();
    qk<T, BF16>(s, my_q, sm.k + sk * KV_BYTES);
    wgmma_commit();
    if (TURNS && !(cw == CONSUMERS - 1 && n_blocks == 1)) pass_turn<CONSUMERS>(cw);
    wgmma_wait<0>();
    reg_fence(s);
    release(k, it);
    // O is still 0: no rescale, whatever the vote
    softmax<T, CAUSAL, COND_RESCALE>(s, m, l, alpha, 0, row0, seqlen, qk_scale);
    pack<BF16>(s, p);
  }

  for (int j = 1; j < n_blocks; ++j) {
    const int sk = k.slot(it + j), sv = v.slot(it + j - 1);
    acquire(k, it + j);
    acquire(v, it + j - 1);
    if (TURNS) wait_turn(cw);
    reg_fence(o);
    reg_fence(p);
    wgmma_fence();
    qk<T, BF16>(s, my_q, sm.k + sk * KV_BYTES);  // S_j = Q K_j^T
    wgmma_commit();
    pv<T, BF16>(o, p, sm.v + sv * KV_BYTES);  // O += P_{j-1} V_{j-1}
    wgmma_commit();
    if (TURNS && !(cw == CONSUMERS - 1 && j == n_blocks - 1)) pass_turn<CONSUMERS>(cw);
    wgmma_wait<1>();  // S_j is done; P_{j-1} V_{j-1} may still run
    reg_fence(s);
    release(k, it + j);
    // under P V on the tensor cores
    const bool moved = softmax<T, CAUSAL, COND_RESCALE>(s, m, l, alpha, j, row0, seqlen, qk_scale);
    schedule_fence(lse, seqlen);  // or ptxas hoists the wait above the softmax
    wgmma_wait<0>();
    reg_fence(o);
    reg_fence(p);  // p stays live until here: the wgmma read it from registers
    release(v, it + j - 1);
    if (moved) rescale(o, alpha);  // warp-uniform; always taken without COND_RESCALE
    pack<BF16>(s, p);
  }
  // The last P V. It takes no turn, unlike the last block of the model (sim/attention/overlap.py)
  // and of the Gluon fa3 (kernels/attention/overlap.py), which wait for a turn, issue it, pass
  // the turn on and then wait for it: this twin passes a turn only after a Q K^T, so a tile
  // costs each consumer n_blocks hand-overs instead of n_blocks + 1, and its last P V shares
  // the tensor cores with whatever the other consumer issues. Taking that turn here is a
  // change to time on the H200 beside results/h200-cuda.json first; until then the twin is
  // what that file measured.
  {
    const int sv = acquire(v, it + n_blocks - 1);
    reg_fence(o);
    reg_fence(p);
    wgmma_fence();
    pv<T, BF16>(o, p, sm.v + sv * KV_BYTES);
    wgmma_commit();
    wgmma_wait<0>();
    reg_fence(o);
    reg_fence(p);
    release(v, it + n_blocks - 1);
  }
}

// Consumer cw's epilogue: O / l -> dtype -> its own 64 rows of the Q buffer (swizzled as TMA
// writes it) -> TMA store clipped at the sequence's end; LSE by predicated stores.
// PERSISTENT: the producer loads the next tile's Q into these rows once q_empty says so, so
// the thread that issued the store waits until the store has read them (its own bulk group)
// and then arrives; its warpgroup's writes came before the barrier in front of the store.
template <class T, bool BF16, bool PERSISTENT, int STAGES>
__device__ __forceinline__ void epilogue(const Smem<T, STAGES>& sm, const CUtensorMap* o_map,
                                         float* lse, float (&o)[T::D / 2], float (&m)[2],
                                         float (&l)[2], int cw, int lane, int row0, int m0,
                                         int bh, int seqlen) {
  constexpr int EPILOGUE_BAR = TURN_BAR + T::CONSUMERS;  // one per consumer, after the turns'
  const int tid = threadIdx.x % 128;
  uint8_t* my_q = sm.q + cw * (64 * 128);
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
  for (int i = 0; i < T::D / 2; ++i) o[i] *= inv[(i / 2) % 2];
  stage_accumulator_sts<BF16, T::D>(o, smem_u32(my_q), T::Q_CHUNK);
  fence_proxy_async_smem();
  named_bar_sync(EPILOGUE_BAR + cw, 128);
  if (tid == 0) {
#pragma unroll
    for (int c = 0; c < T::CHUNKS; ++c)
      tma_store_3d(o_map, my_q + c * T::Q_CHUNK, c * 64, m0 + cw * 64, bh);
    tma_store_commit();
    if constexpr (PERSISTENT) {
      tma_store_wait_read0();
      mbar_arrive(sm.q_empty);
    } else {
      tma_store_wait0();
    }
  }
}

// Consumer cw, persistent: the Schedule's tiles, ring positions and q_full's phase counted on
// across them. O is staged in the Q buffer as in the plain launch, not in a buffer of its own:
// at d 256 (128 x 80: 224 KiB of Q and rings) no 32 KiB more fit, and one epilogue for every
// instance is the simpler protocol; the price is that the next tile's Q loads only after both
// consumers' stores have read the buffer. No turns: with them the hand-overs would have to
// balance over all of a CTA's tiles; without, each consumer issues its wgmmas as soon as its
// blocks are in (the Gluon persistent fa3 at d 64 runs so by default, no_turns).
template <class T, bool BF16, bool CAUSAL, bool COND_RESCALE, int STAGES>
__device__ __forceinline__ void consume_tiles(const Smem<T, STAGES>& sm, const CUtensorMap* o_map,
                                              float* lse, int seqlen, float qk_scale, int heads,
                                              int cw, int warp, int lane) {
  const Schedule<CAUSAL> sched{(seqlen + T::BM - 1) / T::BM, heads, int(gridDim.x)};
  int it = 0, ti = 0;  // ring position of the tile's block 0; tiles so far
  for (int i = 0; i < sched.rounds(); ++i) {
    int bh, pid_m;
    if (!sched.tile(i, bh, pid_m)) continue;
    const int m0 = pid_m * T::BM;
    const int n_blocks = num_blocks<T, CAUSAL>(m0, seqlen);
    const int row0 = m0 + cw * 64 + warp * 16 + lane / 4;  // this thread's first row (+8)
    float o[T::D / 2], m[2], l[2];
    consume_tile<T, BF16, CAUSAL, COND_RESCALE, false>(sm, ti & 1, it, n_blocks, cw, row0,
                                                       seqlen, qk_scale, lse, o, m, l);
    epilogue<T, BF16, true>(sm, o_map, lse, o, m, l, cw, lane, row0, m0, bh, seqlen);
    it += n_blocks;
    ++ti;
  }
}

// PERSISTENT: a grid of min(SMs, tiles) CTAs (the host's), each walking the tiles of
// Schedule, with `heads` (batch * heads) to count them; the plain launch takes its tile from
// its place in the (Q tiles, batch * heads) grid and ignores `heads`.
template <int D, int BM, int BN, bool BF16, bool CAUSAL, int STAGES, bool COND_RESCALE,
          bool PERSISTENT>
__global__ void __launch_bounds__(Tile<D, BM, BN>::THREADS, 1)
    attention_fa3_kernel(const __grid_constant__ CUtensorMap q_map,
                         const __grid_constant__ CUtensorMap k_map,
                         const __grid_constant__ CUtensorMap v_map,
                         const __grid_constant__ CUtensorMap o_map, float* __restrict__ lse,
                         int seqlen, float qk_scale, int heads) {
  using T = Tile<D, BM, BN>;
  constexpr int CONSUMERS = T::CONSUMERS, Q_BYTES = T::Q_BYTES, KV_BYTES = T::KV_BYTES;
  constexpr int EMPTY_ARRIVALS = 4 * CONSUMERS;  // one per consumer warp
  static_assert(smem_bytes<T, STAGES, PERSISTENT>() <= SMEM_LIMIT, "shared memory");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* q_full = reinterpret_cast<uint64_t*>(smem + Q_BYTES + 2 * STAGES * KV_BYTES);
  const Smem<T, STAGES> sm{smem,
                           smem + Q_BYTES,
                           smem + Q_BYTES + STAGES * KV_BYTES,
                           q_full,
                           {q_full + 1, q_full + 1 + STAGES},
                           {q_full + 1 + 2 * STAGES, q_full + 1 + 3 * STAGES},
                           q_full + 1 + 4 * STAGES};

  // The plain launch's tile: one CTA per (Q tile, batch*head); causal, the longest rows (last Q
  // tiles) are launched first. (The persistent launch takes its tiles from Schedule.)
  const int bh = blockIdx.y;
  const int pid_m = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int m0 = pid_m * BM;
  const int n_blocks = num_blocks<T, CAUSAL>(m0, seqlen);

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    mbar_init(q_full, 1);
    if (PERSISTENT) mbar_init(sm.q_empty, CONSUMERS);  // one arrive per consumer warpgroup
    for (int s = 0; s < STAGES; ++s) {
      sm.k_ring.init(s, EMPTY_ARRIVALS);
      sm.v_ring.init(s, EMPTY_ARRIVALS);
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
      if constexpr (PERSISTENT) {
        produce_tiles<T, CAUSAL>(sm, &q_map, &k_map, &v_map, seqlen, heads);
      } else {
        load_q<T>(sm.q, &q_map, q_full, m0, bh);
        produce_tile(sm, &k_map, &v_map, 0, 0, n_blocks, bh);
      }
    }
    return;
  }

  // ------------------------------------------------------------------ consumers
  setmaxnreg_inc<consumer_regs<T>()>();
  const int cw = wg - 1;  // which 64 rows of the tile
  if constexpr (PERSISTENT) {
    consume_tiles<T, BF16, CAUSAL, COND_RESCALE>(sm, &o_map, lse, seqlen, qk_scale, heads, cw,
                                                 tid / 32, tid % 32);
  } else {
    const int warp = tid / 32, lane = tid % 32;
    const int row0 = m0 + cw * 64 + warp * 16 + lane / 4;  // this thread's first row (+8)
    float o[D / 2], m[2], l[2];
    // The last consumer opens the first turn, so consumer 0 goes first.
    if (cw == CONSUMERS - 1) pass_turn<CONSUMERS>(cw);
    consume_tile<T, BF16, CAUSAL, COND_RESCALE, true>(sm, 0, 0, n_blocks, cw, row0, seqlen,
                                                      qk_scale, lse, o, m, l);
    epilogue<T, BF16, false>(sm, &o_map, lse, o, m, l, cw, lane, row0, m0, bh, seqlen);
  }
}

template <int D, int BM, int BN, bool BF16, bool CAUSAL, bool COND_RESCALE, bool PERSISTENT>
const char* launch(const CUtensorMap* maps, float* lse, int BH, int S, float qk_scale, int sms,
                   cudaStream_t stream) {
  constexpr int STAGES = 2;
  auto kernel = attention_fa3_kernel<D, BM, BN, BF16, CAUSAL, STAGES, COND_RESCALE, PERSISTENT>;
  constexpr int smem = smem_bytes<Tile<D, BM, BN>, STAGES, PERSISTENT>();
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
      cudaSuccess)
    return "cudaFuncSetAttribute(max dynamic shared memory) failed";
  const int m_tiles = (S + BM - 1) / BM;
  // persistent: one CTA an SM, at most one a tile (kernels/attention/host.py's grid)
  const long long tiles = 1LL * m_tiles * BH;
  const dim3 grid = PERSISTENT ? dim3(unsigned(tiles < sms ? tiles : sms)) : dim3(m_tiles, BH);
  kernel<<<grid, Tile<D, BM, BN>::THREADS, smem, stream>>>(maps[0], maps[1], maps[2], maps[3],
                                                           lse, S, qk_scale, BH);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

template <int D, int BM, int BN, bool COND_RESCALE, bool PERSISTENT = false>
const char* launch_tile(const CUtensorMap* maps, float* lse, int BH, int S, float qk_scale,
                        bool causal, bool bf16, int sms, cudaStream_t stream) {
  constexpr bool C = COND_RESCALE, P = PERSISTENT;
  if (bf16)
    return causal ? launch<D, BM, BN, true, true, C, P>(maps, lse, BH, S, qk_scale, sms, stream)
                  : launch<D, BM, BN, true, false, C, P>(maps, lse, BH, S, qk_scale, sms, stream);
  return causal ? launch<D, BM, BN, false, true, C, P>(maps, lse, BH, S, qk_scale, sms, stream)
                : launch<D, BM, BN, false, false, C, P>(maps, lse, BH, S, qk_scale, sms, stream);
}

// The head dims the COND_RESCALE build exists at (kernels/cuda/__init__.py: COND_RESCALE_DIMS):
// d 128 only, so the library and the CPU tests compile 8 more kernels, not 20.
constexpr bool cond_rescale_built(int d) { return d == 128; }

// The tiles the PERSISTENT build exists at (kernels/cuda/__init__.py: PERSISTENT_TILES): the
// Gluon fa3's persistent tiles (d 64: 128 x 128, its SHORT_TILE) and FA3's, without
// conditional rescaling.
constexpr bool persistent_built(int d, int bm, int bn) {
  return (d == 64 && bm == 128 && bn == 128) || (d == 64 && bm == 192 && bn == 128) ||
         (d == 128 && bm == 128 && bn == 128) || (d == 256 && bm == 128 && (bn == 80 || bn == 64));
}

template <int D, int BM, int BN>
const char* launch_switched(const CUtensorMap* maps, float* lse, int BH, int S, float qk_scale,
                            bool causal, bool bf16, bool cond_rescale, bool persistent, int sms,
                            cudaStream_t stream) {
  if (!persistent && !cond_rescale)
    return launch_tile<D, BM, BN, false>(maps, lse, BH, S, qk_scale, causal, bf16, sms, stream);
  if (!persistent) {
    if constexpr (cond_rescale_built(D))
      return launch_tile<D, BM, BN, true>(maps, lse, BH, S, qk_scale, causal, bf16, sms, stream);
    return "conditional rescaling is built at head dim 128 only";
  }
  if (cond_rescale) return "conditional rescaling has no persistent build";
  if constexpr (persistent_built(D, BM, BN))
    return launch_tile<D, BM, BN, false, true>(maps, lse, BH, S, qk_scale, causal, bf16, sms,
                                               stream);
  return "no persistent build of this head dim and tile (kernels/cuda/__init__.py: "
         "PERSISTENT_TILES)";
}

}  // namespace

const char* twin_attention_fa3(const void* q, const void* k, const void* v, void* o, float* lse,
                               int BH, int S, int D, int block_m, int block_n, float scale,
                               bool causal, bool bf16, bool cond_rescale, bool persistent,
                               int num_sms, cudaStream_t stream) {
  // (d, seq, batch*heads): boxes of 64 columns (one 128-byte swizzle row) by 64 rows (Q, O:
  // one consumer's share) or block_n rows (K, V: one block).
  CUtensorMap maps[4];
  const uint64_t dims[3] = {uint64_t(D), uint64_t(S), uint64_t(BH)};
  const uint64_t row = uint64_t(D) * 2, plane = uint64_t(S) * D * 2;
  const uint32_t box_q[2] = {64, 64}, box_kv[2] = {64, uint32_t(block_n)};
  const void* ptrs[4] = {q, k, v, o};
  for (int i = 0; i < 4; ++i)
    if (make_map(&maps[i], ptrs[i], bf16, 3, dims, row, plane,
                 (i == 0 || i == 3) ? box_q : box_kv) != CUDA_SUCCESS)
      return "cuTensorMapEncodeTiled failed";
  if (persistent && num_sms < 1) return "num_sms must be positive";
  const float qk_scale = scale * 1.4426950408889634f;  // base 2: exp(x) = exp2(x log2 e)
  // The instances (kernels/cuda/__init__.py: ATTENTION_TILES, the same list).
#define TILE(d, bm, bn)                                                              \
  if (D == d && block_m == bm && block_n == bn)                                       \
    return launch_switched<d, bm, bn>(maps, lse, BH, S, qk_scale, causal, bf16,       \
                                      cond_rescale, persistent, num_sms, stream);
  TILE(128, 128, 128)
  TILE(128, 128, 176)
  TILE(256, 128, 64)
  TILE(256, 128, 80)
  TILE(64, 192, 128)
  TILE(64, 128, 128)
#undef TILE
  return "no instance of this head dim and tile (kernels/cuda/__init__.py: ATTENTION_TILES)";
}
