// q_mul.cpp - qmul_u8: quantized::mul as torch computes it: the product of the two
// integers less their zero points (int32), times multiplier in float, rounded half to
// even, plus the output's zero point, clamped to [lo, 255]. Operands broadcast by stride.
#include <aotc/rt/thread_pool.h>

#include "qgemm.h"

namespace aotc::rt {

void qmul_u8(ThreadPool& pool, const QMulParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y) {
  const int64_t rows = p.dims[0] * p.dims[1] * p.dims[2], cols = p.dims[3];
  if (rows <= 0 || cols <= 0) return;
  pool.parallel_for(rows, detail::min_chunk_for(cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i0 = r / (p.dims[1] * p.dims[2]), i1 = r / p.dims[2] % p.dims[1], i2 = r % p.dims[2];
      const uint8_t* ar = a + i0 * p.a_strides[0] + i1 * p.a_strides[1] + i2 * p.a_strides[2];
      const uint8_t* br = b + i0 * p.b_strides[0] + i1 * p.b_strides[1] + i2 * p.b_strides[2];
      uint8_t* yr = y + r * cols;
      int64_t j = 0;
#if AOTC_KERNELS_AVX2
      if (p.a_strides[3] == 1 && p.b_strides[3] <= 1) {
        const __m256i za = _mm256_set1_epi32(p.a_zero), zb = _mm256_set1_epi32(p.b_zero);
        const __m256i zero = _mm256_set1_epi32(p.out_zero);
        const __m256 mult = _mm256_set1_ps(p.multiplier);
        const __m128i lo = _mm_set1_epi8(static_cast<char>(p.lo));
        for (; j + 8 <= cols; j += 8) {
          const __m256i va = _mm256_sub_epi32(
              _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(ar + j))), za);
          const __m256i vb = _mm256_sub_epi32(
              p.b_strides[3] == 1
                  ? _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(br + j)))
                  : _mm256_set1_epi32(br[0]),
              zb);
          const __m256 prod = _mm256_cvtepi32_ps(_mm256_mullo_epi32(va, vb));
          const __m128i q = detail::quantize_x8(_mm256_mul_ps(prod, mult), zero);
          _mm_storel_epi64(reinterpret_cast<__m128i*>(yr + j), _mm_max_epu8(q, lo));
        }
      }
#endif
      for (; j < cols; ++j) {
        const int32_t prod = (static_cast<int32_t>(ar[j * p.a_strides[3]]) - p.a_zero) *
                             (static_cast<int32_t>(br[j * p.b_strides[3]]) - p.b_zero);
        const uint8_t q = detail::quantize_scaled(static_cast<float>(prod) * p.multiplier, p.out_zero);
        yr[j] = q < p.lo ? static_cast<uint8_t>(p.lo) : q;
      }
    }
  });
}

}  // namespace aotc::rt
