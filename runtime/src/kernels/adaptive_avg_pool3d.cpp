// adaptive_avg_pool3d.cpp - adaptive average pooling over N x C x D x H x W planes; output
// bin i of a dim covers input [floor(i * in / out), ceil((i + 1) * in / out)), as in torch.
// (adaptive_avg_pool2d.cpp is the 2-d kernel; this one serves 3-d inputs.)
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {

void adaptive_avg_pool3d_f32(ThreadPool& pool, const AdaptivePoolParams& p, const float* x, float* y) {
  if (p.n <= 0 || p.c <= 0 || p.out[0] <= 0 || p.out[1] <= 0 || p.out[2] <= 0) return;
  const int64_t vol_in = p.in[0] * p.in[1] * p.in[2], vol_out = p.out[0] * p.out[1] * p.out[2];
  auto start = [](int64_t i, int64_t in, int64_t out) { return (i * in) / out; };
  auto end = [](int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; };
  pool.parallel_for(
      p.n * p.c, detail::min_chunk_for(vol_in > vol_out ? vol_in : vol_out), [&](int64_t q0, int64_t q1) {
        for (int64_t plane = q0; plane < q1; ++plane) {
          const float* xp = x + plane * vol_in;
          float* yp = y + plane * vol_out;
          if (vol_out == 1) {  // global average pooling
            yp[0] = detail::sum_contiguous(xp, vol_in) / static_cast<float>(vol_in);
            continue;
          }
          for (int64_t od = 0; od < p.out[0]; ++od) {
            const int64_t d0 = start(od, p.in[0], p.out[0]), d1 = end(od, p.in[0], p.out[0]);
            for (int64_t oh = 0; oh < p.out[1]; ++oh) {
              const int64_t h0 = start(oh, p.in[1], p.out[1]), h1 = end(oh, p.in[1], p.out[1]);
              for (int64_t ow = 0; ow < p.out[2]; ++ow) {
                const int64_t w0 = start(ow, p.in[2], p.out[2]), w1 = end(ow, p.in[2], p.out[2]);
                float sum = 0.0f;
                for (int64_t id = d0; id < d1; ++id)
                  for (int64_t ih = h0; ih < h1; ++ih)
                    for (int64_t iw = w0; iw < w1; ++iw) sum += xp[(id * p.in[1] + ih) * p.in[2] + iw];
                yp[(od * p.out[1] + oh) * p.out[2] + ow] =
                    sum / static_cast<float>((d1 - d0) * (h1 - h0) * (w1 - w0));
              }
            }
          }
        }
      });
}

}  // namespace aotc::rt
