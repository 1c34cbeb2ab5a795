// max_unpool.cpp - max unpooling (aten::max_unpool2d / max_unpool3d): scatter each input
// value to the flat position its index names within the output plane, zeros elsewhere.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {

void max_unpool_f32(ThreadPool& pool, int64_t planes, int64_t in_volume, int64_t out_volume, const float* x,
                    const int64_t* indices, float* y) {
  if (planes <= 0 || out_volume <= 0) return;
  pool.parallel_for(planes, detail::min_chunk_for(in_volume + out_volume), [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      float* yp = y + q * out_volume;
      for (int64_t i = 0; i < out_volume; ++i) yp[i] = 0.0f;
      const float* xp = x + q * in_volume;
      const int64_t* ip = indices + q * in_volume;
      for (int64_t i = 0; i < in_volume; ++i) {
        const int64_t at = ip[i];
        if (at >= 0 && at < out_volume) yp[at] = xp[i];
      }
    }
  });
}

}  // namespace aotc::rt
