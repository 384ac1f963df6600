// staging.cuh -- the epilogue's staging of an accumulator: a warpgroup's 64 x N fp32 wgmma
// accumulator, converted to the element type and written into shared memory exactly as a TMA
// box with 128-byte swizzle lays it out, so a TMA store (ptx/tma.cuh) writes it to global.
#pragma once

#include <stdint.h>

#include "ptx/math.cuh"
#include "ptx/smem.cuh"

namespace hopper {

// Layout, both versions: acc[4j + 2h + e] is row warp*16 + lane/4 + 8h, column 8j + 2(lane%4)
// + e (the wgmma accumulator). Column chunk c (64 columns) goes to base + c * chunk_bytes, row
// r to r * 128 bytes, and the row's 16-byte unit u to position u ^ (r % 8).
//
// With stmatrix (what the Gluon kernels compile to; the `stsm` ablation of the ws GEMM): for
// each pair of 8-column blocks j, j + 1 the four 8x8 matrices (j, rows +0..7), (j, rows
// +8..15), (j+1, +0..7), (j+1, +8..15) of the warp's 16 rows go out in one instruction: N / 16
// stmatrix per thread (16 for N = 256). A matrix's 8 rows land in 8 different 16-byte units
// (the swizzle), so no bank conflicts.
template <bool BF16, int N>
__device__ __forceinline__ void stage_accumulator(const float (&acc)[N / 2], uint32_t base,
                                                  uint32_t chunk_bytes) {
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int m = lane / 8, rr = lane % 8;       // the matrix and the row this lane addresses
  const int r = warp * 16 + 8 * (m % 2) + rr;  // ... as a row of the warpgroup's 64 (r%8 == rr)
#pragma unroll
  for (int j = 0; j < N / 8; j += 2) {
    const int jj = j + m / 2;  // this lane's matrix's 8-column block (j and j+1 share a chunk)
    const uint32_t addr = base + (jj / 8) * chunk_bytes + r * 128 + (((jj % 8) ^ rr) << 4);
    stmatrix_x4(addr, pack2<BF16>(acc[4 * j + 0], acc[4 * j + 1]),
                pack2<BF16>(acc[4 * j + 2], acc[4 * j + 3]),
                pack2<BF16>(acc[4 * j + 4], acc[4 * j + 5]),
                pack2<BF16>(acc[4 * j + 6], acc[4 * j + 7]));
  }
}

// The same staging with one st.shared.b32 per pair of elements (N / 4 per thread: 64 for
// N = 256): the default of every twin, the version results/h200-cuda.json measures. stmatrix
// did not pay in the GEMM (its ablation row there is within the spread), and the attention
// stages once per 128-row block, after all its K/V blocks. A warp's 8 rows hit 8 different
// units here too, so the stores have no bank conflicts either.
template <bool BF16, int N>
__device__ __forceinline__ void stage_accumulator_sts(const float (&acc)[N / 2], uint32_t base,
                                                      uint32_t chunk_bytes) {
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < N / 8; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = warp * 16 + lane / 4 + 8 * h;
      const uint32_t addr =
          base + (j / 8) * chunk_bytes + r * 128 + (((j % 8) ^ (r % 8)) << 4) + (lane % 4) * 4;
      st_shared_b32(addr, pack2<BF16>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]));
    }
  }
}

}  // namespace hopper
