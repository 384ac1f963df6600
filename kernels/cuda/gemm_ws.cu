// gemm_ws.cu -- the CUDA C++ twins of kernels/gemm/ws.py and ws_pingpong.py: warp-specialized,
// persistent GEMMs (the cooperative `ws` kernel first, the `ws_pingpong` kernel after it).
//
//   C (M x N) = A (M x K) @ B (K x N), row-major, fp16/bf16 in, fp32 accumulate, C in the input
//   dtype. One 128 x 256 output tile at a time per CTA, k-steps of 64.
//
// Roles (384 threads = 3 warpgroups), as in sim/'s `ws` schedule:
//
//   warpgroup 0: the producer. setmaxnreg.dec to 40 registers; one thread walks this CTA's
//     tiles and k-steps and, for each, waits until ring slot s is empty, announces the bytes
//     on full[s] (expect_tx) and asks the TMA unit for the A box (128 x 64) and four B boxes
//     (64 x 64 each: a 128-byte swizzle row holds 64 halves, so 256 columns take four boxes).
//   warpgroups 1 and 2: the consumers. setmaxnreg.inc to 232; each owns 64 rows of the tile
//     (a 64 x 256 fp32 accumulator = 128 registers per thread). Per k-step: wait full[s],
//     four async wgmma m64n256k16 from shared memory, commit; wait until at most that group is
//     in flight, which means the previous k-step's wgmmas have finished reading their slot,
//     and hand that slot back (arrive on empty). Then the epilogue: accumulators -> input dtype
//     -> a swizzled staging buffer -> TMA store, which runs while the next tile's k-steps start.
//
// Registers: 128 x 40 + 256 x 232 = 64512 <= 65536. setmaxnreg only works with a register cap
// at entry: __launch_bounds__(384, 1) gives 168.
//
// Ragged edges cost nothing here: TMA reads zeros outside A and B (zeros add nothing to the
// dot products) and clips the store of C at its edges.
//
// Shared memory (3 stages): ring 3 x (16 + 32) KiB + 2 x 32 KiB staging = 208 KiB.
//
// `ws_pingpong` (CUTLASS's "pingpong"): the same producer, but each consumer warpgroup owns a
// whole 128 x 128 tile (two m64n128 accumulators, 128 registers) and the CTA's tiles alternate
// between them. The two take turns on the tensor cores with named barriers: a consumer issues
// its tile's wgmmas only after bar.sync on its own turn barrier, then passes the turn with
// bar.arrive on the other's, so one's epilogue runs under the other's wgmmas. Ring 4 x 32 KiB
// + 2 x 32 KiB staging = 192 KiB.

#include "hopper.cuh"
#include "twins.h"

namespace {

using namespace hopper;

constexpr int BM = 128, BK = 64;
constexpr int A_BYTES = BM * BK * 2;      // 16 KiB: one box of 128 rows x 128 bytes
constexpr int B_BOX_BYTES = BK * 64 * 2;  // 8 KiB: 64 k-rows x 64 columns
constexpr int STAGING_BYTES = 64 * 1024;  // epilogue staging, 32 KiB per consumer warpgroup
constexpr int GROUP_M = 8;                // tile order: 8 row blocks walk the columns together
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
constexpr int TURN_BAR = 1;      // named barriers 1, 2: pingpong consumer c waits on TURN_BAR + c
constexpr int EPILOGUE_BAR = 3;  // named barriers 3, 4: one per consumer warpgroup
constexpr int CONSUMERS_BAR = 5; // named barrier 5: both ws consumers (the `lockstep` ablation)

// ws ablations (run C2): which of the Gluon kernel's differences a change is measured against.
// The default is what run C1 measured on the H200 (epilogue: 64 st.shared.b32 per thread).
//   STSM      the epilogue staged with 16 stmatrix.x4 per thread, as the Gluon ws compiles
//             (run C2: -1.4 %, within the spread; the epilogue is not the gap)
//   LOCKSTEP  as the Gluon ws compiles: both consumer warpgroups bar.sync (256 threads) after
//             each k-step's wgmma wait, then one thread arrives on `empty` (count 1), so the two
//             never drift apart; by default each consumer warp arrives on its own (count 8)
//   L2_128    the default kernel, but TMA descriptors with Triton's L2 promotion (128 B, not
//             256 B): a host-side difference only
enum Ablation { NONE = 0, STSM = 1, LOCKSTEP = 2, L2_128 = 3 };

template <int TBN, int STAGES>
constexpr int smem_bytes() {
  return 1024 /* alignment slack */ + STAGES * (A_BYTES + (TBN / 64) * B_BOX_BYTES) +
         STAGING_BYTES + 2 * STAGES * 8;
}

// The tile_id-th output tile in grouped order (the same as kernels/gemm/common.py tile_coords):
// GROUP_M consecutive row blocks walk the columns together, so the B columns they share stay
// in L2.
__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int& pm,
                                            int& pn) {
  const int in_group = GROUP_M * tiles_n;
  const int first_m = (tile / in_group) * GROUP_M;
  const int rows = min(tiles_m - first_m, GROUP_M);
  pm = first_m + (tile % in_group) % rows;
  pn = (tile % in_group) / rows;
}

// Shared memory of both kernels: the ring (A slots, then B slots), the staging buffers, then
// the full/empty barriers. 128-byte swizzle atoms are 1024 bytes: every tile base sits on a
// 1024-byte boundary.
template <int TBN, int STAGES>
struct Smem {
  static constexpr int B_BYTES = (TBN / 64) * B_BOX_BYTES;
  uint8_t *a_ring, *b_ring, *staging;
  uint64_t *full, *empty;
  __device__ explicit Smem(uint8_t* raw) {
    a_ring = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) &
                                        ~uintptr_t(1023));
    b_ring = a_ring + STAGES * A_BYTES;
    staging = b_ring + STAGES * B_BYTES;
    full = reinterpret_cast<uint64_t*>(staging + STAGING_BYTES);
    empty = full + STAGES;
  }
  __device__ void init(int empty_arrivals) const {
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(&full[s], 1);                // the producer's arrive.expect_tx
        mbar_init(&empty[s], empty_arrivals);  // every consumer warp that read the slot
      }
      mbar_fence_init();
    }
    __syncthreads();
  }
};

// The producer (one thread): every k-step of every tile of this CTA, in order, into the ring.
// Slot s = it % STAGES is in its (it / STAGES)-th use; a fresh barrier counts as having
// completed the phase before phase 0, so the first lap (parity 1) does not wait.
template <int TBN, int STAGES>
__device__ __forceinline__ void produce(const Smem<TBN, STAGES>& sm, const CUtensorMap* a_map,
                                        const CUtensorMap* b_map, int tiles_m, int tiles_n,
                                        int k_steps) {
  tma_prefetch_map(a_map);
  tma_prefetch_map(b_map);
  int it = 0;
  for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
    int pm, pn;
    tile_coords(tile, tiles_m, tiles_n, pm, pn);
    for (int ks = 0; ks < k_steps; ++ks, ++it) {
      const int s = it % STAGES;
      mbar_wait(&sm.empty[s], ((it / STAGES) & 1) ^ 1);
      mbar_arrive_expect_tx(&sm.full[s], A_BYTES + Smem<TBN, STAGES>::B_BYTES);
      tma_load_2d(sm.a_ring + s * A_BYTES, a_map, &sm.full[s], ks * BK, pm * BM);
#pragma unroll
      for (int q = 0; q < TBN / 64; ++q)  // a 128-byte swizzle row holds 64 columns
        tma_load_2d(sm.b_ring + s * Smem<TBN, STAGES>::B_BYTES + q * B_BOX_BYTES, b_map,
                    &sm.full[s], pn * TBN + q * 64, ks * BK);
    }
  }
}

// wgmma operand descriptors of k16 step kk of a slot. A is K-major: a k16 step is 32 bytes
// along the swizzled row; `row_off` picks a warpgroup's 64 rows. B is N-major (the wgmma
// transpose bit): a k16 step is 16 rows of 128 bytes, and its 64-column boxes lie B_BOX_BYTES
// apart (the leading-dimension offset).
__device__ __forceinline__ uint64_t a_desc(const uint8_t* a_slot, int row_off, int kk) {
  return smem_desc(a_slot + row_off * 128 + kk * 32, 16, 1024);
}
__device__ __forceinline__ uint64_t b_desc(const uint8_t* b_slot, int kk) {
  return smem_desc(b_slot + kk * 2048, B_BOX_BYTES, 1024);
}

// ============================================================================== ws (cooperative)
template <bool BF16, int STAGES, int ABLATION>
__global__ void __launch_bounds__(384, 1)
    gemm_ws_kernel(const __grid_constant__ CUtensorMap a_map,
                   const __grid_constant__ CUtensorMap b_map,
                   const __grid_constant__ CUtensorMap c_map, int M, int N, int K) {
  constexpr int BN = 256;
  extern __shared__ uint8_t smem_raw[];
  const Smem<BN, STAGES> sm(smem_raw);
  // both consumers read every slot: one arrival per consumer warp (or one after a bar.sync)
  sm.init(ABLATION == LOCKSTEP ? 1 : 8);

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;  // thread within its warpgroup
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int k_steps = (K + BK - 1) / BK;

  if (wg == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid == 0) produce(sm, &a_map, &b_map, tiles_m, tiles_n, k_steps);
    return;
  }
  // ------------------------------------------------------------------ consumers
  setmaxnreg_inc<CONSUMER_REGS>();
  const int cw = wg - 1;  // which 64 rows of the tile
  const int lane = tid % 32;
  uint8_t* my_c = sm.staging + cw * (STAGING_BYTES / 2);
  // Hand a slot back once this warp's wgmmas have finished reading it.
  auto release = [&](uint64_t* empty) {
    if constexpr (ABLATION == LOCKSTEP) {
      named_bar_sync(CONSUMERS_BAR, 256);
      if (threadIdx.x == 128) mbar_arrive(empty);
    } else if (lane == 0) {
      mbar_arrive(empty);
    }
  };
  float acc[128];
  int it = 0;
  for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
    int pm, pn;
    tile_coords(tile, tiles_m, tiles_n, pm, pn);
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;
    for (int ks = 0; ks < k_steps; ++ks, ++it) {
      const int s = it % STAGES;
      mbar_wait(&sm.full[s], (it / STAGES) & 1);
      reg_fence(acc);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk)
        wgmma_m64n256k16_ss<BF16, 1>(acc, a_desc(sm.a_ring + s * A_BYTES, cw * 64, kk),
                                     b_desc(sm.b_ring + s * Smem<BN, STAGES>::B_BYTES, kk), 1);
      wgmma_commit();
      reg_fence(acc);
      wgmma_wait<1>();  // only this k-step's group may still run: the previous one is done
      reg_fence(acc);
      if (ks > 0) release(&sm.empty[(it + STAGES - 1) % STAGES]);
    }
    wgmma_wait<0>();
    reg_fence(acc);
    release(&sm.empty[(it + STAGES - 1) % STAGES]);

    // ---- epilogue: fp32 -> dtype -> swizzled staging -> TMA store (clipped at C's edges).
    // The store issued from this buffer for the previous tile must have read it first.
    if (tid == 0) tma_store_wait_read0();
    named_bar_sync(EPILOGUE_BAR + cw, 128);
    if constexpr (ABLATION == STSM)
      stage_accumulator<BF16, BN>(acc, smem_u32(my_c), 64 * 128);
    else
      stage_accumulator_sts<BF16, BN>(acc, smem_u32(my_c), 64 * 128);
    fence_proxy_async_smem();  // generic-proxy writes -> visible to the TMA unit
    named_bar_sync(EPILOGUE_BAR + cw, 128);
    if (tid == 0) {
#pragma unroll
      for (int q = 0; q < BN / 64; ++q)
        tma_store_2d(&c_map, my_c + q * (64 * 128), pn * BN + q * 64, pm * BM + cw * 64);
      tma_store_commit();
    }
  }
  if (tid == 0) tma_store_wait0();
}

// ============================================================================== ws_pingpong
template <bool BF16, int STAGES>
__global__ void __launch_bounds__(384, 1)
    gemm_ws_pingpong_kernel(const __grid_constant__ CUtensorMap a_map,
                            const __grid_constant__ CUtensorMap b_map,
                            const __grid_constant__ CUtensorMap c_map, int M, int N, int K) {
  constexpr int BN = 128;
  extern __shared__ uint8_t smem_raw[];
  const Smem<BN, STAGES> sm(smem_raw);
  sm.init(4);  // one consumer reads each slot: one arrival per warp of it

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int k_steps = (K + BK - 1) / BK;

  if (wg == 0) {
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid == 0) produce(sm, &a_map, &b_map, tiles_m, tiles_n, k_steps);
    return;
  }
  setmaxnreg_inc<CONSUMER_REGS>();
  const int cw = wg - 1;  // consumer cw takes this CTA's tiles cw, cw + 2, cw + 4, ...
  const int lane = tid % 32;
  uint8_t* my_c = sm.staging + cw * (STAGING_BYTES / 2);  // [64-row half][64-col chunk]
  // This CTA's tiles: blockIdx.x + t * gridDim.x for t < T (the grid is at most the tiles).
  const int T = (tiles_m * tiles_n - blockIdx.x + gridDim.x - 1) / gridDim.x;
  // Turns: consumer 1 opens the first one for consumer 0; after its tile t a consumer passes
  // the turn only if tile t + 1 exists, so every bar.sync meets exactly one bar.arrive.
  if (cw == 1) named_bar_arrive(TURN_BAR + 0, 256);
  float acc[2][64];  // rows 0-63 and 64-127 of my 128 x 128 tile
  for (int t = cw; t < T; t += 2) {
    int pm, pn;
    tile_coords(blockIdx.x + t * gridDim.x, tiles_m, tiles_n, pm, pn);
    int it = t * k_steps;  // ring position: the producer fills tiles in order
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[0][i] = acc[1][i] = 0.f;
    named_bar_sync(TURN_BAR + cw, 256);  // my turn on the tensor cores
    for (int ks = 0; ks < k_steps; ++ks, ++it) {
      const int s = it % STAGES;
      mbar_wait(&sm.full[s], (it / STAGES) & 1);
      reg_fence(acc[0]);
      reg_fence(acc[1]);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          wgmma_m64n128k16_ss<BF16, 1>(acc[h], a_desc(sm.a_ring + s * A_BYTES, h * 64, kk),
                                       b_desc(sm.b_ring + s * Smem<BN, STAGES>::B_BYTES, kk), 1);
      wgmma_commit();
      reg_fence(acc[0]);
      reg_fence(acc[1]);
      wgmma_wait<1>();
      reg_fence(acc[0]);
      reg_fence(acc[1]);
      if (ks > 0 && lane == 0) mbar_arrive(&sm.empty[(it + STAGES - 1) % STAGES]);
    }
    // All of this tile's wgmmas are issued: the other consumer may start issuing its own
    // (they queue behind ours on the tensor cores) while we finish and store.
    if (t + 1 < T) named_bar_arrive(TURN_BAR + (cw ^ 1), 256);
    wgmma_wait<0>();
    reg_fence(acc[0]);
    reg_fence(acc[1]);
    if (lane == 0) mbar_arrive(&sm.empty[(it + STAGES - 1) % STAGES]);

    if (tid == 0) tma_store_wait_read0();
    named_bar_sync(EPILOGUE_BAR + cw, 128);
#pragma unroll
    for (int h = 0; h < 2; ++h)
      stage_accumulator_sts<BF16, BN>(acc[h], smem_u32(my_c + h * (2 * 64 * 128)), 64 * 128);
    fence_proxy_async_smem();
    named_bar_sync(EPILOGUE_BAR + cw, 128);
    if (tid == 0) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int q = 0; q < 2; ++q)
          tma_store_2d(&c_map, my_c + (2 * h + q) * (64 * 128), pn * BN + q * 64,
                       pm * BM + h * 64);
      tma_store_commit();
    }
  }
  if (tid == 0) tma_store_wait0();
}

// ============================================================================== host
template <int TBN, int STAGES, typename Kernel>
const char* launch(Kernel kernel, const CUtensorMap* maps, int M, int N, int K, int num_sms,
                   cudaStream_t stream) {
  constexpr int smem = smem_bytes<TBN, STAGES>();
  static_assert(smem <= 227 * 1024, "shared memory per block");
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
      cudaSuccess)
    return "cudaFuncSetAttribute(max dynamic shared memory) failed";
  const int tiles = ((M + BM - 1) / BM) * ((N + TBN - 1) / TBN);
  const int grid = tiles < num_sms ? tiles : num_sms;  // persistent: one CTA per SM at most
  kernel<<<grid, 384, smem, stream>>>(maps[0], maps[1], maps[2], M, N, K);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

// A (M x K) in boxes of 64 x 128 rows, B (K x N) in 64 x 64 boxes, C (M x N) in 64 x 64 boxes.
const char* make_maps(CUtensorMap* maps, const void* a, const void* b, void* c, int M, int N,
                      int K, bool bf16,
                      CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
  const uint64_t a_dims[2] = {uint64_t(K), uint64_t(M)};
  const uint64_t b_dims[2] = {uint64_t(N), uint64_t(K)};
  const uint64_t c_dims[2] = {uint64_t(N), uint64_t(M)};
  const uint32_t a_box[2] = {64, BM}, b_box[2] = {64, BK}, c_box[2] = {64, 64};
  if (make_map(&maps[0], a, bf16, 2, a_dims, uint64_t(K) * 2, 0, a_box, l2) != CUDA_SUCCESS ||
      make_map(&maps[1], b, bf16, 2, b_dims, uint64_t(N) * 2, 0, b_box, l2) != CUDA_SUCCESS ||
      make_map(&maps[2], c, bf16, 2, c_dims, uint64_t(N) * 2, 0, c_box, l2) != CUDA_SUCCESS)
    return "cuTensorMapEncodeTiled failed";
  return nullptr;
}

}  // namespace

const char* twin_gemm_ws(const void* a, const void* b, void* c, int M, int N, int K, bool bf16,
                         int stages, int ablation, int num_sms, cudaStream_t stream) {
  CUtensorMap maps[3];
  if (const char* err = make_maps(maps, a, b, c, M, N, K, bf16,
                                  ablation == L2_128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                                     : CU_TENSOR_MAP_L2_PROMOTION_L2_256B))
    return err;
  if (stages == 2 && ablation == NONE)
    return bf16 ? launch<256, 2>(gemm_ws_kernel<true, 2, NONE>, maps, M, N, K, num_sms, stream)
                : launch<256, 2>(gemm_ws_kernel<false, 2, NONE>, maps, M, N, K, num_sms, stream);
  if (stages != 3) return "ws: stages must be 2 or 3 (the ablations: 3)";
  // the ablations exist for the 3-stage default only (run C2's A/B rows)
  if (ablation == NONE || ablation == L2_128)
    return bf16 ? launch<256, 3>(gemm_ws_kernel<true, 3, NONE>, maps, M, N, K, num_sms, stream)
                : launch<256, 3>(gemm_ws_kernel<false, 3, NONE>, maps, M, N, K, num_sms, stream);
  if (ablation == STSM)
    return bf16 ? launch<256, 3>(gemm_ws_kernel<true, 3, STSM>, maps, M, N, K, num_sms, stream)
                : launch<256, 3>(gemm_ws_kernel<false, 3, STSM>, maps, M, N, K, num_sms, stream);
  if (ablation == LOCKSTEP)
    return bf16 ? launch<256, 3>(gemm_ws_kernel<true, 3, LOCKSTEP>, maps, M, N, K, num_sms, stream)
                : launch<256, 3>(gemm_ws_kernel<false, 3, LOCKSTEP>, maps, M, N, K, num_sms,
                                 stream);
  return "ws: unknown ablation";
}

const char* twin_gemm_ws_pingpong(const void* a, const void* b, void* c, int M, int N, int K,
                                  bool bf16, int stages, int num_sms, cudaStream_t stream) {
  CUtensorMap maps[3];
  if (const char* err = make_maps(maps, a, b, c, M, N, K, bf16)) return err;
  if (stages == 4)
    return bf16 ? launch<128, 4>(gemm_ws_pingpong_kernel<true, 4>, maps, M, N, K, num_sms, stream)
                : launch<128, 4>(gemm_ws_pingpong_kernel<false, 4>, maps, M, N, K, num_sms,
                                 stream);
  if (stages == 5)
    return bf16 ? launch<128, 5>(gemm_ws_pingpong_kernel<true, 5>, maps, M, N, K, num_sms, stream)
                : launch<128, 5>(gemm_ws_pingpong_kernel<false, 5>, maps, M, N, K, num_sms,
                                 stream);
  return "ws_pingpong: stages must be 4 or 5";
}
