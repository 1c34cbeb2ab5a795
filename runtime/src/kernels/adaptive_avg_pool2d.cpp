// adaptive_avg_pool2d.cpp - adaptive average pooling over NCHW planes; output bin i
// covers input [floor(i * in / out), ceil((i + 1) * in / out)), as in torch.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

inline int64_t bin_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
inline int64_t bin_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

}  // namespace

void adaptive_avg_pool2d_f32(ThreadPool& pool, int64_t n, int64_t c, int64_t h_in, int64_t w_in,
                             int64_t h_out, int64_t w_out, const float* x, float* y) {
  if (n <= 0 || c <= 0 || h_out <= 0 || w_out <= 0) return;
  const int64_t hw_in = h_in * w_in, hw_out = h_out * w_out;
  // Each plane reads all of its input once, whatever the bins are.
  const int64_t work = hw_in > hw_out ? hw_in : hw_out;
  pool.parallel_for(n * c, detail::min_chunk_for(work), [&](int64_t q0, int64_t q1) {
    for (int64_t plane = q0; plane < q1; ++plane) {
      const float* xp = x + plane * hw_in;
      float* yp = y + plane * hw_out;
      if (hw_out == 1) {  // global average pooling
        yp[0] = detail::sum_contiguous(xp, hw_in) / static_cast<float>(hw_in);
        continue;
      }
      for (int64_t oh = 0; oh < h_out; ++oh) {
        const int64_t ih0 = bin_start(oh, h_in, h_out), ih1 = bin_end(oh, h_in, h_out);
        for (int64_t ow = 0; ow < w_out; ++ow) {
          const int64_t iw0 = bin_start(ow, w_in, w_out), iw1 = bin_end(ow, w_in, w_out);
          float sum = 0.0f;
          for (int64_t ih = ih0; ih < ih1; ++ih)
            for (int64_t iw = iw0; iw < iw1; ++iw) sum += xp[ih * w_in + iw];
          yp[oh * w_out + ow] = sum / static_cast<float>((ih1 - ih0) * (iw1 - iw0));
        }
      }
    }
  });
}

}  // namespace aotc::rt
