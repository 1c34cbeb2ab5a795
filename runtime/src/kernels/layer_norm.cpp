// layer_norm.cpp - normalises each contiguous row to zero mean and unit variance, then
// applies the optional per-column affine (gamma, beta). Two passes over a row (mean, then
// the centred sum of squares) instead of E[x^2] - E[x]^2, which cancels badly when the
// mean is large against the spread; the row is hot in cache for the second pass.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cmath>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

void normalise_row(const LayerNormParams& p, const float* x, const float* gamma, const float* beta, float* y,
                   float& mean_out, float& rstd_out) {
  const int64_t n = p.cols;
  const float mean = detail::sum_contiguous(x, n) / static_cast<float>(n);
  const float var = detail::centred_square_sum(x, n, mean) / static_cast<float>(n);
  const float rstd = 1.0f / std::sqrt(var + p.eps);
  mean_out = mean;
  rstd_out = rstd;
  if (gamma && beta) {
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd * gamma[j] + beta[j];
  } else if (gamma) {
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd * gamma[j];
  } else if (beta) {
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd + beta[j];
  } else {
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd;
  }
}

}  // namespace

void layer_norm_f32(ThreadPool& pool, const LayerNormParams& p, const float* x, const float* gamma,
                    const float* beta, float* y, float* mean, float* rstd) {
  if (p.rows <= 0 || p.cols <= 0) return;
  pool.parallel_for(p.rows, detail::min_chunk_for(p.cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float m, s;
      normalise_row(p, x + r * p.cols, gamma, beta, y + r * p.cols, m, s);
      if (mean) mean[r] = m;
      if (rstd) rstd[r] = s;
    }
  });
}

}  // namespace aotc::rt
