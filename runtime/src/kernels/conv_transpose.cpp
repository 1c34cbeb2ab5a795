// conv_transpose.cpp - transposed convolution (1-d, 2-d and 3-d as NCDHW) as GEMM + col2im:
// for each image-group, col = w_g^T x_g holds every input position's contribution to every
// (output channel, kernel tap); col2im then adds each tap's contributions into the output
// positions it reaches. Each output channel is one thread's alone, so no two threads ever
// add into the same value and the result does not depend on the thread count.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

// y_g[co] = bias[co] + sum over taps of col[(co, tap)] placed at out = in * stride - pad +
// tap * dilation (along each dim), then clamped.
void col2im(ThreadPool& pool, const ConvNdParams& p, const float* col, const float* bias, int64_t channels,
            float* yg) {
  const int64_t vol_in = conv_nd_volume(p.in), vol_out = conv_nd_volume(p.out);
  const int64_t taps = conv_nd_volume(p.kernel);
  const bool clamp = detail::has_clamp(p.clamp_lo, p.clamp_hi);
  pool.parallel_for(channels, detail::min_chunk_for(taps * vol_in + vol_out), [&](int64_t c0, int64_t c1) {
    for (int64_t co = c0; co < c1; ++co) {
      float* yp = yg + co * vol_out;
      const float b = bias ? bias[co] : 0.0f;
      for (int64_t i = 0; i < vol_out; ++i) yp[i] = b;
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t kd = t / (p.kernel[1] * p.kernel[2]);
        const int64_t kh = (t / p.kernel[2]) % p.kernel[1];
        const int64_t kw = t % p.kernel[2];
        const float* src = col + (co * taps + t) * vol_in;
        const int64_t off = kw * p.dilation[2] - p.pad[2];
        // Input columns iw whose output column iw * stride + off lies inside the output.
        const detail::TapRange cols = detail::valid_outputs(off, p.stride[2], p.in[2], p.out[2]);
        for (int64_t id = 0; id < p.in[0]; ++id) {
          const int64_t od = id * p.stride[0] - p.pad[0] + kd * p.dilation[0];
          if (od < 0 || od >= p.out[0]) continue;
          for (int64_t ih = 0; ih < p.in[1]; ++ih) {
            const int64_t oh = ih * p.stride[1] - p.pad[1] + kh * p.dilation[1];
            if (oh < 0 || oh >= p.out[1]) continue;
            const float* srow = src + (id * p.in[1] + ih) * p.in[2];
            float* yrow = yp + (od * p.out[1] + oh) * p.out[2];
            if (p.stride[2] == 1) {
              for (int64_t iw = cols.lo; iw < cols.hi; ++iw) yrow[iw + off] += srow[iw];
            } else {
              for (int64_t iw = cols.lo; iw < cols.hi; ++iw) yrow[iw * p.stride[2] + off] += srow[iw];
            }
          }
        }
      }
      if (clamp) detail::clamp_row(yp, vol_out, p.clamp_lo, p.clamp_hi);
    }
  });
}

}  // namespace

void conv_transpose_f32(ThreadPool& pool, const ConvNdParams& p, const float* x, const float* w,
                        const float* bias, float* y, float* scratch) {
  if (p.n <= 0 || p.c_out <= 0 || p.groups <= 0 || conv_nd_volume(p.out) <= 0) return;
  const int64_t cin_g = p.c_in / p.groups, cout_g = p.c_out / p.groups;
  const int64_t vol_in = conv_nd_volume(p.in), vol_out = conv_nd_volume(p.out);
  const GemmParams g = conv_transpose_gemm(p);
  for (int64_t item = 0; item < p.n * p.groups; ++item) {
    const int64_t img = item / p.groups, grp = item % p.groups;
    const float* xg = x + (img * p.c_in + grp * cin_g) * vol_in;
    const float* wg = w + grp * cin_g * g.m;
    gemm_f32(pool, g, wg, xg, nullptr, scratch);
    col2im(pool, p, scratch, p.has_bias ? bias + grp * cout_g : nullptr, cout_g,
           y + (img * p.c_out + grp * cout_g) * vol_out);
  }
}

}  // namespace aotc::rt
