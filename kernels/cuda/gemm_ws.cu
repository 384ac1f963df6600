// gemm_ws.cu -- the CUDA C++ twin of kernels/gemm/ws.py: the cooperative warp-specialized,
// persistent GEMM (CUTLASS's "cooperative" schedule). One 128 x 256 output tile at a time per
// CTA; the shared pieces (producer, ring layout, tile order, host launch) are in gemm.cuh.
//
// Roles (384 threads = 3 warpgroups), as in sim/'s `ws` schedule:
//
//   warpgroup 0: the producer (gemm.cuh): produce(ring, it) for every k-step `it`.
//   warpgroups 1 and 2: the consumers. setmaxnreg.inc to 232; each owns 64 rows of the tile
//     (a 64 x 256 fp32 accumulator = 128 registers per thread). Per k-step: acquire(it); mma:
//     four async wgmma m64n256k16 from shared memory, commit, then wait until at most that
//     group is in flight, which means k-step it - 1's wgmmas have finished reading their slot;
//     release(it - 1). After the last k-step: wait for it, release it, epilogue: accumulators
//     -> input dtype -> a swizzled staging buffer -> TMA store, which runs while the next
//     tile's k-steps start.
//
// Shared memory (3 stages): ring 3 x (16 + 32) KiB + 2 x 32 KiB staging = 208 KiB.

#include "gemm.cuh"
#include "staging.cuh"
#include "twins.h"

namespace {

constexpr int CONSUMERS_BAR = 5;  // named barrier 5: both consumers (the `lockstep` ablation)

// A/B variants of the 3-stage kernel for the benchmark: which of the Gluon ws's differences
// a change is measured against (results/h200-cuda.json, the ablation rows).
//   NONE      the default: epilogue staged with 64 st.shared.b32 per thread; each consumer
//             warp arrives on `empty` on its own (count 8)
//   STSM      the epilogue staged with 16 stmatrix.x4 per thread, as the Gluon ws compiles
//             (-1.4 %, within the spread: the epilogue is not the gap)
//   LOCKSTEP  as the Gluon ws compiles: both consumer warpgroups bar.sync (256 threads) after
//             each k-step's wgmma wait, then one thread arrives on `empty` (count 1), so the two
//             never drift apart (+4.2 %)
//   L2_128    the default kernel, but TMA descriptors with Triton's L2 promotion (128 B, not
//             256 B): a host-side difference only (+0.6 %)
enum Ablation { NONE = 0, STSM = 1, LOCKSTEP = 2, L2_128 = 3 };

// The k-step's wgmmas on slot s: this warpgroup's 64 rows of A times the slot's 256 columns
// of B, then wait until only this group may still run (the previous k-step's is done).
template <bool BF16, int STAGES>
__device__ __forceinline__ void mma(float (&acc)[128], const Smem<256, STAGES>& sm, int s,
                                    int cw) {
  reg_fence(acc);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk)
    wgmma_m64n256k16_ss<BF16, 1>(acc, a_desc(sm.a_ring + s * A_BYTES, cw * 64, kk),
                                 b_desc(sm.b_ring + s * Smem<256, STAGES>::B_BYTES, kk), 1);
  wgmma_commit();
  reg_fence(acc);
  wgmma_wait<1>();
  reg_fence(acc);
}

// fp32 -> dtype -> swizzled staging -> TMA store (clipped at C's edges) of this consumer's 64
// rows. The store issued from this buffer for the previous tile must have read it first.
template <bool BF16, int ABLATION>
__device__ __forceinline__ void epilogue(const float (&acc)[128], uint8_t* my_c,
                                         const CUtensorMap* c_map, int cw, int pm, int pn) {
  constexpr int BN = 256;
  const int tid = threadIdx.x % 128;
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
      tma_store_2d(c_map, my_c + q * (64 * 128), pn * BN + q * 64, pm * BM + cw * 64);
    tma_store_commit();
  }
}

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
    if (tid == 0) producer(sm, &a_map, &b_map, tiles_m, tiles_n, k_steps);
    return;
  }
  // ------------------------------------------------------------------ consumers
  setmaxnreg_inc<CONSUMER_REGS>();
  const int cw = wg - 1;  // which 64 rows of the tile
  uint8_t* my_c = sm.staging + cw * (STAGING_BYTES / 2);
  auto release = [&](int j) {
    if constexpr (ABLATION == LOCKSTEP) {
      named_bar_sync(CONSUMERS_BAR, 256);
      if (threadIdx.x == 128) mbar_arrive(&sm.ring.empty[sm.ring.slot(j)]);
    } else {
      hopper::release(sm.ring, j);
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
      const int s = acquire(sm.ring, it);
      mma<BF16>(acc, sm, s, cw);
      if (ks > 0) release(it + STAGES - 1);  // = release(it - 1): ring.cuh
    }
    wgmma_wait<0>();  // the last k-step
    reg_fence(acc);
    release(it + STAGES - 1);
    epilogue<BF16, ABLATION>(acc, my_c, &c_map, cw, pm, pn);
  }
  if (tid == 0) tma_store_wait0();
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
