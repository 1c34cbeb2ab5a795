// q_linear_dynamic.cpp - torch's dynamically quantized linear layer (quantized.h,
// qlinear_dynamic_f32): the input's quantization parameters chosen from its own range at each
// run, its uint8 image, the int8 product (qgemm_u8 with int32 sums out) and the float scaling.
#include <aotc/rt/kernels/layouts.h>
#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "qgemm.h"

namespace aotc::rt {
namespace {

// The smallest scale torch lets a dynamic quantization take (SMALL_SCALE_THRESHOLD).
constexpr float kSmallScale = 6.1e-5f;

// The minimum and maximum of count floats (count > 0).
void min_max(const float* x, int64_t count, float& lo, float& hi) {
  lo = hi = x[0];
  int64_t i = 0;
#if AOTC_KERNELS_AVX2
  if (count >= 8) {
    __m256 vlo = _mm256_loadu_ps(x), vhi = vlo;
    for (i = 8; i + 8 <= count; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      vlo = _mm256_min_ps(vlo, v);
      vhi = _mm256_max_ps(vhi, v);
    }
    alignas(32) float l[8], h[8];
    _mm256_store_ps(l, vlo);
    _mm256_store_ps(h, vhi);
    for (int j = 0; j < 8; ++j) {
      lo = std::min(lo, l[j]);
      hi = std::max(hi, h[j]);
    }
  }
#elif AOTC_KERNELS_NEON
  if (count >= 4) {
    float32x4_t vlo = vld1q_f32(x), vhi = vlo;
    for (i = 4; i + 4 <= count; i += 4) {
      const float32x4_t v = vld1q_f32(x + i);
      vlo = vminq_f32(vlo, v);
      vhi = vmaxq_f32(vhi, v);
    }
    lo = vminvq_f32(vlo);
    hi = vmaxvq_f32(vhi);
  }
#endif
  for (; i < count; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
}

// Values [begin, end) of x as fbgemm quantizes a packed A: clamp(cvtps2dq(fma(x, inv, zero)), 0, 255).
void quantize_fma(const float* x, int64_t begin, int64_t end, float inv, float zero, uint8_t* q) {
  int64_t i = begin;
#if AOTC_KERNELS_AVX2
  const __m256 vinv = _mm256_set1_ps(inv), vzero = _mm256_set1_ps(zero);
  const __m256 clip = _mm256_set1_ps(detail::kQuantizeClip);
  for (; i + 8 <= end; i += 8) {
    const __m256 t = _mm256_min_ps(_mm256_fmadd_ps(_mm256_loadu_ps(x + i), vinv, vzero), clip);
    const __m256i r = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(t), _mm256_setzero_si256()),
                                       _mm256_set1_epi32(255));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), detail::pack_u8x8(r));
  }
#endif
  for (; i < end; ++i) {
    float t = std::fma(x[i], inv, zero);
    t = t < detail::kQuantizeClip ? t : detail::kQuantizeClip;
    const int32_t r = detail::cvt_nearest_i32(t);
    q[i] = static_cast<uint8_t>(r < 0 ? 0 : r > 255 ? 255 : r);
  }
}

// Rows [r0, r1) of y, which holds the int32 sums: y = float(acc) * (scale * w_scale[j]) + bias[j].
void scale_rows(const QLinearDynamicParams& p, const QLinearDynamicWeights& w, float scale, int64_t r0,
                int64_t r1, float* y) {
  for (int64_t r = r0; r < r1; ++r) {
    float* row = y + r * p.n;
    int64_t j = 0;
#if AOTC_KERNELS_AVX2
    const __m256 vscale = _mm256_set1_ps(scale);
    for (; j + 8 <= p.n; j += 8) {
      // The sums read as integers from the floats' memory (intrinsics may alias).
      const __m256i acc = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + j));
      __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_mul_ps(vscale, _mm256_loadu_ps(w.scale + j)));
      if (w.bias) v = _mm256_add_ps(v, _mm256_loadu_ps(w.bias + j));
      if (p.relu) v = _mm256_max_ps(v, _mm256_setzero_ps());
      _mm256_storeu_ps(row + j, v);
    }
#endif
    for (; j < p.n; ++j) {
      int32_t acc;
      std::memcpy(&acc, row + j, sizeof acc);
      float v = static_cast<float>(acc) * (scale * w.scale[j]);
      if (w.bias) v += w.bias[j];
      if (p.relu) v = v > 0.0f ? v : 0.0f;
      row[j] = v;
    }
  }
}

}  // namespace

QParams choose_qparams_u8(float min, float max, bool reduce_range) {
  const int32_t qmin = 0, qmax = reduce_range ? 127 : 255;
  min = std::min(min, 0.0f);
  max = std::max(max, 0.0f);
  // In double, as torch; the scale it ends with is a float.
  double scale = (static_cast<double>(max) - min) / (qmax - qmin);
  if (static_cast<float>(scale) == 0.0f || std::isinf(1.0f / static_cast<float>(scale))) scale = 0.1;
  if (scale < kSmallScale) {
    const auto original = static_cast<float>(scale);
    scale = kSmallScale;
    if (min == 0.0f) {
      max = kSmallScale * static_cast<float>(qmax - qmin);
    } else if (max == 0.0f) {
      min = -kSmallScale * static_cast<float>(qmax - qmin);
    } else {
      const float amplifier = kSmallScale / original;
      min *= amplifier;
      max *= amplifier;
    }
  }
  // The zero point from the end whose terms are smaller, rounded half to even.
  const double from_min = qmin - min / scale, from_max = qmax - max / scale;
  const double min_error = std::abs(qmin) - std::abs(min / scale);
  const double max_error = std::abs(qmax) - std::abs(max / scale);
  const double zero = min_error < max_error ? from_min : from_max;
  QParams q;
  q.scale = static_cast<float>(scale);
  q.zero_point = zero < qmin ? qmin : zero > qmax ? qmax : static_cast<int32_t>(std::nearbyint(zero));
  return q;
}

void qlinear_dynamic_f32(ThreadPool& pool, const QLinearDynamicParams& p, const float* x,
                         const QLinearDynamicWeights& w, float* y, uint8_t* scratch) {
  if (p.m <= 0 || p.n <= 0) return;
  if (p.k <= 0) {  // an empty sum: the bias alone
    for (int64_t r = 0; r < p.m; ++r)
      for (int64_t j = 0; j < p.n; ++j) {
        const float v = w.bias ? w.bias[j] : 0.0f;
        y[r * p.n + j] = p.relu && !(v > 0.0f) ? 0.0f : v;
      }
    return;
  }
  float lo = 0, hi = 0;
  min_max(x, p.m * p.k, lo, hi);
  const QParams q = choose_qparams_u8(lo, hi, p.reduce_range);
  uint8_t* xq = scratch;
  auto* offset = reinterpret_cast<int32_t*>(scratch + qgemm::round_up(p.m * p.k, 64));
  const float inv = 1.0f / q.scale, zero = static_cast<float>(q.zero_point);
  const int64_t rows_min = detail::min_chunk_for(p.k);
  pool.parallel_for(p.m, rows_min,
                    [&](int64_t r0, int64_t r1) { quantize_fma(x, r0 * p.k, r1 * p.k, inv, zero, xq); });
  // The sums of (x_q - zero) * (w - w_zero): QRequant's offsets for this run's zero point.
  for (int64_t j = 0; j < p.n; ++j) {
    uint32_t o = static_cast<uint32_t>(-q.zero_point) * static_cast<uint32_t>(w.colsum[j]);
    if (w.zero) o += static_cast<uint32_t>(p.k * q.zero_point) * static_cast<uint32_t>(w.zero[j]);
    offset[j] = static_cast<int32_t>(o);
  }
  QRequant rq;
  rq.acc_offset = offset;
  rq.w_zero = w.zero;
  detail::QGemmDesc d;
  d.m = p.m;
  d.n = p.n;
  d.k = p.k;
  d.a = xq;
  d.lda = p.k;
  d.w = w.packed;
  d.rq = &rq;
  // The sums go into y's memory, read back as integers by scale_rows.
  d.y32 = reinterpret_cast<int32_t*>(y);
  d.ldy = p.n;
  detail::qgemm_u8(pool, d);
  pool.parallel_for(p.m, detail::min_chunk_for(p.n),
                    [&](int64_t r0, int64_t r1) { scale_rows(p, w, q.scale, r0, r1, y); });
}

}  // namespace aotc::rt
