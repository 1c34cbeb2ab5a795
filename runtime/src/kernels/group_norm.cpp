// group_norm.cpp - group normalisation (and instance normalisation, groups == c) over
// N x C x spatial: per image and group, the mean and biased variance of its
// (c / groups) x spatial contiguous values, then one scale and shift per channel.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cmath>

#include "kernel_util.h"

namespace aotc::rt {

void group_norm_f32(ThreadPool& pool, const GroupNormParams& p, const float* x, const float* gamma,
                    const float* beta, float* y) {
  if (p.n <= 0 || p.c <= 0 || p.groups <= 0 || p.spatial <= 0) return;
  const int64_t channels = p.c / p.groups;
  const int64_t count = channels * p.spatial;
  const bool clamp = detail::has_clamp(p.clamp_lo, p.clamp_hi);
  // Two passes (mean, then the centred squares): no cancellation as in E[x^2] - E[x]^2.
  pool.parallel_for(p.n * p.groups, detail::min_chunk_for(3 * count), [&](int64_t i0, int64_t i1) {
    for (int64_t item = i0; item < i1; ++item) {
      const float* xg = x + item * count;
      float* yg = y + item * count;
      const float mean = detail::sum_contiguous(xg, count) / static_cast<float>(count);
      const float var = detail::centred_square_sum(xg, count, mean) / static_cast<float>(count);
      const float rstd = 1.0f / std::sqrt(var + p.eps);
      const int64_t c0 = (item % p.groups) * channels;
      for (int64_t ch = 0; ch < channels; ++ch) {
        // (x - mean) * scale + beta rather than x * scale + (beta - mean * scale): the
        // latter loses the low bits of x when the mean is large against the spread.
        const float scale = rstd * (gamma ? gamma[c0 + ch] : 1.0f);
        const float shift = beta ? beta[c0 + ch] : 0.0f;
        const float* xp = xg + ch * p.spatial;
        float* yp = yg + ch * p.spatial;
        for (int64_t s = 0; s < p.spatial; ++s) yp[s] = (xp[s] - mean) * scale + shift;
        if (clamp) detail::clamp_row(yp, p.spatial, p.clamp_lo, p.clamp_hi);
      }
    }
  });
}

}  // namespace aotc::rt
