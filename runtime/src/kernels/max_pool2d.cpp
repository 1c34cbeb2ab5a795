// max_pool2d.cpp - max pooling over NCHW planes with padding, dilation and ceil_mode
// output sizes. Padded cells never win (they are simply skipped); NaN propagates as
// in torch.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {
void max_pool2d_f32(ThreadPool& pool, const Pool2dParams& p, const float* x, float* y) {
  if (p.n <= 0 || p.c <= 0 || p.h_out <= 0 || p.w_out <= 0) return;
  const int64_t hw_in = p.h_in * p.w_in, hw_out = p.h_out * p.w_out;
  const int64_t taps = p.kernel_h * p.kernel_w;
  pool.parallel_for(p.n * p.c, detail::min_chunk_for(hw_out * taps), [&](int64_t q0, int64_t q1) {
    for (int64_t plane = q0; plane < q1; ++plane) {
      const float* xp = x + plane * hw_in;
      float* yp = y + plane * hw_out;
      for (int64_t oh = 0; oh < p.h_out; ++oh) {
        float* yrow = yp + oh * p.w_out;
        for (int64_t ow = 0; ow < p.w_out; ++ow) yrow[ow] = -__builtin_inff();
        // One kernel tap at a time over the whole output row (vectorises for stride 1);
        // taps outside the input are left out of each output's range.
        const int64_t ih0 = oh * p.stride_h - p.pad_h;
        const detail::TapRange rows = detail::valid_taps(ih0, p.dilation_h, p.kernel_h, p.h_in);
        for (int64_t i = rows.lo; i < rows.hi; ++i) {
          const float* xrow = xp + (ih0 + i * p.dilation_h) * p.w_in;
          for (int64_t j = 0; j < p.kernel_w; ++j) {
            const int64_t off = j * p.dilation_w - p.pad_w;
            const detail::TapRange cols = detail::valid_outputs(off, p.stride_w, p.w_out, p.w_in);
            if (p.stride_w == 1) {
              for (int64_t ow = cols.lo; ow < cols.hi; ++ow)
                yrow[ow] = detail::max_nan(yrow[ow], xrow[ow + off]);
            } else {
              for (int64_t ow = cols.lo; ow < cols.hi; ++ow)
                yrow[ow] = detail::max_nan(yrow[ow], xrow[ow * p.stride_w + off]);
            }
          }
        }
      }
    }
  });
}

}  // namespace aotc::rt
