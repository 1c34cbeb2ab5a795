// max_pool2d.cpp - max pooling over NCHW planes with padding, dilation and ceil_mode
// output sizes. Padded cells never win (they are simply skipped); NaN propagates as
// in torch.
//
// Separable: for each output row, the maximum over the window's input rows is taken first
// for every input column (contiguous, vectorised), then the maximum over the window's
// columns of that row. Nine strided taps per output made resnet's 3x3 stride-2 pool slow
// (bench/results_cpu.md); the vertical pass reads each row once per window
// row, the horizontal one (stride 2 as even/odd lanes of two vectors) a third of the taps.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

// Rows wider than this take the direct form (one tap at a time over each output row).
constexpr int64_t kRowFloats = 4096;

#if AOTC_KERNELS_AVX2
using detail::even_lanes_f32x8;
using detail::max_nan_f32x8;
#endif

// acc[c] = max_nan(acc[c], row[c]) for c in [0, count).
void max_into(float* acc, const float* row, int64_t count) {
  int64_t c = 0;
#if AOTC_KERNELS_AVX2
  for (; c + 8 <= count; c += 8)
    _mm256_storeu_ps(acc + c, max_nan_f32x8(_mm256_loadu_ps(acc + c), _mm256_loadu_ps(row + c)));
#endif
  for (; c < count; ++c) acc[c] = detail::max_nan(acc[c], row[c]);
}

// yrow[ow] = max over the window's columns of rowmax, for one output row.
void pool_row_columns(const Pool2dParams& p, const float* rowmax, float* yrow) {
  for (int64_t ow = 0; ow < p.w_out; ++ow) yrow[ow] = -__builtin_inff();
  for (int64_t j = 0; j < p.kernel_w; ++j) {
    const int64_t off = j * p.dilation_w - p.pad_w;
    const detail::TapRange cols = detail::valid_outputs(off, p.stride_w, p.w_out, p.w_in);
    int64_t ow = cols.lo;
#if AOTC_KERNELS_AVX2
    if (p.stride_w == 1) {
      for (; ow + 8 <= cols.hi; ow += 8)
        _mm256_storeu_ps(yrow + ow,
                         max_nan_f32x8(_mm256_loadu_ps(yrow + ow), _mm256_loadu_ps(rowmax + ow + off)));
    } else if (p.stride_w == 2) {
      // The 16 floats from 2 * ow + off must lie inside the row: 2 * (ow + 7) + off + 1 < w_in.
      for (; ow + 8 <= cols.hi && 2 * ow + off + 16 <= p.w_in; ow += 8)
        _mm256_storeu_ps(yrow + ow,
                         max_nan_f32x8(_mm256_loadu_ps(yrow + ow), even_lanes_f32x8(rowmax + 2 * ow + off)));
    }
#endif
    for (; ow < cols.hi; ++ow) yrow[ow] = detail::max_nan(yrow[ow], rowmax[ow * p.stride_w + off]);
  }
}

// The general form: one kernel tap at a time over each output row.
void pool_plane_direct(const Pool2dParams& p, const float* xp, float* yp) {
  for (int64_t oh = 0; oh < p.h_out; ++oh) {
    float* yrow = yp + oh * p.w_out;
    for (int64_t ow = 0; ow < p.w_out; ++ow) yrow[ow] = -__builtin_inff();
    const int64_t ih0 = oh * p.stride_h - p.pad_h;
    const detail::TapRange rows = detail::valid_taps(ih0, p.dilation_h, p.kernel_h, p.h_in);
    for (int64_t i = rows.lo; i < rows.hi; ++i) {
      const float* xrow = xp + (ih0 + i * p.dilation_h) * p.w_in;
      for (int64_t j = 0; j < p.kernel_w; ++j) {
        const int64_t off = j * p.dilation_w - p.pad_w;
        const detail::TapRange cols = detail::valid_outputs(off, p.stride_w, p.w_out, p.w_in);
        for (int64_t ow = cols.lo; ow < cols.hi; ++ow)
          yrow[ow] = detail::max_nan(yrow[ow], xrow[ow * p.stride_w + off]);
      }
    }
  }
}

}  // namespace

void max_pool2d_f32(ThreadPool& pool, const Pool2dParams& p, const float* x, float* y) {
  if (p.n <= 0 || p.c <= 0 || p.h_out <= 0 || p.w_out <= 0) return;
  const int64_t hw_in = p.h_in * p.w_in, hw_out = p.h_out * p.w_out;
  const int64_t taps = p.kernel_h * p.kernel_w;
  pool.parallel_for(p.n * p.c, detail::min_chunk_for(hw_out * taps), [&](int64_t q0, int64_t q1) {
    alignas(32) float rowmax[kRowFloats];
    for (int64_t plane = q0; plane < q1; ++plane) {
      const float* xp = x + plane * hw_in;
      float* yp = y + plane * hw_out;
      if (p.w_in > kRowFloats) {
        pool_plane_direct(p, xp, yp);
        continue;
      }
      for (int64_t oh = 0; oh < p.h_out; ++oh) {
        const int64_t ih0 = oh * p.stride_h - p.pad_h;
        const detail::TapRange rows = detail::valid_taps(ih0, p.dilation_h, p.kernel_h, p.h_in);
        if (rows.lo == rows.hi) {  // the window lies in the padding: no cell wins
          for (int64_t c = 0; c < p.w_in; ++c) rowmax[c] = -__builtin_inff();
        } else {
          const float* first = xp + (ih0 + rows.lo * p.dilation_h) * p.w_in;
          for (int64_t c = 0; c < p.w_in; ++c) rowmax[c] = first[c];
          for (int64_t i = rows.lo + 1; i < rows.hi; ++i)
            max_into(rowmax, xp + (ih0 + i * p.dilation_h) * p.w_in, p.w_in);
        }
        pool_row_columns(p, rowmax, yp + oh * p.w_out);
      }
    }
  });
}

}  // namespace aotc::rt
