// avg_pool3d.cpp - average pooling over N x C x D x H x W with torch's divisor rules (as
// avg_pool2d.cpp): count_include_pad counts padded cells inside the padded input, never
// the cells a ceil_mode window sticks out beyond it; divisor_override replaces both.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

// A window along one dim: [lo, hi) within the padded input, and its part inside the input.
struct Window {
  int64_t lo, hi, lo_in, hi_in;
};
inline Window window(int64_t o, int64_t stride, int64_t pad, int64_t kernel, int64_t in) {
  const int64_t lo = o * stride - pad;
  const int64_t hi = detail::min_i64(lo + kernel, in + pad);
  return {lo, hi, detail::max_i64(lo, 0), detail::min_i64(hi, in)};
}

}  // namespace

void avg_pool3d_f32(ThreadPool& pool, const Pool3dParams& p, const float* x, float* y) {
  if (p.n <= 0 || p.c <= 0 || p.out[0] <= 0 || p.out[1] <= 0 || p.out[2] <= 0) return;
  const int64_t vol_in = p.in[0] * p.in[1] * p.in[2], vol_out = p.out[0] * p.out[1] * p.out[2];
  const int64_t taps = p.kernel[0] * p.kernel[1] * p.kernel[2];
  pool.parallel_for(p.n * p.c, detail::min_chunk_for(vol_out * taps), [&](int64_t q0, int64_t q1) {
    for (int64_t plane = q0; plane < q1; ++plane) {
      const float* xp = x + plane * vol_in;
      for (int64_t od = 0; od < p.out[0]; ++od) {
        const Window wd = window(od, p.stride[0], p.pad[0], p.kernel[0], p.in[0]);
        for (int64_t oh = 0; oh < p.out[1]; ++oh) {
          const Window wh = window(oh, p.stride[1], p.pad[1], p.kernel[1], p.in[1]);
          float* yrow = y + plane * vol_out + (od * p.out[1] + oh) * p.out[2];
          // Sums, one tap at a time over the whole output row (vectorises for stride 1).
          for (int64_t ow = 0; ow < p.out[2]; ++ow) yrow[ow] = 0.0f;
          for (int64_t id = wd.lo_in; id < wd.hi_in; ++id)
            for (int64_t ih = wh.lo_in; ih < wh.hi_in; ++ih) {
              const float* xrow = xp + (id * p.in[1] + ih) * p.in[2];
              for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
                const int64_t off = kw - p.pad[2];
                const detail::TapRange cols = detail::valid_outputs(off, p.stride[2], p.out[2], p.in[2]);
                if (p.stride[2] == 1) {
                  for (int64_t ow = cols.lo; ow < cols.hi; ++ow) yrow[ow] += xrow[ow + off];
                } else {
                  for (int64_t ow = cols.lo; ow < cols.hi; ++ow) yrow[ow] += xrow[ow * p.stride[2] + off];
                }
              }
            }
          for (int64_t ow = 0; ow < p.out[2]; ++ow) {
            const Window ww = window(ow, p.stride[2], p.pad[2], p.kernel[2], p.in[2]);
            if (wd.lo_in >= wd.hi_in || wh.lo_in >= wh.hi_in || ww.lo_in >= ww.hi_in) {
              yrow[ow] = 0.0f;  // a window entirely in the padding (torch writes 0 too)
              continue;
            }
            int64_t divisor;
            if (p.divisor_override != 0)
              divisor = p.divisor_override;
            else if (p.count_include_pad)
              divisor = (wd.hi - wd.lo) * (wh.hi - wh.lo) * (ww.hi - ww.lo);
            else
              divisor = (wd.hi_in - wd.lo_in) * (wh.hi_in - wh.lo_in) * (ww.hi_in - ww.lo_in);
            yrow[ow] /= static_cast<float>(divisor);
          }
        }
      }
    }
  });
}

}  // namespace aotc::rt
