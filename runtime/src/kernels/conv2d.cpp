// conv2d.cpp - 2-D convolution (NCHW) in two forms:
//   depthwise (groups == c_in == c_out): narrow planes a row per vector on AVX-512
//     (conv2d_depthwise_rows.cpp), else over 8-channel blocks (conv2d_depthwise_c8.cpp)
//     where they fit the thread scratch, else by tiles of output rows, here;
//   at most 4 input channels (RGB stems) on AVX-512: from phase planes of the input
//     (conv2d_few_channels.cpp);
//   pointwise with many input channels on CPUs without AVX-512: Eigen's GEMM on the input
//     as it is (conv2d_pointwise_on_eigen says which and why);
//   otherwise: an implicit GEMM per image and group (conv2d_gemm.cpp).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

using detail::TapRange;

// Depthwise through tiles of output rows. A plane's input rows for a tile are copied,
// zero-padded, into a stack buffer split into stride_h x stride_w phase planes (padded
// position mod stride), so that every tap (i, j) reads one contiguous run: output (oh, ow)
// of the tile, flattened as oh * wq + ow over wq >= w_out columns, reads phase plane
// (i * dil_h % s_h, j * dil_w % s_w) at that same flat index plus a per-tap offset. The
// tile is then computed in blocks of kLanes flat positions accumulated in registers over
// all taps; the columns past w_out are computed and dropped. Per-row work (index setup,
// short loops) was what made the previous per-row, per-tap loops slow on small planes,
// where depthwise was then the largest part of mobilenet_v2's run (bench/results_cpu.md).
constexpr int64_t kLanes = 16;
constexpr int64_t kTileFloats = 6144;  // 24 KiB of stack per thread

struct DepthwiseTiling {
  int64_t wq = 0;     // columns of a phase plane (and of the flat output tile)
  int64_t extra = 0;  // phase rows beyond the tile's output rows (taps reaching down)
  int64_t rows = 0;   // output rows per tile; 0: the plane is too wide for the buffer
};

DepthwiseTiling depthwise_tiling(const Conv2dParams& p) {
  DepthwiseTiling t;
  t.wq = p.w_out + ((p.kernel_w - 1) * p.dilation_w) / p.stride_w;
  t.extra = ((p.kernel_h - 1) * p.dilation_h) / p.stride_h;
  const int64_t phases = p.stride_h * p.stride_w;
  // phases * (rows + extra) * wq (input) + rows * wq (output) + slack for the last
  // block's overhang and for garbage columns reading past their phase plane.
  const int64_t fixed = phases * t.extra * t.wq + t.wq + 4 * kLanes;
  const int64_t per_row = (phases + 1) * t.wq;
  if (p.kernel_h * p.kernel_w > 64 || fixed + per_row > kTileFloats) return t;
  t.rows = detail::min_i64(p.h_out, (kTileFloats - fixed) / per_row);
  return t;
}

void conv2d_depthwise_tiles(ThreadPool& pool, const Conv2dParams& p, const DepthwiseTiling& tiling,
                            const float* x, const float* w, const float* bias, float* y) {
  const int64_t hw_in = p.h_in * p.w_in, hw_out = p.h_out * p.w_out;
  const int64_t taps = p.kernel_h * p.kernel_w;
  const int64_t sh = p.stride_h, sw = p.stride_w, wq = tiling.wq;
  const int64_t rq = tiling.rows + tiling.extra;  // rows of a phase plane
  const int64_t plane_floats = rq * wq;
  const int64_t phases = sh * sw;
  int64_t tap_offset[64];  // the same for every plane and tile
  for (int64_t i = 0; i < p.kernel_h; ++i)
    for (int64_t j = 0; j < p.kernel_w; ++j) {
      const int64_t qr = i * p.dilation_h, qc = j * p.dilation_w;
      tap_offset[i * p.kernel_w + j] = ((qr % sh) * sw + qc % sw) * plane_floats + (qr / sh) * wq + qc / sw;
    }
  const bool clamp = detail::has_clamp(p.clamp_lo, p.clamp_hi);
  pool.parallel_for(p.n * p.c_in, detail::min_chunk_for(hw_out * taps), [&](int64_t q0, int64_t q1) {
    // Zeroed once so that the columns past w_out never compute on indeterminate values.
    alignas(64) float buf[kTileFloats] = {};
    float* in = buf;
    float* out = buf + phases * plane_floats + wq + 2 * kLanes;
    for (int64_t plane = q0; plane < q1; ++plane) {
      const int64_t ch = plane % p.c_in;
      const float* xp = x + plane * hw_in;
      const float* wp = w + ch * taps;
      float* yp = y + plane * hw_out;
      const float b = p.has_bias ? bias[ch] : 0.0f;
      for (int64_t oh0 = 0; oh0 < p.h_out; oh0 += tiling.rows) {
        const int64_t rows = detail::min_i64(tiling.rows, p.h_out - oh0);
        for (int64_t pr = 0; pr < sh; ++pr)
          for (int64_t pc = 0; pc < sw; ++pc) {
            float* ph = in + (pr * sw + pc) * plane_floats;
            const int64_t col_off = pc - p.pad_w;  // input column of phase column c: c * sw + col_off
            const TapRange cols = detail::valid_outputs(col_off, sw, wq, p.w_in);
            for (int64_t r = 0; r < rows + tiling.extra; ++r) {
              float* dst = ph + r * wq;
              const int64_t ih = (oh0 + r) * sh + pr - p.pad_h;
              if (ih < 0 || ih >= p.h_in) {
                for (int64_t c = 0; c < wq; ++c) dst[c] = 0.0f;
                continue;
              }
              const float* src = xp + ih * p.w_in;
              for (int64_t c = 0; c < cols.lo; ++c) dst[c] = 0.0f;
              for (int64_t c = cols.lo; c < cols.hi; ++c) dst[c] = src[c * sw + col_off];
              for (int64_t c = cols.hi; c < wq; ++c) dst[c] = 0.0f;
            }
          }
        // Rows of a short last tile leave stale data in the phase planes; they feed only
        // flat positions past rows * wq, which are not stored.
        const int64_t flat = rows * wq;
        for (int64_t t0 = 0; t0 < flat; t0 += kLanes) {
          float acc[kLanes];
          for (int64_t l = 0; l < kLanes; ++l) acc[l] = b;
          for (int64_t t = 0; t < taps; ++t) {
            const float* src = in + tap_offset[t] + t0;
            const float wv = wp[t];
            for (int64_t l = 0; l < kLanes; ++l) acc[l] += wv * src[l];
          }
          for (int64_t l = 0; l < kLanes; ++l) out[t0 + l] = acc[l];
        }
        for (int64_t r = 0; r < rows; ++r) {
          float* yrow = yp + (oh0 + r) * p.w_out;
          const float* orow = out + r * wq;
          for (int64_t c = 0; c < p.w_out; ++c) yrow[c] = orow[c];
          if (clamp) detail::clamp_row(yrow, p.w_out, p.clamp_lo, p.clamp_hi);
        }
      }
    }
  });
}

// The general form, for rows too wide for the stack buffers.
void conv2d_depthwise_direct(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w,
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

}  // namespace

void conv2d_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w, const float* bias,
                const float* residual, float* y, float* scratch) {
  if (p.n <= 0 || p.c_out <= 0 || p.h_out <= 0 || p.w_out <= 0 || p.groups <= 0) return;
  const bool depthwise = conv2d_is_depthwise(p);
  if (residual && depthwise) {
    // The depthwise kernels have no residual epilogue (the compiler fuses none into them):
    // the convolution unclamped, then the residual and the clamp in one pass.
    Conv2dParams q = p;
    q.clamp_lo = -__builtin_inff();
    q.clamp_hi = __builtin_inff();
    conv2d_f32(pool, q, x, w, bias, nullptr, y, scratch);
    const int64_t total = p.n * p.c_out * p.h_out * p.w_out;
    const bool clamp = detail::has_clamp(p.clamp_lo, p.clamp_hi);
    pool.parallel_for(total, 1 << 14, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) y[i] += residual[i];
      if (clamp) detail::clamp_row(y + i0, i1 - i0, p.clamp_lo, p.clamp_hi);
    });
    return;
  }
  if (depthwise) {
    if (detail::conv2d_depthwise_rows_applies(p)) {
      detail::conv2d_depthwise_rows(pool, p, x, w, bias, y);
      return;
    }
    if (detail::depthwise_c8_fits(p, pool.thread_scratch_bytes())) {
      detail::conv2d_depthwise_c8(pool, p, x, w, bias, y);
      return;
    }
    const DepthwiseTiling tiling = depthwise_tiling(p);
    if (tiling.rows > 0)
      conv2d_depthwise_tiles(pool, p, tiling, x, w, bias, y);
    else
      conv2d_depthwise_direct(pool, p, x, w, bias, y);
    return;
  }

  if (detail::conv2d_pointwise_few_rows_applies(p)) {
    detail::conv2d_pointwise_few_rows_f32(pool, p, x, w, bias, residual, y);
    return;
  }
  if (detail::conv2d_few_channels_applies(p, pool.thread_scratch_bytes())) {
    detail::conv2d_few_channels_f32(pool, p, x, w, bias, residual, y);
    return;
  }
  // With AVX-512 tiles every 1x1 layer is faster on the implicit GEMM (kernels/conv.h).
  if (!conv2d_pointwise_on_eigen(p) || detail::use_avx512()) {
    detail::conv2d_gemm_f32(pool, p, x, w, bias, residual, y, scratch);
    return;
  }

  // Pointwise through Eigen's GEMM: the input image-group already is the dense
  // c_in/groups x hw_out right-hand side.
  const int64_t cin_g = p.c_in / p.groups, cout_g = p.c_out / p.groups;
  const int64_t hw_in = p.h_in * p.w_in, hw_out = p.h_out * p.w_out;
  GemmParams g;
  g.m = cout_g;
  g.n = hw_out;
  g.k = cin_g;
  g.lda = cin_g;
  g.ldb = hw_out;
  g.ldc = hw_out;
  g.bias_kind = p.has_bias ? BiasKind::PerRow : BiasKind::None;
  g.clamp_lo = p.clamp_lo;
  g.clamp_hi = p.clamp_hi;
  g.ldr = hw_out;
  const int64_t items = p.n * p.groups;
  // The product of one image-group; its residual is at the same place in y's layout.
  auto item_params = [&](int64_t item, const float*& xg, const float*& wg, const float*& bg, float*& yg) {
    const int64_t img = item / p.groups, grp = item % p.groups;
    xg = x + (img * p.c_in + grp * cin_g) * hw_in;
    wg = w + grp * cout_g * cin_g;
    bg = p.has_bias ? bias + grp * cout_g : nullptr;
    const int64_t y_offset = (img * p.c_out + grp * cout_g) * hw_out;
    yg = y + y_offset;
    GemmParams gi = g;
    gi.residual = residual ? residual + y_offset : nullptr;
    return gi;
  };
  const double flops =
      2.0 * static_cast<double>(cout_g) * static_cast<double>(hw_out) * static_cast<double>(cin_g);
  if (pool.size() > 1 && items >= 2 * pool.size()) {
    const int64_t min_chunk = static_cast<int64_t>(detail::kGemmMinFlopsPerRange / flops) + 1;
    pool.parallel_for(items, min_chunk, [&](int64_t i0, int64_t i1, int thread) {
      for (int64_t item = i0; item < i1; ++item) {
        const float *xg, *wg, *bg;
        float* yg;
        const GemmParams gi = item_params(item, xg, wg, bg, yg);
        detail::gemm_block_f32(gi, 0, gi.m, 0, gi.n, wg, xg, bg, yg, pool.thread_scratch(thread),
                               pool.thread_scratch_bytes());
      }
    });
  } else {
    for (int64_t item = 0; item < items; ++item) {
      const float *xg, *wg, *bg;
      float* yg;
      const GemmParams gi = item_params(item, xg, wg, bg, yg);
      gemm_f32(pool, gi, wg, xg, bg, yg);
    }
  }
}

}  // namespace aotc::rt
