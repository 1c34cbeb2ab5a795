// conv2d.cpp - 2-D convolution (NCHW) in three forms:
//   pointwise (1x1, stride 1, no padding): the input already is the GEMM operand;
//   depthwise (groups == c_in == c_out): direct loops over output rows;
//   otherwise: im2col of one image-group into scratch, then one GEMM.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

using detail::TapRange;

void conv2d_depthwise(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w,
                      const float* bias, float* y) {
  const int64_t hw_in = p.h_in * p.w_in, hw_out = p.h_out * p.w_out;
  const int64_t taps = p.kernel_h * p.kernel_w;
  const bool clamp = detail::has_clamp(p.clamp_lo, p.clamp_hi);
  pool.parallel_for(p.n * p.c_in, detail::min_chunk_for(hw_out * taps), [&](int64_t q0, int64_t q1) {
    for (int64_t plane = q0; plane < q1; ++plane) {
      const int64_t ch = plane % p.c_in;
      const float* xp = x + plane * hw_in;
      const float* wp = w + ch * taps;
      float* yp = y + plane * hw_out;
      const float b = p.has_bias ? bias[ch] : 0.0f;
      for (int64_t oh = 0; oh < p.h_out; ++oh) {
        float* yrow = yp + oh * p.w_out;
        for (int64_t ow = 0; ow < p.w_out; ++ow) yrow[ow] = b;
        // Accumulate one kernel tap at a time over the whole output row: the inner loop
        // is a contiguous axpy for stride 1, which vectorises.
        const int64_t ih0 = oh * p.stride_h - p.pad_h;
        const TapRange rows = detail::valid_taps(ih0, p.dilation_h, p.kernel_h, p.h_in);
        for (int64_t i = rows.lo; i < rows.hi; ++i) {
          const float* xrow = xp + (ih0 + i * p.dilation_h) * p.w_in;
          for (int64_t j = 0; j < p.kernel_w; ++j) {
            const float wv = wp[i * p.kernel_w + j];
            const int64_t off = j * p.dilation_w - p.pad_w;
            const TapRange cols = detail::valid_outputs(off, p.stride_w, p.w_out, p.w_in);
            if (p.stride_w == 1) {
              for (int64_t ow = cols.lo; ow < cols.hi; ++ow) yrow[ow] += wv * xrow[ow + off];
            } else {
              for (int64_t ow = cols.lo; ow < cols.hi; ++ow) yrow[ow] += wv * xrow[ow * p.stride_w + off];
            }
          }
        }
        if (clamp) detail::clamp_row(yrow, p.w_out, p.clamp_lo, p.clamp_hi);
      }
    }
  });
}

// col[r, oh * w_out + ow] = x[ci, oh*sh - ph + i*dh, ow*sw - pw + j*dw] for r = (ci, i, j),
// zero where the tap falls into the padding.
void im2col(ThreadPool& pool, const Conv2dParams& p, const float* xg, int64_t channels, float* col) {
  const int64_t hw_in = p.h_in * p.w_in, hw_out = p.h_out * p.w_out;
  const int64_t taps = p.kernel_h * p.kernel_w;
  pool.parallel_for(channels * taps, detail::min_chunk_for(hw_out), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ci = r / taps, i = (r % taps) / p.kernel_w, j = r % p.kernel_w;
      const float* xp = xg + ci * hw_in;
      float* dst_plane = col + r * hw_out;
      const int64_t off = j * p.dilation_w - p.pad_w;
      const TapRange cols = detail::valid_outputs(off, p.stride_w, p.w_out, p.w_in);
      for (int64_t oh = 0; oh < p.h_out; ++oh) {
        float* dst = dst_plane + oh * p.w_out;
        const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
        if (ih < 0 || ih >= p.h_in) {
          std::memset(dst, 0, static_cast<size_t>(p.w_out) * sizeof(float));
          continue;
        }
        const float* src = xp + ih * p.w_in;
        for (int64_t ow = 0; ow < cols.lo; ++ow) dst[ow] = 0.0f;
        if (p.stride_w == 1) {  // a plain loop: rows are short, a memcpy call costs more
          for (int64_t ow = cols.lo; ow < cols.hi; ++ow) dst[ow] = src[ow + off];
        } else {
          for (int64_t ow = cols.lo; ow < cols.hi; ++ow) dst[ow] = src[ow * p.stride_w + off];
        }
        for (int64_t ow = cols.hi; ow < p.w_out; ++ow) dst[ow] = 0.0f;
      }
    }
  });
}

}  // namespace

void conv2d_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w, const float* bias,
                float* y, float* scratch) {
  if (p.n <= 0 || p.c_out <= 0 || p.h_out <= 0 || p.w_out <= 0 || p.groups <= 0) return;
  const bool pointwise = p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                         p.pad_h == 0 && p.pad_w == 0;
  const bool depthwise = p.groups == p.c_in && p.groups == p.c_out && p.groups > 1;
  if (depthwise) {
    conv2d_depthwise(pool, p, x, w, bias, y);
    return;
  }

  const int64_t cin_g = p.c_in / p.groups, cout_g = p.c_out / p.groups;
  const int64_t hw_in = p.h_in * p.w_in, hw_out = p.h_out * p.w_out;
  const int64_t depth = cin_g * p.kernel_h * p.kernel_w;
  // Per image-group: y_g (cout_g x hw_out) = w_g (cout_g x depth) * col (depth x hw_out).
  GemmParams g;
  g.m = cout_g;
  g.n = hw_out;
  g.k = depth;
  g.lda = depth;
  g.ldb = hw_out;
  g.ldc = hw_out;
  g.bias_kind = p.has_bias ? BiasKind::PerRow : BiasKind::None;
  g.clamp_lo = p.clamp_lo;
  g.clamp_hi = p.clamp_hi;
  const int64_t items = p.n * p.groups;
  auto item_ptrs = [&](int64_t item, const float*& xg, const float*& wg, const float*& bg, float*& yg) {
    const int64_t img = item / p.groups, grp = item % p.groups;
    xg = x + (img * p.c_in + grp * cin_g) * hw_in;
    wg = w + grp * cout_g * depth;
    bg = p.has_bias ? bias + grp * cout_g : nullptr;
    yg = y + (img * p.c_out + grp * cout_g) * hw_out;
  };

  if (pointwise) {
    // The input image-group is already the dense depth x hw_out right-hand side.
    const double flops =
        2.0 * static_cast<double>(cout_g) * static_cast<double>(hw_out) * static_cast<double>(depth);
    if (pool.size() > 1 && items >= 2 * pool.size()) {
      const int64_t min_chunk = static_cast<int64_t>(detail::kGemmMinFlopsPerRange / flops) + 1;
      pool.parallel_for(items, min_chunk, [&](int64_t i0, int64_t i1, int thread) {
        for (int64_t item = i0; item < i1; ++item) {
          const float *xg, *wg, *bg;
          float* yg;
          item_ptrs(item, xg, wg, bg, yg);
          detail::gemm_block_f32(g, 0, g.m, 0, g.n, wg, xg, bg, yg, pool.thread_scratch(thread),
                                 pool.thread_scratch_bytes());
        }
      });
    } else {
      for (int64_t item = 0; item < items; ++item) {
        const float *xg, *wg, *bg;
        float* yg;
        item_ptrs(item, xg, wg, bg, yg);
        gemm_f32(pool, g, wg, xg, bg, yg);
      }
    }
    return;
  }

  // One scratch buffer (conv2d_scratch_bytes): image-groups go one after another, each
  // parallel inside its im2col and its GEMM.
  for (int64_t item = 0; item < items; ++item) {
    const float *xg, *wg, *bg;
    float* yg;
    item_ptrs(item, xg, wg, bg, yg);
    im2col(pool, p, xg, cin_g, scratch);
    gemm_f32(pool, g, wg, scratch, bg, yg);
  }
}

}  // namespace aotc::rt
