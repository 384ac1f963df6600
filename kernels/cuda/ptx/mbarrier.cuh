// ptx/mbarrier.cuh -- mbarrier (PTX ISA, "Parallel Synchronization and Communication
// Instructions: mbarrier"): a 64-bit shared-memory object with an arrival count, a transaction
// (byte) count and a phase bit. A phase completes when all expected arrivals came AND the
// expected bytes landed; waiting is on the parity of the phase to complete.
#pragma once

#include <stdint.h>

#include "smem.cuh"

namespace hopper {

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count));
}

// Make the inits visible to the other threads and to the async proxy (the TMA unit) before
// anyone uses the barriers; the caller follows it with __syncthreads().
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrival that also announces `bytes` of TMA traffic for the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}

// A plain arrival (release semantics: the caller's earlier shared-memory reads are done).
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];"
               ::"r"(smem_u32(bar)) : "memory");
}

// Spin until the phase with parity `parity` has completed. try_wait suspends the thread for a
// hardware-chosen time inside the instruction, so the loop does not hammer the barrier.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_u32(bar)), "r"(parity) : "memory");
}

}  // namespace hopper
