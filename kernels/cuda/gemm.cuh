// gemm.cuh -- what the two GEMM twins (gemm_ws.cu, gemm_ws_pingpong.cu) share: the tile
// constants, the shared-memory layout, the grouped tile order, the producer, the wgmma operand
// descriptors and the host launch.
//
//   C (M x N) = A (M x K) @ B (K x N), row-major, fp16/bf16 in, fp32 accumulate, C in the input
//   dtype. Output tiles of BM rows x TBN columns, k-steps of BK = 64.
//
// The producer (warpgroup 0, setmaxnreg.dec to 40 registers; one thread): for every k-step of
// every tile of this CTA, in order, produce(ring, it): wait until the slot is empty, announce
// the bytes on full[s] (expect_tx) and ask the TMA unit for the A box (128 x 64) and TBN / 64
// B boxes (64 x 64 each: a 128-byte swizzle row holds 64 halves).
//
// Ragged edges cost nothing: TMA reads zeros outside A and B (zeros add nothing to the dot
// products) and clips the store of C at its edges.
#pragma once

#include "hopper.cuh"
#include "ring.cuh"

namespace {

using namespace hopper;

constexpr int BM = 128, BK = 64;
constexpr int A_BYTES = BM * BK * 2;      // 16 KiB: one box of 128 rows x 128 bytes
constexpr int B_BOX_BYTES = BK * 64 * 2;  // 8 KiB: 64 k-rows x 64 columns
constexpr int STAGING_BYTES = 64 * 1024;  // epilogue staging, 32 KiB per consumer warpgroup
constexpr int GROUP_M = 8;                // tile order: 8 row blocks walk the columns together
// 128 x 40 + 256 x 232 = 64512 <= 65536. setmaxnreg needs a register cap at entry:
// __launch_bounds__(384, 1) gives 65536 / 384 = 170, rounded down to 168.
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
constexpr int EPILOGUE_BAR = 3;  // named barriers 3, 4: one per consumer warpgroup (1, 2: turns)

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
  Ring<STAGES> ring;
  __device__ explicit Smem(uint8_t* raw) {
    a_ring = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) &
                                        ~uintptr_t(1023));
    b_ring = a_ring + STAGES * A_BYTES;
    staging = b_ring + STAGES * B_BYTES;
    ring.full = reinterpret_cast<uint64_t*>(staging + STAGING_BYTES);
    ring.empty = ring.full + STAGES;
  }
  __device__ void init(int empty_arrivals) const {
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) ring.init(s, empty_arrivals);
      mbar_fence_init();
    }
    __syncthreads();
  }
};

// The producer (one thread): every k-step `it` of every tile of this CTA, in order.
template <int TBN, int STAGES>
__device__ __forceinline__ void producer(const Smem<TBN, STAGES>& sm, const CUtensorMap* a_map,
                                         const CUtensorMap* b_map, int tiles_m, int tiles_n,
                                         int k_steps) {
  tma_prefetch_map(a_map);
  tma_prefetch_map(b_map);
  int it = 0;
  for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
    int pm, pn;
    tile_coords(tile, tiles_m, tiles_n, pm, pn);
    for (int ks = 0; ks < k_steps; ++ks, ++it) {
      produce(sm.ring, it, A_BYTES + Smem<TBN, STAGES>::B_BYTES, [&](int s, uint64_t* full) {
        tma_load_2d(sm.a_ring + s * A_BYTES, a_map, full, ks * BK, pm * BM);
#pragma unroll
        for (int q = 0; q < TBN / 64; ++q)  // a 128-byte swizzle row holds 64 columns
          tma_load_2d(sm.b_ring + s * Smem<TBN, STAGES>::B_BYTES + q * B_BOX_BYTES, b_map, full,
                      pn * TBN + q * 64, ks * BK);
      });
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

// ================================================================================== host
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
inline const char* make_maps(CUtensorMap* maps, const void* a, const void* b, void* c, int M,
                             int N, int K, bool bf16,
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
