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

template <class T, int STAGES>
__host__ __device__ constexpr int smem_bytes() {
  return 1024 + T::Q_BYTES + 2 * STAGES * T::KV_BYTES + (1 + 4 * STAGES) * 8;
}

template <int D, int BM, int BN, bool BF16, bool CAUSAL, int STAGES, bool COND_RESCALE>
__global__ void __launch_bounds__(Tile<D, BM, BN>::THREADS, 1)
    attention_fa3_kernel(const __grid_constant__ CUtensorMap q_map,
                         const __grid_constant__ CUtensorMap k_map,
                         const __grid_constant__ CUtensorMap v_map,
                         const __grid_constant__ CUtensorMap o_map, float* __restrict__ lse,
                         int seqlen, float qk_scale) {
  using T = Tile<D, BM, BN>;
  constexpr int CONSUMERS = T::CONSUMERS, Q_BYTES = T::Q_BYTES, KV_BYTES = T::KV_BYTES;
  constexpr int EMPTY_ARRIVALS = 4 * CONSUMERS;       // one per consumer warp
  constexpr int EPILOGUE_BAR = TURN_BAR + CONSUMERS;  // one per consumer, after the turns'
  static_assert(smem_bytes<T, STAGES>() <= SMEM_LIMIT, "shared memory");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* q_smem = smem;  // [chunk c of 64 columns][BM rows][128 bytes]
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
      load_q<T>(q_smem, &q_map, q_full, m0, bh);
      for (int j = 0; j < n_blocks; ++j) {
        produce(k, j, KV_BYTES, [&](int s, uint64_t* full) {
          load_block<T>(k_smem + s * KV_BYTES, &k_map, full, j, bh);
        });
        produce(v, j, KV_BYTES, [&](int s, uint64_t* full) {
          load_block<T>(v_smem + s * KV_BYTES, &v_map, full, j, bh);
        });
      }
    }
    return;
  }

  // ------------------------------------------------------------------ consumers
  setmaxnreg_inc<consumer_regs<T>()>();
  const int cw = wg - 1;  // which 64 rows of the tile
  const int warp = tid / 32, lane = tid % 32;
  const int row0 = m0 + cw * 64 + warp * 16 + lane / 4;  // this thread's first row (+8: second)
  const uint8_t* my_q = q_smem + cw * (64 * 128);

  float o[D / 2], s[BN / 2], m[2] = {-1.0e30f, -1.0e30f}, l[2] = {0.f, 0.f}, alpha[2];
  uint32_t p[BN / 4];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.f;

  // The last consumer opens the first turn, so consumer 0 goes first; the last does not pass
  // its last turn, so every bar.sync meets exactly one bar.arrive.
  if (cw == CONSUMERS - 1) pass_turn<CONSUMERS>(cw);
  mbar_wait(q_full, 0);

  // Block 0: S_0 = Q K_0^T alone (no P V yet), then its softmax.
  {
    const int sk = acquire(k, 0);
    wait_turn(cw);
    wgmma_fence();
    qk<T, BF16>(s, my_q, k_smem + sk * KV_BYTES);
    wgmma_commit();
    if (!(cw == CONSUMERS - 1 && n_blocks == 1)) pass_turn<CONSUMERS>(cw);
    wgmma_wait<0>();
    reg_fence(s);
    release(k, 0);
    // O is still 0: no rescale, whatever the vote
    softmax<T, CAUSAL, COND_RESCALE>(s, m, l, alpha, 0, row0, seqlen, qk_scale);
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
    qk<T, BF16>(s, my_q, k_smem + sk * KV_BYTES);  // S_j = Q K_j^T
    wgmma_commit();
    pv<T, BF16>(o, p, v_smem + sv * KV_BYTES);  // O += P_{j-1} V_{j-1}
    wgmma_commit();
    if (!(cw == CONSUMERS - 1 && j == n_blocks - 1)) pass_turn<CONSUMERS>(cw);
    wgmma_wait<1>();  // S_j is done; P_{j-1} V_{j-1} may still run
    reg_fence(s);
    release(k, j);
    // under P V on the tensor cores
    const bool moved = softmax<T, CAUSAL, COND_RESCALE>(s, m, l, alpha, j, row0, seqlen, qk_scale);
    schedule_fence(lse, seqlen);  // or ptxas hoists the wait above the softmax
    wgmma_wait<0>();
    reg_fence(o);
    reg_fence(p);  // p stays live until here: the wgmma read it from registers
    release(v, j - 1);
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
    const int sv = acquire(v, n_blocks - 1);
    reg_fence(o);
    reg_fence(p);
    wgmma_fence();
    pv<T, BF16>(o, p, v_smem + sv * KV_BYTES);
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
  for (int i = 0; i < D / 2; ++i) o[i] *= inv[(i / 2) % 2];
  stage_accumulator_sts<BF16, D>(o, smem_u32(my_q), T::Q_CHUNK);
  fence_proxy_async_smem();
  named_bar_sync(EPILOGUE_BAR + cw, 128);
  if (tid == 0) {
#pragma unroll
    for (int c = 0; c < T::CHUNKS; ++c)
      tma_store_3d(&o_map, my_q + c * T::Q_CHUNK, c * 64, m0 + cw * 64, bh);
    tma_store_commit();
    tma_store_wait0();
  }
}

template <int D, int BM, int BN, bool BF16, bool CAUSAL, bool COND_RESCALE>
const char* launch(const CUtensorMap* maps, float* lse, int BH, int S, float qk_scale,
                   cudaStream_t stream) {
  constexpr int STAGES = 2;
  auto kernel = attention_fa3_kernel<D, BM, BN, BF16, CAUSAL, STAGES, COND_RESCALE>;
  constexpr int smem = smem_bytes<Tile<D, BM, BN>, STAGES>();
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
      cudaSuccess)
    return "cudaFuncSetAttribute(max dynamic shared memory) failed";
  const dim3 grid((S + BM - 1) / BM, BH);
  kernel<<<grid, Tile<D, BM, BN>::THREADS, smem, stream>>>(maps[0], maps[1], maps[2], maps[3],
                                                           lse, S, qk_scale);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

template <int D, int BM, int BN, bool COND_RESCALE>
const char* launch_tile(const CUtensorMap* maps, float* lse, int BH, int S, float qk_scale,
                        bool causal, bool bf16, cudaStream_t stream) {
  if (bf16)
    return causal
               ? launch<D, BM, BN, true, true, COND_RESCALE>(maps, lse, BH, S, qk_scale, stream)
               : launch<D, BM, BN, true, false, COND_RESCALE>(maps, lse, BH, S, qk_scale, stream);
  return causal
             ? launch<D, BM, BN, false, true, COND_RESCALE>(maps, lse, BH, S, qk_scale, stream)
             : launch<D, BM, BN, false, false, COND_RESCALE>(maps, lse, BH, S, qk_scale, stream);
}

// The head dims the COND_RESCALE build exists at (kernels/cuda/__init__.py: COND_RESCALE_DIMS):
// d 128 only, so the library and the CPU tests compile 8 more kernels, not 20.
constexpr bool cond_rescale_built(int d) { return d == 128; }

template <int D, int BM, int BN>
const char* launch_switched(const CUtensorMap* maps, float* lse, int BH, int S, float qk_scale,
                            bool causal, bool bf16, bool cond_rescale, cudaStream_t stream) {
  if (!cond_rescale)
    return launch_tile<D, BM, BN, false>(maps, lse, BH, S, qk_scale, causal, bf16, stream);
  if constexpr (cond_rescale_built(D))
    return launch_tile<D, BM, BN, true>(maps, lse, BH, S, qk_scale, causal, bf16, stream);
  return "conditional rescaling is built at head dim 128 only";
}

}  // namespace

const char* twin_attention_fa3(const void* q, const void* k, const void* v, void* o, float* lse,
                               int BH, int S, int D, int block_m, int block_n, float scale,
                               bool causal, bool bf16, bool cond_rescale, cudaStream_t stream) {
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
  const float qk_scale = scale * 1.4426950408889634f;  // base 2: exp(x) = exp2(x log2 e)
  // The instances (kernels/cuda/__init__.py: ATTENTION_TILES, the same list).
#define TILE(d, bm, bn)                                                           \
  if (D == d && block_m == bm && block_n == bn)                                    \
    return launch_switched<d, bm, bn>(maps, lse, BH, S, qk_scale, causal, bf16,    \
                                      cond_rescale, stream);
  TILE(128, 128, 128)
  TILE(128, 128, 176)
  TILE(256, 128, 64)
  TILE(256, 128, 80)
  TILE(64, 192, 128)
#undef TILE
  return "no instance of this head dim and tile (kernels/cuda/__init__.py: ATTENTION_TILES)";
}
