// f16x2_split.cuh - float32 products on fp16 tensor cores at float32's accuracy: each
// operand row is scaled by a power of two and split into two fp16 parts, whose three
// significant cross products (m16n8k16 mma, float32 accumulation) carry float32's 24 bits.
// Used by the linear layers' GEMM (runtime/cuda/kernels/gemm_3xtf32.cu, gemm_f16x2), and
// kept apart from it for any other kernel that takes the same split (the tensor-core
// attention tried in bench/cuda/attention_f16x2_attempt.patch).
//
// x * s = big + small, both fp16, where s is a power of two that puts the largest magnitude
// of x's row in [2^14, 2^15): fp16's 11 significant bits twice, as tf32's split, and fp16's
// narrow exponent range moved to where the row's values are. The values far below the row's
// largest lose the small part's low bits (fp16 subnormals): an error under 2^-39 of the
// largest. The products As Bb + Ab Bs + Ab Bb are three m16n8k16 mma per 16-deep step; the
// sums are unscaled by the rows' factors (exact: powers of two).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace aotc::rt::cuda {

// d += a b: a 16 x 16 fp16 A fragment, a 16 x 8 fp16 B fragment, float32 sums.
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// |x|'s bits, or 0 where x is an infinity or a NaN.
__device__ __forceinline__ uint32_t finite_magnitude(float x) {
  const uint32_t bits = __float_as_uint(x) & 0x7fffffffu;
  return bits < 0x7f800000u ? bits : 0u;
}

// The biased exponent of the factor 2^e that moves a largest magnitude (its bits: finite,
// nonnegative) into [2^14, 2^15): 127 + 14 - its exponent, at most 253 (2^126, for zeros and
// subnormals), so that the factor and its inverse (254 - this) are normal floats.
__device__ __forceinline__ int f16x2_scale_field(uint32_t top) {
  return min(268 - static_cast<int>(top >> 23), 253);
}

__device__ __forceinline__ uint32_t half2_bits(__half2 h) { return *reinterpret_cast<const uint32_t*>(&h); }

// x * scale as fp16 big and small parts (two values, packed as the mma reads them). Careful:
// a non-finite value keeps 0 as small part and as `cross` (the big part that meets the other
// operand's small parts); otherwise cross is big.
template <bool Careful>
__device__ __forceinline__ void split_pair_f16x2(float2 v, float scale, uint32_t& big, uint32_t& cross,
                                                 uint32_t& small) {
  const float2 x = make_float2(v.x * scale, v.y * scale);
  const __half2 hi = __float22half2_rn(x);
  const float2 back = __half22float2(hi);
  const __half2 lo = __float22half2_rn(make_float2(x.x - back.x, x.y - back.y));
  big = half2_bits(hi);
  small = half2_bits(lo);
  cross = big;
  if constexpr (Careful) {
    const uint32_t keep = (isfinite(v.x) ? 0x0000ffffu : 0u) | (isfinite(v.y) ? 0xffff0000u : 0u);
    small &= keep;
    cross &= keep;
  }
}

// A nonzero value below fp16's range at its row's scale (2^-38 of the row's largest or
// less) as fp16's smallest magnitude of its sign rather than 0 (big part; small part 0), so
// that an infinity of the other operand times it is an infinity, as in float32, not
// infinity times zero (a NaN). The change is below 2^-38 of the row's largest value.
__device__ __forceinline__ void keep_tiny_f16x2(float2 v, uint32_t& big, uint32_t& small) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const float value = half ? v.y : v.x;
    const int shift = 16 * half;
    if (value != 0.0f && ((big >> shift) & 0x7fffu) == 0) {
      big = (big & ~(0xffffu << shift)) | ((value < 0.0f ? 0x8001u : 0x0001u) << shift);
      small &= ~(0xffffu << shift);
    }
  }
}

}  // namespace aotc::rt::cuda
