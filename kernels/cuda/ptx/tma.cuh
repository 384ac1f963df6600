// ptx/tma.cuh -- TMA, the copy engine (PTX ISA, "cp.async.bulk.tensor"): one thread asks for a
// whole box; a load's bytes are counted against an mbarrier's expected transaction count, a
// store is tracked by bulk groups. Host side: the tensor maps (cuTensorMapEncodeTiled).
#pragma once

#include <cuda.h>  // CUtensorMap (the 128-byte TMA descriptor)
#include <cuda_runtime.h>
#include <stdint.h>

#include "smem.cuh"

namespace hopper {

__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)),
        "r"(c0), "r"(c1) : "memory");
}

__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, uint64_t* bar,
                                            int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)),
        "r"(c0), "r"(c1), "r"(c2) : "memory");
}

// Stores: shared -> global, clipped at the tensor's edges; tracked by bulk groups, not barriers.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int c0,
                                             int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(src)), "r"(c0), "r"(c1)
               : "memory");
}

__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, const void* src, int c0,
                                             int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];"
      ::"l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(src)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

__device__ __forceinline__ void tma_store_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// The stores committed so far have finished READING shared memory (the buffer may be reused).
__device__ __forceinline__ void tma_store_wait_read0() {
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

// ... and have finished writing global memory.
__device__ __forceinline__ void tma_store_wait0() {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Ordinary stores to shared memory that the TMA (the async proxy) reads next must be fenced.
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// ------------------------------------------------------------------------------------------
// Host side. cuTensorMapEncodeTiled is a driver-API function; we fetch it through the runtime
// (no -lcuda at link time, which torch's extension build does not add).
// ------------------------------------------------------------------------------------------

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

inline EncodeTiledFn encode_tiled_fn() {
  static EncodeTiledFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      p = nullptr;
    return reinterpret_cast<EncodeTiledFn>(p);
  }();
  return fn;
}

// A row-major tensor of `rank` (2 or 3) dims, innermost first: dims[0] elements of 2 bytes are
// contiguous, row_bytes apart for dims[1], plane_bytes apart for dims[2]. The box is box[0]
// (= 64 elements = 128 bytes, the swizzle width) by box[1] (by 1). Out-of-range parts of a box
// read as zeros and are not written.
// l2_promotion: how much L2 fetches around each request (256 B here; Triton's descriptors ask
// for 128 B, the `l2_128` ablation of the ws GEMM).
inline CUresult make_map(CUtensorMap* map, const void* ptr, bool bf16, int rank,
                         const uint64_t* dims, uint64_t row_bytes, uint64_t plane_bytes,
                         const uint32_t* box,
                         CUtensorMapL2promotion l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
  EncodeTiledFn fn = encode_tiled_fn();
  if (fn == nullptr) return CUDA_ERROR_NOT_FOUND;
  cuuint64_t d[3] = {dims[0], dims[1], rank > 2 ? dims[2] : 1};
  cuuint64_t strides[2] = {row_bytes, plane_bytes};
  cuuint32_t b[3] = {box[0], box[1], 1};
  cuuint32_t elem_strides[3] = {1, 1, 1};
  return fn(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            static_cast<cuuint32_t>(rank), const_cast<void*>(ptr), d, strides, b, elem_strides,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
            l2_promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

}  // namespace hopper
