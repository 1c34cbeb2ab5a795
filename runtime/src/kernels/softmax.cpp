// softmax.cpp - softmax / log_softmax over the middle axis of outer x axis x inner,
// stable (the maximum is subtracted first). y may alias x.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cmath>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

// y[i] = exp(x[i] - shift[i or 0]) (stored when Store) and the sum of those values,
// folded into sum[i] (PerColumn) or returned (one shift for the whole run).
template <bool Store, bool PerColumn>
float exp_shifted(const float* x, const float* shift, float* y, float* sum, int64_t count) {
  int64_t i = 0;
  float total = 0.0f;
#if AOTC_KERNELS_AVX2
  __m256 acc = _mm256_setzero_ps();
  const __m256 s0 = _mm256_set1_ps(shift[0]);
  for (; i + 8 <= count; i += 8) {
    const __m256 s = PerColumn ? _mm256_loadu_ps(shift + i) : s0;
    const __m256 e = detail::exp_f32x8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    if constexpr (Store) _mm256_storeu_ps(y + i, e);
    if constexpr (PerColumn) {
      _mm256_storeu_ps(sum + i, _mm256_add_ps(_mm256_loadu_ps(sum + i), e));
    } else {
      acc = _mm256_add_ps(acc, e);
    }
  }
  if constexpr (!PerColumn) {
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    total = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
  }
#endif
  for (; i < count; ++i) {
    const float e = detail::exp_f32(x[i] - shift[PerColumn ? i : 0]);
    if constexpr (Store) y[i] = e;
    if constexpr (PerColumn) {
      sum[i] += e;
    } else {
      total += e;
    }
  }
  return total;
}

// The axis is the contiguous one: one row per outer index.
void softmax_rows(ThreadPool& pool, int64_t outer, int64_t axis, bool log, const float* x, float* y) {
  pool.parallel_for(outer, detail::min_chunk_for(axis), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * axis;
      float* yr = y + r * axis;
      const float mx = detail::max_contiguous(xr, axis);
      if (log) {
        const float log_sum = std::log(exp_shifted<false, false>(xr, &mx, nullptr, nullptr, axis));
        for (int64_t i = 0; i < axis; ++i) yr[i] = (xr[i] - mx) - log_sum;
      } else {
        const float inv = 1.0f / exp_shifted<true, false>(xr, &mx, yr, nullptr, axis);
        for (int64_t i = 0; i < axis; ++i) yr[i] *= inv;
      }
    }
  });
}

// The axis is strided by inner: columns are processed in blocks of kBlock, with the
// per-column maximum and sum on the stack.
void softmax_columns(ThreadPool& pool, int64_t outer, int64_t axis, int64_t inner, bool log, const float* x,
                     float* y) {
  constexpr int64_t kBlock = 256;
  const int64_t blocks = detail::ceil_div(inner, kBlock);
  pool.parallel_for(outer * blocks, detail::min_chunk_for(axis * kBlock), [&](int64_t w0, int64_t w1) {
    float mx[kBlock];
    float sum[kBlock];
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t o = w / blocks, j0 = (w % blocks) * kBlock;
      const int64_t len = detail::min_i64(kBlock, inner - j0);
      const int64_t base = o * axis * inner + j0;
      for (int64_t j = 0; j < len; ++j) {
        mx[j] = -__builtin_inff();
        sum[j] = 0.0f;
      }
      for (int64_t a = 0; a < axis; ++a) {
        const float* xr = x + base + a * inner;
        for (int64_t j = 0; j < len; ++j) mx[j] = detail::max_nan(mx[j], xr[j]);
      }
      for (int64_t a = 0; a < axis; ++a) {
        const int64_t off = base + a * inner;
        if (log) {
          exp_shifted<false, true>(x + off, mx, nullptr, sum, len);
        } else {
          exp_shifted<true, true>(x + off, mx, y + off, sum, len);
        }
      }
      if (log) {
        for (int64_t j = 0; j < len; ++j) sum[j] = std::log(sum[j]);
        for (int64_t a = 0; a < axis; ++a) {
          const float* xr = x + base + a * inner;
          float* yr = y + base + a * inner;
          for (int64_t j = 0; j < len; ++j) yr[j] = (xr[j] - mx[j]) - sum[j];
        }
      } else {
        for (int64_t j = 0; j < len; ++j) sum[j] = 1.0f / sum[j];
        for (int64_t a = 0; a < axis; ++a) {
          float* yr = y + base + a * inner;
          for (int64_t j = 0; j < len; ++j) yr[j] *= sum[j];
        }
      }
    }
  });
}

}  // namespace

void softmax_f32(ThreadPool& pool, int64_t outer, int64_t axis, int64_t inner, bool log, const float* x,
                 float* y) {
  if (outer <= 0 || axis <= 0 || inner <= 0) return;
  if (inner == 1) {
    softmax_rows(pool, outer, axis, log, x, y);
  } else {
    softmax_columns(pool, outer, axis, inner, log, x, y);
  }
}

}  // namespace aotc::rt
