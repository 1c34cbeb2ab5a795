// tf32_mma.cuh - tf32 tensor-core products (mma.sync m16n8k8, float32 accumulation) and the
// rounding of float32 operands to tf32 before them. Used by the linear layers' and
// convolutions' GEMM (runtime/cuda/kernels/gemm_3xtf32.cu) and the short-sequence attention
// at --precision tf32 and below (runtime/cuda/kernels/attention_short_tf32.cu).
#pragma once

#include <cstdint>

namespace aotc::rt::cuda {

// x's bits rounded to tf32 (10 explicit mantissa bits), to nearest with ties away from zero,
// as cvt.rna.tf32.f32 does but in two integer instructions (sm_90 expands the cvt into
// more): adding half of the dropped part's range to the magnitude's bits carries into the
// kept part when the dropped part is at least half. For finite x only: a NaN's mantissa can
// carry into the sign (0x7fffffff becomes -0).
__device__ __forceinline__ uint32_t tf32_bits(uint32_t bits) { return (bits + 0x1000u) & 0xffffe000u; }

// x rounded to tf32 for an mma that truncates it (the low bits left for the tensor cores
// to drop): half of the dropped range added to the magnitude, saturating so that a NaN
// (CUDA's own is 0x7fffffff) stays a NaN instead of carrying into the sign; an infinity
// stays one (the addition stays in the dropped bits).
__device__ __forceinline__ uint32_t tf32_round_any(uint32_t bits) {
  return (bits & 0x80000000u) | min((bits & 0x7fffffffu) + 0x1000u, 0x7fffffffu);
}

// d += a b: a 16 x 8 tf32 A fragment (row major), an 8 x 8 B fragment (column major),
// float32 sums. Lane 4 g + t holds A's (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4), B's
// (t, g), (t + 4, g), and d's (g, 2 t), (g, 2 t + 1), (g + 8, 2 t), (g + 8, 2 t + 1).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace aotc::rt::cuda
