// ptx/smem.cuh -- shared-memory addresses and the two ways the epilogue writes shared memory.
#pragma once

#include <stdint.h>

namespace hopper {

// PTX wants the 32-bit offset in the shared window, not a generic pointer.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void st_shared_b32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

// stmatrix: one warp stores four 8x8 matrices of 16-bit elements. Register i of every lane
// holds two elements of matrix i, at row lane/4, columns 2(lane%4) and +1 -- exactly the
// fragment the wgmma accumulator already has after pack2 -- and lane 8i + r gives the shared
// address of row r of matrix i (16 contiguous bytes). One instruction moves 16 bytes a thread
// where st.shared.b32 moves 4: a quarter of the store instructions for the same bytes.
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2,
                                            uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
               ::"r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}

}  // namespace hopper
