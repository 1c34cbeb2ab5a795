// kernels/normalization.h - the normalisation kernels: channel affine (batch norm), softmax, layer norm.
#pragma once

#include <cstdint>

namespace aotc::rt {

class ThreadPool;

// ---------------------------------------------------------------- normalisation
// y[n, c, s] = x[n, c, s] * scale[c] + shift[c] (batch norm in eval with folded stats),
// then clamped.
void channel_affine_f32(ThreadPool& pool, int64_t n, int64_t c, int64_t spatial, const float* scale,
                        const float* shift, float clamp_lo, float clamp_hi, const float* x, float* y);

// Softmax over the middle axis of an outer x axis x inner layout; log_softmax when
// log is true. Numerically stable (subtracts the maximum).
void softmax_f32(ThreadPool& pool, int64_t outer, int64_t axis, int64_t inner, bool log, const float* x,
                 float* y);

// layer_norm: each of `rows` rows of `cols` contiguous values is normalised to zero mean
// and unit variance (biased variance, as torch), then scaled by gamma[cols] and shifted by
// beta[cols] (either may be null). mean and rstd (rows values each) are written when not
// null (native_layer_norm's second and third outputs).
struct LayerNormParams {
  int64_t rows = 0, cols = 0;
  float eps = 1e-5f;
};
void layer_norm_f32(ThreadPool& pool, const LayerNormParams& p, const float* x, const float* gamma,
                    const float* beta, float* y, float* mean, float* rstd);

}  // namespace aotc::rt
