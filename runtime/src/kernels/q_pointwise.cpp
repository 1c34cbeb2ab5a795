// q_pointwise.cpp - elementwise kernels on quint8: quantized::add (and add_relu) as torch
// computes it (qadd_u8: both inputs dequantized by a fused multiply-add, summed, quantized
// as quantize_u8 does), and the clamps that keep the scale (clamp_u8).
#include <aotc/rt/thread_pool.h>

#include "qgemm.h"

namespace aotc::rt {

void qadd_u8(ThreadPool& pool, int64_t count, const QAddParams& p, const uint8_t* a, const uint8_t* b,
             uint8_t* y) {
  if (count <= 0) return;
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
#if AOTC_KERNELS_AVX2
    const __m256 as = _mm256_set1_ps(p.a_scale), ap = _mm256_set1_ps(p.a_premul);
    const __m256 bs = _mm256_set1_ps(p.b_scale), bp = _mm256_set1_ps(p.b_premul);
    const __m256 inv = _mm256_set1_ps(p.out_inv_scale);
    const __m256i z = _mm256_set1_epi32(p.out_zero);
    for (; i + 8 <= i1; i += 8) {
      const __m256 fa =
          _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + i))));
      const __m256 fb =
          _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + i))));
      __m256 s = _mm256_add_ps(_mm256_fmadd_ps(as, fa, ap), _mm256_fmadd_ps(bs, fb, bp));
      if (p.relu) s = _mm256_max_ps(s, _mm256_setzero_ps());
      _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), detail::quantize_x8(_mm256_mul_ps(s, inv), z));
    }
#endif
    for (; i < i1; ++i) {
      float s = std::fma(p.a_scale, static_cast<float>(a[i]), p.a_premul) +
                std::fma(p.b_scale, static_cast<float>(b[i]), p.b_premul);
      if (p.relu) s = s > 0.0f ? s : 0.0f;
      y[i] = detail::quantize_scaled(s * p.out_inv_scale, p.out_zero);
    }
  });
}

void clamp_u8(ThreadPool& pool, int64_t count, uint8_t lo, uint8_t hi, const uint8_t* x, uint8_t* y) {
  if (count <= 0) return;
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
#if AOTC_KERNELS_AVX2
    const __m256i l = _mm256_set1_epi8(static_cast<char>(lo)), h = _mm256_set1_epi8(static_cast<char>(hi));
    for (; i + 32 <= i1; i += 32) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_min_epu8(_mm256_max_epu8(v, l), h));
    }
#endif
    for (; i < i1; ++i) {
      const uint8_t v = x[i] < lo ? lo : x[i];
      y[i] = v > hi ? hi : v;
    }
  });
}

}  // namespace aotc::rt
