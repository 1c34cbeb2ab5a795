// lowp.cuh - the 16-bit operand types of --precision fp16 and bf16 in device code: rounding
// a float32 to the type (nearest even), for the kernels that stage float32 activations as
// GEMM operands (im2col.cu, round_to_16bit.cu), and widening a value back to float32 for
// those that read activations kept in the type (im2col_nhwc.cu, epilogue_16bit.cu, and the
// generated pointwise kernels), and the packs of such values that one load or store moves.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

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

__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }

// The same on a value's raw bits, as generated kernels hold 16-bit tensors (arrays of
// uint16_t: binary_cuda.cpp).
__device__ __forceinline__ float widen_fp16(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
__device__ __forceinline__ float widen_bf16(uint16_t bits) {
  return __bfloat162float(__ushort_as_bfloat16(bits));
}
__device__ __forceinline__ uint16_t fp16_bits(float v) { return __half_as_ushort(__float2half_rn(v)); }
__device__ __forceinline__ uint16_t bf16_bits(float v) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

// N values of S that one instruction loads or stores (16 bytes at most): a vector of
// channels or of consecutive elements, read from and written to memory aligned to its size.
template <class S, int N>
struct alignas(sizeof(S) * N) Pack {
  S v[N];
};

// Whether a pack of `bytes` may be loaded or stored at p (a launch's choice of kernel).
inline bool pack_aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace aotc::rt::cuda
