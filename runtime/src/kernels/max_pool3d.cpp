// max_pool3d.cpp - max pooling over N x C x D x H x W (also 1-d and 2-d pooling that needs
// the argmax indices, with D = H = 1 or D = 1). Padded cells never win; NaN propagates; the
// index is that of the first maximum in window order (d, h, w), or of the last NaN, as torch.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

// Values only: one kernel tap at a time over a whole output row, which vectorises for
// stride 1 (the order of the taps per output is the window order either way).
void max_row(const Pool3dParams& p, const float* xp, int64_t od, int64_t oh, float* yrow) {
  for (int64_t ow = 0; ow < p.out[2]; ++ow) yrow[ow] = -__builtin_inff();
  const int64_t id0 = od * p.stride[0] - p.pad[0], ih0 = oh * p.stride[1] - p.pad[1];
  const detail::TapRange ds = detail::valid_taps(id0, p.dilation[0], p.kernel[0], p.in[0]);
  const detail::TapRange hs = detail::valid_taps(ih0, p.dilation[1], p.kernel[1], p.in[1]);
  for (int64_t kd = ds.lo; kd < ds.hi; ++kd)
    for (int64_t kh = hs.lo; kh < hs.hi; ++kh) {
      const float* xrow = xp + ((id0 + kd * p.dilation[0]) * p.in[1] + ih0 + kh * p.dilation[1]) * p.in[2];
      for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
        const int64_t off = kw * p.dilation[2] - p.pad[2];
        const detail::TapRange cols = detail::valid_outputs(off, p.stride[2], p.out[2], p.in[2]);
        if (p.stride[2] == 1) {
          for (int64_t ow = cols.lo; ow < cols.hi; ++ow) yrow[ow] = detail::max_nan(yrow[ow], xrow[ow + off]);
        } else {
          for (int64_t ow = cols.lo; ow < cols.hi; ++ow)
            yrow[ow] = detail::max_nan(yrow[ow], xrow[ow * p.stride[2] + off]);
        }
      }
    }
}

// Values and indices, one output at a time in torch's order.
void max_row_indices(const Pool3dParams& p, const float* xp, int64_t od, int64_t oh, float* yrow,
                     int64_t* irow) {
  const int64_t id0 = od * p.stride[0] - p.pad[0], ih0 = oh * p.stride[1] - p.pad[1];
  const detail::TapRange ds = detail::valid_taps(id0, p.dilation[0], p.kernel[0], p.in[0]);
  const detail::TapRange hs = detail::valid_taps(ih0, p.dilation[1], p.kernel[1], p.in[1]);
  for (int64_t ow = 0; ow < p.out[2]; ++ow) {
    const int64_t iw0 = ow * p.stride[2] - p.pad[2];
    const detail::TapRange ws = detail::valid_taps(iw0, p.dilation[2], p.kernel[2], p.in[2]);
    float best = -__builtin_inff();
    // torch starts from the first valid cell of the window, so an all -inf window still
    // points inside it.
    int64_t best_index = ((id0 + ds.lo * p.dilation[0]) * p.in[1] + ih0 + hs.lo * p.dilation[1]) * p.in[2] +
                         iw0 + ws.lo * p.dilation[2];
    for (int64_t kd = ds.lo; kd < ds.hi; ++kd)
      for (int64_t kh = hs.lo; kh < hs.hi; ++kh) {
        const int64_t row = ((id0 + kd * p.dilation[0]) * p.in[1] + ih0 + kh * p.dilation[1]) * p.in[2];
        for (int64_t kw = ws.lo; kw < ws.hi; ++kw) {
          const int64_t index = row + iw0 + kw * p.dilation[2];
          const float v = xp[index];
          if (v > best || v != v) {
            best = v;
            best_index = index;
          }
        }
      }
    yrow[ow] = best;
    irow[ow] = best_index;
  }
}

}  // namespace

void max_pool3d_f32(ThreadPool& pool, const Pool3dParams& p, const float* x, float* y, int64_t* indices) {
  if (p.n <= 0 || p.c <= 0 || p.out[0] <= 0 || p.out[1] <= 0 || p.out[2] <= 0) return;
  const int64_t vol_in = p.in[0] * p.in[1] * p.in[2], vol_out = p.out[0] * p.out[1] * p.out[2];
  const int64_t taps = p.kernel[0] * p.kernel[1] * p.kernel[2];
  pool.parallel_for(p.n * p.c, detail::min_chunk_for(vol_out * taps), [&](int64_t q0, int64_t q1) {
    for (int64_t plane = q0; plane < q1; ++plane) {
      const float* xp = x + plane * vol_in;
      for (int64_t od = 0; od < p.out[0]; ++od)
        for (int64_t oh = 0; oh < p.out[1]; ++oh) {
          const int64_t o = plane * vol_out + (od * p.out[1] + oh) * p.out[2];
          if (indices)
            max_row_indices(p, xp, od, oh, y + o, indices + o);
          else
            max_row(p, xp, od, oh, y + o);
        }
    }
  });
}

}  // namespace aotc::rt
