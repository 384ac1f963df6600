// ptx/schedule.cuh -- empty or never-taken asm that keeps the compiler's schedule where the
// kernels need it. No instruction of its own reaches the tensor cores or memory.
#pragma once

#include <stdint.h>

namespace hopper {

// Keep ptxas from moving code across this point: it does not reorder instructions across a
// read of %clock whose value is used, and the value goes to a store predicated on n < 0, which
// never runs (sequences are not empty) but keeps the read alive. Needed before the overlapped
// loop's wgmma_wait<0>: without it ptxas hoists that wait above the softmax (to pack P_j into
// the registers P_{j-1} V_{j-1} is still reading) and the softmax no longer runs under its own
// P V (FA3 §3.2). tests/kernels/test_cuda_compile.py checks the exps sit between the two waits
// in the SASS. The Gluon twin is schedule_fence in kernels/attention/steps.py.
__device__ __forceinline__ void schedule_fence(float* never_written, int n) {
  asm volatile(
      "{ .reg .u32 t; .reg .pred q; mov.u32 t, %%clock; setp.lt.s32 q, %1, 0; "
      "@q st.global.b32 [%0], t; }" ::"l"(never_written), "r"(n)
      : "memory");
}

// Tell the compiler a register is live and may change here: placed around wgmma issue and
// wait so it neither moves accumulator reads/writes across them nor copies the registers
// while the tensor core owns them.
__device__ __forceinline__ void reg_fence(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void reg_fence(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }
template <int N>
__device__ __forceinline__ void reg_fence(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) reg_fence(r[i]);
}
template <int N>
__device__ __forceinline__ void reg_fence(uint32_t (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) reg_fence(r[i]);
}

}  // namespace hopper
