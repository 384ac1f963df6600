// instruments/micro/pair.cu -- what a hand-off costs when it crosses from one SM to the other
// SM of a cluster of two (distributed shared memory), against the same hand-off inside one SM.
//
// A ping-pong on mbarriers, as instruments/micro/mbar.py's, between two single threads: ping
// sends, then waits for pong's reply; pong waits, then replies. `iters` round trips, %clock64
// around ping's loop. Each CTA owns two barriers (bars[0]: ping's inbox, bars[1]: pong's) of
// arrival count 1 and one 4-byte slot per barrier. Four ways to send (`Mode`):
//
//   LOCAL          ping and pong are warps 0 and 1 of CTA rank 0; the send is
//                  mbarrier.arrive.release.cta.shared::cta on the other's barrier (as the
//                  course's kernels hand off between warps);
//   CLUSTER_SELF   the same two warps, but the send is mbarrier.arrive.shared::cluster on the
//                  address that `mapa` gives for the CTA's own rank: the remote instruction, no
//                  crossing;
//   REMOTE_ARRIVE  ping is CTA rank 0, pong CTA rank 1 (warp 0 of each): the same arrive on
//                  the *peer's* barrier, mapa'd to the peer's rank -- one SM-to-SM crossing a
//                  hand-off;
//   REMOTE_STORE   the same pair, but the send is st.async of the iteration number into the
//                  peer's slot, completing 4 bytes of transaction on the peer's barrier (how a
//                  CTA pair passes data); the receiver arms its barrier for the next phase
//                  (arrive.expect_tx 4 bytes, its one arrival) before it replies, and checks the
//                  value it got.
//
// Per CTA the kernel writes [clock start, clock end, globaltimer start, end, smid, cluster rank,
// round trips done, wrong values] (int64 x STATS); the clocks are ping's (rank 0), the others
// -1. One CTA per SM (ONE_CTA_SMEM of dynamic shared memory), so a cluster's two CTAs sit on
// two SMs (the block scheduler keeps a cluster inside one GPC; the host reads from %smid which
// pairs of SMs it got).
#include <cuda_runtime.h>
#include <stdint.h>

#include "ptx/mbarrier.cuh"

namespace {

using hopper::mbar_fence_init;
using hopper::mbar_init;
using hopper::smem_u32;

enum Mode : int { LOCAL = 0, CLUSTER_SELF = 1, REMOTE_ARRIVE = 2, REMOTE_STORE = 3 };
constexpr int THREADS = 64;                 // two warps: ping and pong of the one-SM modes
constexpr int STATS = 8;
constexpr int ONE_CTA_SMEM = 128 * 1024;    // > half of an SM's 228 KiB: no second CTA fits

__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// The shared::cluster address of `addr` (this CTA's shared::cta offset) in CTA `rank`.
__device__ __forceinline__ uint32_t map_to(uint32_t addr, uint32_t rank) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(addr), "r"(rank));
  return out;
}

__device__ __forceinline__ void arrive_cta(uint32_t bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// An arrive on a shared::cluster address, as CUTLASS's ClusterBarrier::arrive(cta_id) and FA4's
// pair barriers issue it: release at CTA scope (the default). A .cluster-scope release would add
// a GPU-wide MEMBAR before every arrive (ptxas's SASS for sm_90a), which those kernels do not pay.
__device__ __forceinline__ void arrive_cluster(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void arm(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

// 4 bytes into the peer's shared memory; their arrival completes 4 bytes of transaction on the
// peer's barrier `bar` (both shared::cluster addresses).
__device__ __forceinline__ void store_async(uint32_t slot, uint32_t value, uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];"
               ::"r"(slot), "r"(value), "r"(bar) : "memory");
}

// Spin until phase `parity` of the CTA's own barrier completed (hopper::mbar_wait, on a 32-bit
// shared::cta address).
__device__ __forceinline__ void wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;"
               ::: "memory");
}

__device__ __forceinline__ int64_t clock64_now() {
  uint64_t c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
  return static_cast<int64_t>(c);
}

__device__ __forceinline__ int64_t globaltimer_now() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return static_cast<int64_t>(t);
}

__device__ __forceinline__ int64_t smid() {
  uint32_t s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

// One side of the ping-pong. `inbox`: this side's barrier (shared::cta); `slot`: its 4 bytes
// (shared::cta); `out_bar`, `out_slot`: the other side's, as the mode addresses them. Ping
// sends first; pong waits first. Returns the wrong values received (REMOTE_STORE).
template <int mode>
__device__ int64_t side(bool ping, uint32_t inbox, uint32_t slot, uint32_t out_bar,
                        uint32_t out_slot, int iters, int64_t* done) {
  int64_t wrong = 0, n = 0;
  for (int i = 0; i < iters; ++i) {
    if (!ping) {
      wait(inbox, i & 1);
      if (mode == REMOTE_STORE) {
        uint32_t got;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(got) : "r"(slot) : "memory");
        wrong += got != static_cast<uint32_t>(i);
        if (i + 1 < iters) arm(inbox, 4);           // the next phase, before the reply
      }
    }
    if (mode == LOCAL) arrive_cta(out_bar);
    if (mode == CLUSTER_SELF || mode == REMOTE_ARRIVE) arrive_cluster(out_bar);
    if (mode == REMOTE_STORE) store_async(out_slot, static_cast<uint32_t>(i), out_bar);
    if (ping) {
      wait(inbox, i & 1);
      if (mode == REMOTE_STORE) {
        uint32_t got;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(got) : "r"(slot) : "memory");
        wrong += got != static_cast<uint32_t>(i);
        if (i + 1 < iters) arm(inbox, 4);           // the next phase, before the next send
      }
    }
    ++n;
  }
  *done = n;
  return wrong;
}

template <int mode>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(THREADS, 1)
    sm_pair_kernel(int64_t* stats, int iters) {
  extern __shared__ __align__(16) uint8_t smem[];
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem);               // [0]: ping's, [1]: pong's
  uint32_t* slots = reinterpret_cast<uint32_t*>(smem + 2 * sizeof(uint64_t));
  const uint32_t rank = cluster_rank();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t* mine = stats + STATS * blockIdx.x;
  if (threadIdx.x == 0) {
    mbar_init(&bars[0], 1);
    mbar_init(&bars[1], 1);
    if (mode == REMOTE_STORE) {                      // phase 0 armed before anyone can send
      arm(smem_u32(&bars[0]), 4);
      arm(smem_u32(&bars[1]), 4);
    }
    mbar_fence_init();
    for (int k = 0; k < 4; ++k) mine[k] = -1;
    mine[4] = smid();
    mine[5] = rank;
    mine[6] = 0;
    mine[7] = 0;
  }
  __syncthreads();
  cluster_sync();                                    // the peer's barriers exist from here on

  const bool two_sms = mode == REMOTE_ARRIVE || mode == REMOTE_STORE;
  // who plays: the one-SM modes use warps 0 (ping) and 1 (pong) of rank 0; the pair modes
  // warp 0 of rank 0 (ping) and of rank 1 (pong)
  const bool plays = lane == 0 && (two_sms ? warp == 0 : (rank == 0 && warp < 2));
  if (plays) {
    const bool ping = two_sms ? rank == 0 : warp == 0;
    const uint32_t me = ping ? 0 : 1, other = 1 - me;
    const uint32_t peer = two_sms ? 1 - rank : rank;
    const uint32_t inbox = smem_u32(&bars[me]), slot = smem_u32(&slots[me]);
    const uint32_t out_bar =
        mode == LOCAL ? smem_u32(&bars[other]) : map_to(smem_u32(&bars[other]), peer);
    const uint32_t out_slot = mode == LOCAL ? 0u : map_to(smem_u32(&slots[other]), peer);
    const int64_t t0 = clock64_now(), g0 = globaltimer_now();
    int64_t done = 0;
    const int64_t wrong = side<mode>(ping, inbox, slot, out_bar, out_slot, iters, &done);
    const int64_t t1 = clock64_now(), g1 = globaltimer_now();
    if (ping) {
      mine[0] = t0;
      mine[1] = t1;
      mine[2] = g0;
      mine[3] = g1;
    }
    atomicAdd(reinterpret_cast<unsigned long long*>(&mine[6]), static_cast<unsigned long long>(done));
    atomicAdd(reinterpret_cast<unsigned long long*>(&mine[7]), static_cast<unsigned long long>(wrong));
  }
  __syncwarp();
  cluster_sync();                      // no CTA leaves while its peer may still reach into it
}

template <int mode>
cudaError_t launch(int64_t* stats, int iters, int clusters, cudaStream_t stream) {
  cudaError_t err = cudaFuncSetAttribute(sm_pair_kernel<mode>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, ONE_CTA_SMEM);
  if (err != cudaSuccess) return err;
  sm_pair_kernel<mode><<<2 * clusters, THREADS, ONE_CTA_SMEM, stream>>>(stats, iters);
  return cudaGetLastError();
}

}  // namespace

// `clusters` clusters of two CTAs, each running `iters` round trips of `mode` (Mode); stats:
// int64 [2·clusters][STATS]. Returns nullptr, or the CUDA error's text.
extern "C" const char* sm_pair_pingpong(int64_t* stats, int iters, int mode, int clusters,
                                        void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  cudaError_t err;
  switch (mode) {
    case LOCAL: err = launch<LOCAL>(stats, iters, clusters, s); break;
    case CLUSTER_SELF: err = launch<CLUSTER_SELF>(stats, iters, clusters, s); break;
    case REMOTE_ARRIVE: err = launch<REMOTE_ARRIVE>(stats, iters, clusters, s); break;
    case REMOTE_STORE: err = launch<REMOTE_STORE>(stats, iters, clusters, s); break;
    default: return "mode: expected 0 (local), 1 (cluster_self), 2 (remote_arrive), 3 (remote_store)";
  }
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}
