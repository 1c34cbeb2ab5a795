// q_layer_norm.cpp - quantized::layer_norm on uint8 rows (quantized.h, qlayer_norm_u8): the
// row's statistics from integer sums, the normalisation in float in torch's order, the
// result quantized as torch quantizes.
#include <aotc/rt/thread_pool.h>

#include <cmath>

#include "qgemm.h"

namespace aotc::rt {
namespace {

// One row.
void norm_row(const QLayerNormParams& p, const uint8_t* x, const float* gamma, const float* beta,
              uint8_t* y) {
  int64_t sum = 0, sum_sq = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    sum += x[i];
    sum_sq += static_cast<int64_t>(x[i]) * x[i];
  }
  const auto n = static_cast<float>(p.n);
  const float mean_raw = static_cast<float>(sum) / n;
  const float mean = mean_raw - static_cast<float>(p.x_zero);
  // torch's build fuses this multiply and subtraction (measured: 0 of 460k values differ).
  float var = std::fma(-mean_raw, mean_raw, static_cast<float>(sum_sq) / n);
  var = var > 0.0f ? var : 0.0f;
  const float var_scaled = detail::held(detail::held(var * p.x_scale) * p.x_scale);
  const auto inv_std =
      static_cast<float>(static_cast<double>(p.x_scale) / std::sqrt(static_cast<double>(var_scaled) + p.eps));
  int64_t i = 0;
#if AOTC_KERNELS_AVX2
  const __m256 vmean = _mm256_set1_ps(mean), vinv = _mm256_set1_ps(inv_std),
               vyinv = _mm256_set1_ps(p.y_inv_scale);
  const __m256i xzero = _mm256_set1_epi32(p.x_zero), yzero = _mm256_set1_epi32(p.y_zero);
  for (; i + 8 <= p.n; i += 8) {
    const __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i)));
    const __m256 t =
        _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q, xzero)), vmean), vinv);
    const __m256 v = _mm256_fmadd_ps(t, gamma ? _mm256_loadu_ps(gamma + i) : _mm256_set1_ps(1.0f),
                                     beta ? _mm256_loadu_ps(beta + i) : _mm256_setzero_ps());
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), detail::quantize_x8(_mm256_mul_ps(v, vyinv), yzero));
  }
#endif
  for (; i < p.n; ++i) {
    const float t = (static_cast<float>(x[i] - p.x_zero) - mean) * inv_std;
    const float v = std::fma(t, gamma ? gamma[i] : 1.0f, beta ? beta[i] : 0.0f);
    y[i] = detail::quantize_scaled(v * p.y_inv_scale, p.y_zero);
  }
}

}  // namespace

void qlayer_norm_u8(ThreadPool& pool, const QLayerNormParams& p, const uint8_t* x, const float* gamma,
                    const float* beta, uint8_t* y) {
  if (p.rows <= 0 || p.n <= 0) return;
  pool.parallel_for(p.rows, detail::min_chunk_for(p.n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) norm_row(p, x + r * p.n, gamma, beta, y + r * p.n);
  });
}

}  // namespace aotc::rt
