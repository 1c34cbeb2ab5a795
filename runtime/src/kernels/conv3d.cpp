// conv3d.cpp - 3-d convolution (NCDHW): vol2col of one image-group into scratch, then one
// GEMM; 1x1x1 convolutions with stride 1 and no padding multiply the input directly.
// (2-d convolutions have their own kernel, conv2d.cpp, with a depthwise path.)
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

// col[r, (od, oh, ow)] = x[ci, od*sd - pd + kd*dd, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw]
// for r = (ci, kd, kh, kw); zero where the tap falls into the padding.
void vol2col(ThreadPool& pool, const ConvNdParams& p, const float* xg, int64_t channels, float* col) {
  const int64_t vol_in = conv_nd_volume(p.in), vol_out = conv_nd_volume(p.out);
  const int64_t taps = conv_nd_volume(p.kernel);
  const int64_t row_len = p.out[2];
  pool.parallel_for(channels * taps, detail::min_chunk_for(vol_out), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ci = r / taps, t = r % taps;
      const int64_t kd = t / (p.kernel[1] * p.kernel[2]);
      const int64_t kh = (t / p.kernel[2]) % p.kernel[1];
      const int64_t kw = t % p.kernel[2];
      const float* xp = xg + ci * vol_in;
      float* dst = col + r * vol_out;
      const int64_t off = kw * p.dilation[2] - p.pad[2];
      const detail::TapRange cols = detail::valid_outputs(off, p.stride[2], p.out[2], p.in[2]);
      for (int64_t od = 0; od < p.out[0]; ++od) {
        const int64_t id = od * p.stride[0] - p.pad[0] + kd * p.dilation[0];
        for (int64_t oh = 0; oh < p.out[1]; ++oh, dst += row_len) {
          const int64_t ih = oh * p.stride[1] - p.pad[1] + kh * p.dilation[1];
          if (id < 0 || id >= p.in[0] || ih < 0 || ih >= p.in[1]) {
            std::memset(dst, 0, static_cast<size_t>(row_len) * sizeof(float));
            continue;
          }
          const float* src = xp + (id * p.in[1] + ih) * p.in[2];
          for (int64_t ow = 0; ow < cols.lo; ++ow) dst[ow] = 0.0f;
          if (p.stride[2] == 1) {
            for (int64_t ow = cols.lo; ow < cols.hi; ++ow) dst[ow] = src[ow + off];
          } else {
            for (int64_t ow = cols.lo; ow < cols.hi; ++ow) dst[ow] = src[ow * p.stride[2] + off];
          }
          for (int64_t ow = cols.hi; ow < row_len; ++ow) dst[ow] = 0.0f;
        }
      }
    }
  });
}

}  // namespace

void conv3d_f32(ThreadPool& pool, const ConvNdParams& p, const float* x, const float* w, const float* bias,
                float* y, float* scratch) {
  if (p.n <= 0 || p.c_out <= 0 || p.groups <= 0 || conv_nd_volume(p.out) <= 0) return;
  const int64_t cin_g = p.c_in / p.groups, cout_g = p.c_out / p.groups;
  const int64_t vol_in = conv_nd_volume(p.in), vol_out = conv_nd_volume(p.out);
  const GemmParams g = conv3d_gemm(p);
  const bool pointwise = conv3d_is_pointwise(p);
  for (int64_t item = 0; item < p.n * p.groups; ++item) {
    const int64_t img = item / p.groups, grp = item % p.groups;
    const float* xg = x + (img * p.c_in + grp * cin_g) * vol_in;
    const float* wg = w + grp * cout_g * g.k;
    const float* bg = p.has_bias ? bias + grp * cout_g : nullptr;
    float* yg = y + (img * p.c_out + grp * cout_g) * vol_out;
    if (pointwise) {
      gemm_f32(pool, g, wg, xg, bg, yg);
    } else {
      vol2col(pool, p, xg, cin_g, scratch);
      gemm_f32(pool, g, wg, scratch, bg, yg);
    }
  }
}

}  // namespace aotc::rt
