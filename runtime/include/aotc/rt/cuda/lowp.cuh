// lowp.cuh - the 16-bit operand types of --precision fp16 and bf16 in device code: rounding
// a float32 to the type (nearest even), for the kernels that stage float32 activations as
// GEMM operands (im2col.cu, round_to_16bit.cu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace aotc::rt::cuda {

template <class T>
__device__ __forceinline__ T round_to(float v);
template <>
__device__ __forceinline__ float round_to<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half round_to<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 round_to<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

}  // namespace aotc::rt::cuda
