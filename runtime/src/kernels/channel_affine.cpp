// channel_affine.cpp - y = clamp(x * scale[c] + shift[c]): eval-mode batch norm with
// folded statistics, optionally fused with relu/relu6. y may alias x.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {

void channel_affine_f32(ThreadPool& pool, int64_t n, int64_t c, int64_t spatial, const float* scale,
                        const float* shift, float clamp_lo, float clamp_hi, const float* x, float* y) {
  if (n <= 0 || c <= 0 || spatial <= 0) return;
  if (spatial == 1) {
    // n x c rows (batch norm 1-d): vectorise along the channels instead.
    pool.parallel_for(n, detail::min_chunk_for(c), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = x + r * c;
        float* yr = y + r * c;
        for (int64_t ch = 0; ch < c; ++ch)
          yr[ch] = detail::clamp_value(xr[ch] * scale[ch] + shift[ch], clamp_lo, clamp_hi);
      }
    });
    return;
  }
  pool.parallel_for(n * c, detail::min_chunk_for(spatial), [&](int64_t q0, int64_t q1) {
    for (int64_t plane = q0; plane < q1; ++plane) {
      const int64_t ch = plane % c;
      const float s = scale[ch], t = shift[ch];
      const float* xp = x + plane * spatial;
      float* yp = y + plane * spatial;
      for (int64_t i = 0; i < spatial; ++i) yp[i] = detail::clamp_value(xp[i] * s + t, clamp_lo, clamp_hi);
    }
  });
}

}  // namespace aotc::rt
