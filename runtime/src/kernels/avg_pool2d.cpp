// avg_pool2d.cpp - average pooling over NCHW planes with torch's divisor rules:
// count_include_pad counts padded cells inside the padded input, never the cells a
// ceil_mode window sticks out beyond it; divisor_override replaces both.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {

void avg_pool2d_f32(ThreadPool& pool, const Pool2dParams& p, const float* x, float* y) {
  if (p.n <= 0 || p.c <= 0 || p.h_out <= 0 || p.w_out <= 0) return;
  const int64_t hw_in = p.h_in * p.w_in, hw_out = p.h_out * p.w_out;
  const int64_t taps = p.kernel_h * p.kernel_w;
  pool.parallel_for(p.n * p.c, detail::min_chunk_for(hw_out * taps), [&](int64_t q0, int64_t q1) {
    for (int64_t plane = q0; plane < q1; ++plane) {
      const float* xp = x + plane * hw_in;
      float* yp = y + plane * hw_out;
      for (int64_t oh = 0; oh < p.h_out; ++oh) {
        float* yrow = yp + oh * p.w_out;
        // Window rows as torch computes them: [ih0, ih1) within the padded input, then
        // clipped to the real input.
        const int64_t ih0 = oh * p.stride_h - p.pad_h;
        const int64_t ih1 = detail::min_i64(ih0 + p.kernel_h, p.h_in + p.pad_h);
        const int64_t pool_h = ih1 - ih0;
        const int64_t ih0c = detail::max_i64(ih0, 0), ih1c = detail::min_i64(ih1, p.h_in);

        // Sums, one tap at a time over the whole row (taps in torch's order per output).
        for (int64_t ow = 0; ow < p.w_out; ++ow) yrow[ow] = 0.0f;
        for (int64_t ih = ih0c; ih < ih1c; ++ih) {
          const float* xrow = xp + ih * p.w_in;
          for (int64_t j = 0; j < p.kernel_w; ++j) {
            const int64_t off = j - p.pad_w;
            const detail::TapRange cols = detail::valid_outputs(off, p.stride_w, p.w_out, p.w_in);
            if (p.stride_w == 1) {
              for (int64_t ow = cols.lo; ow < cols.hi; ++ow) yrow[ow] += xrow[ow + off];
            } else {
              for (int64_t ow = cols.lo; ow < cols.hi; ++ow) yrow[ow] += xrow[ow * p.stride_w + off];
            }
          }
        }

        for (int64_t ow = 0; ow < p.w_out; ++ow) {
          const int64_t iw0 = ow * p.stride_w - p.pad_w;
          const int64_t iw1 = detail::min_i64(iw0 + p.kernel_w, p.w_in + p.pad_w);
          const int64_t pool_w = iw1 - iw0;
          const int64_t iw0c = detail::max_i64(iw0, 0), iw1c = detail::min_i64(iw1, p.w_in);
          if (ih0c >= ih1c || iw0c >= iw1c) {
            yrow[ow] = 0.0f;
            continue;
          }
          int64_t divisor;
          if (p.divisor_override != 0) {
            divisor = p.divisor_override;
          } else if (p.count_include_pad) {
            divisor = pool_h * pool_w;
          } else {
            divisor = (ih1c - ih0c) * (iw1c - iw0c);
          }
          yrow[ow] /= static_cast<float>(divisor);
        }
      }
    }
  });
}

}  // namespace aotc::rt
