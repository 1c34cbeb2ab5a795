// quantize.cpp - float <-> quint8 per tensor (quantize_u8, dequantize_u8), with torch's
// rounding and clipping (qgemm.h, quantize_scaled), 8 lanes at a time on AVX2.
#include <aotc/rt/thread_pool.h>

#include "qgemm.h"

namespace aotc::rt {

void quantize_u8(ThreadPool& pool, int64_t count, float inv_scale, int32_t zero, const float* x, uint8_t* q) {
  if (count <= 0) return;
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
#if AOTC_KERNELS_AVX2
    const __m256 inv = _mm256_set1_ps(inv_scale);
    const __m256i z = _mm256_set1_epi32(zero);
    for (; i + 8 <= i1; i += 8)
      _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i),
                       detail::quantize_x8(_mm256_mul_ps(_mm256_loadu_ps(x + i), inv), z));
#endif
    for (; i < i1; ++i) q[i] = detail::quantize_scaled(x[i] * inv_scale, zero);
  });
}

void dequantize_u8(ThreadPool& pool, int64_t count, float scale, int32_t zero, const uint8_t* q, float* x) {
  if (count <= 0) return;
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
#if AOTC_KERNELS_AVX2
    const __m256 s = _mm256_set1_ps(scale);
    const __m256i z = _mm256_set1_epi32(zero);
    for (; i + 8 <= i1; i += 8) {
      const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i)));
      _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, z)), s));
    }
#endif
    for (; i < i1; ++i) x[i] = static_cast<float>(static_cast<int32_t>(q[i]) - zero) * scale;
  });
}

}  // namespace aotc::rt
