// ptx/math.cuh -- register conversions and the softmax's exponential.
#pragma once

#include <stdint.h>

namespace hopper {

// Two fp32 -> one register of two halves (low = x), in the kernel's element type. cvt packs
// its first source into the upper half.
template <bool BF16>
__device__ __forceinline__ uint32_t pack2(float x, float y) {
  uint32_t r;
  if constexpr (BF16)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(y), "f"(x));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(y), "f"(x));
  return r;
}

// 2^x on the SFU (MUFU.EX2), flushing denormals: the softmax works in base 2.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace hopper
