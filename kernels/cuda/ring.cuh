// ring.cuh -- the protocol the producer and the consumers share, the same steps as sim/'s CTA
// and the Gluon kernels (kernels/ring.py): a ring of STAGES slots, each with a full/empty
// mbarrier pair, and the consumers' turns on the tensor cores.
//
//   producer:  produce(ring, j)   wait empty[slot], expect_tx on full[slot], TMA block j in
//   consumer:  acquire(ring, j)   wait full[slot]: block j has landed
//              release(ring, j)   arrive on empty[slot]: this warp is done reading block j
//              wait_turn(wg)      wait until it is this consumer's turn on the tensor cores
//              pass_turn(wg)      hand the turn to the other consumer
//
// Block j sits in slot j % STAGES, in that slot's (j / STAGES)-th use, so its phase parity is
// (j / STAGES) & 1. A fresh mbarrier counts as having completed the phase before phase 0: the
// producer's first lap waits on parity 1 and passes, the ring starts empty.
#pragma once

#include <stdint.h>

#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"

namespace hopper {

template <int STAGES>
struct Ring {
  uint64_t* full;   // [STAGES] the producer's expect_tx arrival + the bytes of the TMA loads
  uint64_t* empty;  // [STAGES] one arrival per consumer warp that reads the slot

  __device__ static int slot(int j) { return j % STAGES; }
  __device__ static uint32_t parity(int j) { return (j / STAGES) & 1; }

  // Thread 0 only; the caller fences the inits (mbar_fence_init) and syncs the CTA.
  __device__ void init(int s, uint32_t empty_arrivals) const {
    mbar_init(&full[s], 1);
    mbar_init(&empty[s], empty_arrivals);
  }
};

// Producer (one thread): wait until block j's slot is free, announce `bytes` on its full
// barrier, then `load(slot, full barrier)` issues the TMA copies that complete it.
template <int STAGES, typename Load>
__device__ __forceinline__ void produce(const Ring<STAGES>& ring, int j, uint32_t bytes,
                                        Load&& load) {
  const int s = ring.slot(j);
  mbar_wait(&ring.empty[s], ring.parity(j) ^ 1);
  mbar_arrive_expect_tx(&ring.full[s], bytes);
  load(s, &ring.full[s]);
}

// Consumer: wait until block j has landed; returns its slot.
template <int STAGES>
__device__ __forceinline__ int acquire(const Ring<STAGES>& ring, int j) {
  const int s = ring.slot(j);
  mbar_wait(&ring.full[s], ring.parity(j));
  return s;
}

// Consumer: block j's slot may be refilled as far as this warp is concerned (its wgmmas that
// read the slot have completed). One arrival per warp, from lane 0: empty counts warps.
// Only the slot matters here, not the phase, so the GEMMs release block it - 1 as
// release(ring, it + STAGES - 1): the same slot, with a dividend the compiler needs no
// negative-remainder fix-up for (the Gluon GEMMs call release(empty, it + STAGES - 1) too).
template <int STAGES>
__device__ __forceinline__ void release(const Ring<STAGES>& ring, int j) {
  if (threadIdx.x % 32 == 0) mbar_arrive(&ring.empty[ring.slot(j)]);
}

// Turns (FA3 §3.1's pingpong): consumer wg (0 or 1) issues its wgmmas only after bar.sync on
// its own named barrier TURN_BAR + wg, and passes the turn with bar.arrive on the other's;
// 256 threads = both consumer warpgroups meet at each. With three consumers (the attention at
// BM = 192) the turn goes round: wg passes to (wg + 1) % 3, and each barrier still meets 256
// threads, its owner's bar.sync and the one before it's bar.arrive (FA3 does the same). The Gluon kernels carry turns on
// mbarriers and wait on turn_parity(k, wg) = (k & 1) ^ (wg == 0); a named barrier has no phase
// to track, so the twins have no turn parity: every bar.sync is met by exactly one bar.arrive,
// which the kernels keep balanced (consumer 1 opens the first turn, the last one is not passed).
constexpr int TURN_BAR = 1;  // named barriers 1 and 2 (0 is __syncthreads)
constexpr int TURN_THREADS = 256;

__device__ __forceinline__ void wait_turn(int wg) { named_bar_sync(TURN_BAR + wg, TURN_THREADS); }
template <int CONSUMERS = 2>
__device__ __forceinline__ void pass_turn(int wg) {
  static_assert(CONSUMERS == 2 || CONSUMERS == 3, "turns for 2 or 3 consumers");
  named_bar_arrive(TURN_BAR + (CONSUMERS == 2 ? wg ^ 1 : (wg + 1) % CONSUMERS), TURN_THREADS);
}

}  // namespace hopper
