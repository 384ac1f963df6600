// ptx/sync.cuh -- registers per role (setmaxnreg) and named barriers (bar.sync / bar.arrive).
#pragma once

namespace hopper {

// Both take effect for the whole warpgroup; they need a register cap at kernel entry
// (__launch_bounds__(threads, 1)), or ptxas drops them (warning C7508).
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

// Named barriers (16 per CTA; id 0 is __syncthreads). bar.sync waits for `count` threads
// (its own warp's included); bar.arrive counts its warp in and goes on at once. Together they
// are a one-way signal: the pingpong turns (ring.cuh).
__device__ __forceinline__ void named_bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

}  // namespace hopper
