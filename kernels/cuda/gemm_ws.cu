// gemm_ws.cu -- the CUDA C++ twin of kernels/gemm/ws.py: warp-specialized, persistent GEMM.
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

#include "hopper.cuh"
#include "twins.h"

namespace {

using namespace hopper;

constexpr int BM = 128, BN = 256, BK = 64;
constexpr int A_BYTES = BM * BK * 2;       // 16 KiB: one box of 128 rows x 128 bytes
constexpr int B_BOX_BYTES = BK * 64 * 2;   // 8 KiB: 64 k-rows x 64 columns
constexpr int B_BYTES = 4 * B_BOX_BYTES;   // 32 KiB
constexpr int C_BYTES = 64 * BN * 2;       // 32 KiB per consumer warpgroup
constexpr int GROUP_M = 8;                 // tile order: 8 row blocks walk the columns together
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
constexpr int EMPTY_ARRIVALS = 8;          // one per consumer warp (2 warpgroups x 4)
constexpr int EPILOGUE_BAR = 2;            // named barriers 2, 3: one per consumer warpgroup

template <int STAGES>
constexpr int smem_bytes() {
  return 1024 /* alignment slack */ + STAGES * (A_BYTES + B_BYTES) + 2 * C_BYTES +
         2 * STAGES * 8;
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

template <bool BF16, int STAGES>
__global__ void __launch_bounds__(384, 1)
    gemm_ws_kernel(const __grid_constant__ CUtensorMap a_map,
                   const __grid_constant__ CUtensorMap b_map,
                   const __grid_constant__ CUtensorMap c_map, int M, int N, int K) {
  extern __shared__ uint8_t smem_raw[];
  // 128-byte swizzle atoms are 1024 bytes: every tile base must sit on a 1024-byte boundary.
  uint8_t* smem = reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* a_ring = smem;
  uint8_t* b_ring = a_ring + STAGES * A_BYTES;
  uint8_t* c_stage = b_ring + STAGES * B_BYTES;
  uint64_t* full = reinterpret_cast<uint64_t*>(c_stage + 2 * C_BYTES);
  uint64_t* empty = full + STAGES;

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;  // thread within its warpgroup
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);                // the producer's arrive.expect_tx
      mbar_init(&empty[s], EMPTY_ARRIVALS);  // every consumer warp hands the slot back
    }
    mbar_fence_init();
  }
  __syncthreads();

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int tiles = tiles_m * tiles_n;
  const int k_steps = (K + BK - 1) / BK;

  if (wg == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid == 0) {
      tma_prefetch_map(&a_map);
      tma_prefetch_map(&b_map);
      int it = 0;  // ring position, counted over all of this CTA's tiles
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        int pm, pn;
        tile_coords(tile, tiles_m, tiles_n, pm, pn);
        for (int ks = 0; ks < k_steps; ++ks, ++it) {
          const int s = it % STAGES;
          // Slot s is in its (it / STAGES)-th use. A fresh barrier counts as having completed
          // the phase before phase 0, so the first lap (parity 1) does not wait.
          mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
          mbar_arrive_expect_tx(&full[s], A_BYTES + B_BYTES);
          tma_load_2d(a_ring + s * A_BYTES, &a_map, &full[s], ks * BK, pm * BM);
#pragma unroll
          for (int q = 0; q < 4; ++q)
            tma_load_2d(b_ring + s * B_BYTES + q * B_BOX_BYTES, &b_map, &full[s],
                        pn * BN + q * 64, ks * BK);
        }
      }
    }
  } else {
    // ---------------------------------------------------------------- consumers
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;  // which 64 rows of the tile
    const int warp = tid / 32, lane = tid % 32;
    uint8_t* my_c = c_stage + cw * C_BYTES;
    float acc[128];
    int it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int pm, pn;
      tile_coords(tile, tiles_m, tiles_n, pm, pn);
#pragma unroll
      for (int i = 0; i < 128; ++i) acc[i] = 0.f;
      for (int ks = 0; ks < k_steps; ++ks, ++it) {
        const int s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        reg_fence(acc);
        wgmma_fence();
        const uint8_t* a_tile = a_ring + s * A_BYTES + cw * (64 * 128);
        const uint8_t* b_tile = b_ring + s * B_BYTES;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
          // A is K-major: a k16 step is 32 bytes along the swizzled row. B is N-major: a k16
          // step is 16 rows of 128 bytes; its 64-column boxes lie B_BOX_BYTES apart (LBO).
          const uint64_t ad = smem_desc(a_tile + kk * 32, 16, 1024);
          const uint64_t bd = smem_desc(b_tile + kk * 2048, B_BOX_BYTES, 1024);
          wgmma_m64n256k16_ss<BF16, 1>(acc, ad, bd, 1);
        }
        wgmma_commit();
        reg_fence(acc);
        wgmma_wait<1>();  // only this k-step's group may still run: the previous one is done
        reg_fence(acc);
        if (ks > 0 && lane == 0) mbar_arrive(&empty[(it + STAGES - 1) % STAGES]);
      }
      wgmma_wait<0>();
      reg_fence(acc);
      if (lane == 0) mbar_arrive(&empty[(it + STAGES - 1) % STAGES]);

      // ---- epilogue: fp32 -> dtype -> swizzled staging -> TMA store (clipped at C's edges).
      // The store issued from this buffer for the previous tile must have read it first.
      if (tid == 0) tma_store_wait_read0();
      named_bar_sync(EPILOGUE_BAR + cw, 128);
      // Accumulator layout (wgmma m64nN): acc[4j + 2h + e] is row warp*16 + lane/4 + 8h,
      // column 8j + 2(lane%4) + e. The staging buffer is four 64 x 64 boxes laid out as TMA
      // writes them with 128-byte swizzle: the 16-byte unit u of row r sits at unit u ^ (r%8).
      // A warp's 8 rows then hit 8 different units: no bank conflicts.
      const uint32_t base = smem_u32(my_c);
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = warp * 16 + lane / 4 + 8 * h;
          const uint32_t addr = base + (j / 8) * (64 * 128) + r * 128 +
                                (((j % 8) ^ (r % 8)) << 4) + (lane % 4) * 4;
          st_shared_b32(addr, pack2<BF16>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]));
        }
      }
      fence_proxy_async_smem();  // generic-proxy writes -> visible to the TMA unit
      named_bar_sync(EPILOGUE_BAR + cw, 128);
      if (tid == 0) {
#pragma unroll
        for (int q = 0; q < 4; ++q)
          tma_store_2d(&c_map, my_c + q * (64 * 128), pn * BN + q * 64, pm * BM + cw * 64);
        tma_store_commit();
      }
    }
    if (tid == 0) tma_store_wait0();
  }
}

template <bool BF16, int STAGES>
const char* launch(const CUtensorMap& am, const CUtensorMap& bm, const CUtensorMap& cm, int M,
                   int N, int K, int num_sms, cudaStream_t stream) {
  auto kernel = gemm_ws_kernel<BF16, STAGES>;
  constexpr int smem = smem_bytes<STAGES>();
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
      cudaSuccess)
    return "cudaFuncSetAttribute(max dynamic shared memory) failed";
  const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  const int grid = tiles < num_sms ? tiles : num_sms;  // persistent: one CTA per SM at most
  kernel<<<grid, 384, smem, stream>>>(am, bm, cm, M, N, K);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace

const char* twin_gemm_ws(const void* a, const void* b, void* c, int M, int N, int K, bool bf16,
                         int stages, int num_sms, cudaStream_t stream) {
  CUtensorMap am, bm, cm;
  const uint64_t a_dims[2] = {uint64_t(K), uint64_t(M)};
  const uint64_t b_dims[2] = {uint64_t(N), uint64_t(K)};
  const uint64_t c_dims[2] = {uint64_t(N), uint64_t(M)};
  const uint32_t a_box[2] = {64, BM}, b_box[2] = {64, BK}, c_box[2] = {64, 64};
  if (make_map(&am, a, bf16, 2, a_dims, uint64_t(K) * 2, 0, a_box) != CUDA_SUCCESS ||
      make_map(&bm, b, bf16, 2, b_dims, uint64_t(N) * 2, 0, b_box) != CUDA_SUCCESS ||
      make_map(&cm, c, bf16, 2, c_dims, uint64_t(N) * 2, 0, c_box) != CUDA_SUCCESS)
    return "cuTensorMapEncodeTiled failed";
  if (stages == 2)
    return bf16 ? launch<true, 2>(am, bm, cm, M, N, K, num_sms, stream)
                : launch<false, 2>(am, bm, cm, M, N, K, num_sms, stream);
  if (stages == 3)
    return bf16 ? launch<true, 3>(am, bm, cm, M, N, K, num_sms, stream)
                : launch<false, 3>(am, bm, cm, M, N, K, num_sms, stream);
  return "stages must be 2 or 3";
}
