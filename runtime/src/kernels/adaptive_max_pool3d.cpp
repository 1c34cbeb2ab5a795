// adaptive_max_pool3d.cpp - adaptive max pooling over N x C x D x H x W planes (1-d and
// 2-d with leading 1s), with the argmax indices (flat within the input plane). Bins as in
// adaptive_avg_pool3d.cpp; NaN wins and the first maximum in bin order is kept, as torch.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {

void adaptive_max_pool3d_f32(ThreadPool& pool, const AdaptivePoolParams& p, const float* x, float* y,
                             int64_t* indices) {
  if (p.n <= 0 || p.c <= 0 || p.out[0] <= 0 || p.out[1] <= 0 || p.out[2] <= 0) return;
  const int64_t vol_in = p.in[0] * p.in[1] * p.in[2], vol_out = p.out[0] * p.out[1] * p.out[2];
  auto start = [](int64_t i, int64_t in, int64_t out) { return (i * in) / out; };
  auto end = [](int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; };
  pool.parallel_for(
      p.n * p.c, detail::min_chunk_for(vol_in > vol_out ? vol_in : vol_out), [&](int64_t q0, int64_t q1) {
        for (int64_t plane = q0; plane < q1; ++plane) {
          const float* xp = x + plane * vol_in;
          for (int64_t od = 0; od < p.out[0]; ++od) {
            const int64_t d0 = start(od, p.in[0], p.out[0]), d1 = end(od, p.in[0], p.out[0]);
            for (int64_t oh = 0; oh < p.out[1]; ++oh) {
              const int64_t h0 = start(oh, p.in[1], p.out[1]), h1 = end(oh, p.in[1], p.out[1]);
              for (int64_t ow = 0; ow < p.out[2]; ++ow) {
                const int64_t w0 = start(ow, p.in[2], p.out[2]), w1 = end(ow, p.in[2], p.out[2]);
                float best = -__builtin_inff();
                int64_t best_index = (d0 * p.in[1] + h0) * p.in[2] + w0;
                for (int64_t id = d0; id < d1; ++id)
                  for (int64_t ih = h0; ih < h1; ++ih)
                    for (int64_t iw = w0; iw < w1; ++iw) {
                      const int64_t index = (id * p.in[1] + ih) * p.in[2] + iw;
                      const float v = xp[index];
                      if (v > best || v != v) {
                        best = v;
                        best_index = index;
                      }
                    }
                const int64_t o = plane * vol_out + (od * p.out[1] + oh) * p.out[2] + ow;
                y[o] = best;
                if (indices) indices[o] = best_index;
              }
            }
          }
        }
      });
}

}  // namespace aotc::rt
