// gemm_ws_pingpong.cu -- the CUDA C++ twin of kernels/gemm/ws_pingpong.py (CUTLASS's
// "pingpong" schedule): the producer of gemm.cuh, but each consumer warpgroup owns a whole
// 128 x 128 tile (two m64n128 accumulators, 128 registers) and the CTA's tiles alternate
// between the two consumers. The Gluon pingpong uses 192 x 128 tiles; this twin keeps the
// 128 x 128 tile results/h200-cuda.json measures.
//
// Roles (384 threads = 3 warpgroups), as in sim/'s `ws_pingpong` schedule:
//
//   warpgroup 0: the producer (gemm.cuh), the tiles' k-steps in turn order: one ring serves
//     both consumers.
//   warpgroups 1 and 2: the consumers. Per tile: wait_turn; per k-step acquire(it), mma,
//     release(it - 1); once all of the tile's wgmmas are issued, pass_turn, so the other
//     consumer's k-loop queues behind them; then wait for the last k-step, release it and run
//     the epilogue under the other's wgmmas.
//
// Shared memory (4 stages): ring 4 x 32 KiB + 2 x 32 KiB staging = 192 KiB.

#include "gemm.cuh"
#include "staging.cuh"
#include "twins.h"

namespace {

// The k-step's wgmmas on slot s: both 64-row halves of my tile, then wait until only this
// group may still run (the previous k-step's is done).
template <bool BF16, int STAGES>
__device__ __forceinline__ void mma(float (&acc)[2][64], const Smem<128, STAGES>& sm, int s) {
  reg_fence(acc[0]);
  reg_fence(acc[1]);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      wgmma_m64n128k16_ss<BF16, 1>(acc[h], a_desc(sm.a_ring + s * A_BYTES, h * 64, kk),
                                   b_desc(sm.b_ring + s * Smem<128, STAGES>::B_BYTES, kk), 1);
  wgmma_commit();
  reg_fence(acc[0]);
  reg_fence(acc[1]);
  wgmma_wait<1>();
  reg_fence(acc[0]);
  reg_fence(acc[1]);
}

// fp32 -> dtype -> swizzled staging ([64-row half][64-column chunk]) -> TMA store of my tile.
// The store issued from this buffer for my previous tile must have read it first.
template <bool BF16>
__device__ __forceinline__ void epilogue(const float (&acc)[2][64], uint8_t* my_c,
                                         const CUtensorMap* c_map, int cw, int pm, int pn) {
  constexpr int BN = 128;
  const int tid = threadIdx.x % 128;
  if (tid == 0) tma_store_wait_read0();
  named_bar_sync(EPILOGUE_BAR + cw, 128);
#pragma unroll
  for (int h = 0; h < 2; ++h)
    stage_accumulator_sts<BF16, BN>(acc[h], smem_u32(my_c + h * (2 * 64 * 128)), 64 * 128);
  fence_proxy_async_smem();  // generic-proxy writes -> visible to the TMA unit
  named_bar_sync(EPILOGUE_BAR + cw, 128);
  if (tid == 0) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int q = 0; q < 2; ++q)
        tma_store_2d(c_map, my_c + (2 * h + q) * (64 * 128), pn * BN + q * 64, pm * BM + h * 64);
    tma_store_commit();
  }
}

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
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid == 0) producer(sm, &a_map, &b_map, tiles_m, tiles_n, k_steps);
    return;
  }
  // ------------------------------------------------------------------ consumers
  setmaxnreg_inc<CONSUMER_REGS>();
  const int cw = wg - 1;  // consumer cw takes this CTA's tiles cw, cw + 2, cw + 4, ...
  uint8_t* my_c = sm.staging + cw * (STAGING_BYTES / 2);
  // This CTA's tiles: blockIdx.x + t * gridDim.x for t < T (the grid is at most the tiles).
  const int T = (tiles_m * tiles_n - blockIdx.x + gridDim.x - 1) / gridDim.x;
  // Consumer 1 opens the first turn for consumer 0; after its tile t a consumer passes the
  // turn only if tile t + 1 exists, so every bar.sync meets exactly one bar.arrive.
  if (cw == 1) pass_turn(cw);
  float acc[2][64];  // rows 0-63 and 64-127 of my 128 x 128 tile
  for (int t = cw; t < T; t += 2) {
    int pm, pn;
    tile_coords(blockIdx.x + t * gridDim.x, tiles_m, tiles_n, pm, pn);
    int it = t * k_steps;  // ring position: the producer fills tiles in order
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[0][i] = acc[1][i] = 0.f;
    wait_turn(cw);  // my turn on the tensor cores
    for (int ks = 0; ks < k_steps; ++ks, ++it) {
      const int s = acquire(sm.ring, it);
      mma<BF16>(acc, sm, s);
      if (ks > 0) release(sm.ring, it + STAGES - 1);  // = release(it - 1): ring.cuh
    }
    // All of this tile's wgmmas are issued: the other consumer may start issuing its own
    // (they queue behind ours on the tensor cores) while we finish and store.
    if (t + 1 < T) pass_turn(cw);
    wgmma_wait<0>();  // the last k-step
    reg_fence(acc[0]);
    reg_fence(acc[1]);
    release(sm.ring, it + STAGES - 1);
    epilogue<BF16>(acc, my_c, &c_map, cw, pm, pn);
  }
  if (tid == 0) tma_store_wait0();
}

}  // namespace

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
