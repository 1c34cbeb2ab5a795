// conv2d_few_channels.cpp - a convolution of at most 4 input channels (an RGB stem: resnet's
// 7x7 stride-2 3 > 64 at 224 x 224) on AVX-512, from the input's phase planes instead of
// packed columns.
//
// Why: the implicit GEMM (conv2d_gemm.cpp) packs one row of columns per tap, c_in * kh * kw
// of them (147 for resnet's stem), each a stride-2 gather over every output position: 1.8M
// floats packed for 118M multiply-adds, and ONNX Runtime ran the stem in two thirds of its
// time (bench/results_cpu.md). Here each thread copies the padded input rows of a strip of
// output rows once, split into stride_h x stride_w phase planes (padded row mod stride_h,
// column mod stride_w), so that for every tap (c, i, j) the outputs of a row read one
// contiguous run of a phase plane: plane (c, i mod s_h, j mod s_w), row oh + i / s_h, from
// column ow + j / s_w. That copy is c_in * s_h * s_w * (rows + reach) * width floats per
// strip, a twelfth of the packed columns for the stem.
//
// The tile: 8 output channels x 32 positions of one output row, 16 zmm accumulators; a tap
// loads two vectors of its phase row and broadcasts each channel's weight (read in place).
// Sums are the implicit GEMM's tiles', in the same order (bias and residual first, then the
// taps in the weights' order, padding as multiplied zeros): the outputs are bit-identical
// but for a last panel of at most 4 positions, which the GEMM sums as dot products.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <utility>

#include "kernel_util.h"

namespace aotc::rt::detail {
namespace {

#if AOTC_KERNELS_AVX2
constexpr int64_t kVec = 16;          // positions a vector
constexpr int kMaxRows = 8;           // output channels a tile
constexpr int64_t kMaxInputs = 4;     // input channels
constexpr int64_t kMaxStride = 2;     // per dimension
constexpr int64_t kMaxTaps = 4 * 64;  // c_in * kh * kw: the tap table
constexpr int64_t kMinStripRows = 2;  // fewer: the copies would outweigh the products

// The phase planes of a strip of output rows: plane (c, a, b) holds the strip's rows plus
// reach_h, each of `width` floats.
struct Planes {
  int64_t reach_h, reach_w;  // extra rows and columns a plane needs beyond the outputs'
  int64_t width;             // w_out rounded up to whole vectors, plus reach_w
  int64_t per_row;           // floats per output row of the strip, all planes
  int64_t fixed;             // floats of the reach_h extra rows, all planes
};

Planes planes_of(const Conv2dParams& p) {
  Planes pl;
  pl.reach_h = (p.kernel_h - 1) / p.stride_h;
  pl.reach_w = (p.kernel_w - 1) / p.stride_w;
  pl.width = ceil_div(p.w_out, kVec) * kVec + pl.reach_w;
  const int64_t planes = p.c_in * p.stride_h * p.stride_w;
  pl.per_row = planes * pl.width;
  pl.fixed = planes * pl.reach_h * pl.width;
  return pl;
}

// Output rows per strip that `floats` of scratch hold.
int64_t strip_rows(const Conv2dParams& p, int64_t floats) {
  const Planes pl = planes_of(p);
  return floats > pl.fixed ? min_i64(p.h_out, (floats - pl.fixed) / pl.per_row) : 0;
}

// Copies the planes of a strip of `rows` output rows (past the last output row too: every
// strip's planes are laid out alike): plane (c, a, b), row u, column v is the padded input
// at row (oh0 + u) * s_h + a, column v * s_w + b (zero outside the image).
// Stride 2 takes every other input column: 16 at a time from two vectors by one permute
// (the scalar strided copy was a seventh of the stem's time, perf).
__attribute__((target("avx512f"))) void fill_planes(const Conv2dParams& p, const Planes& pl, const float* x,
                                                    int64_t oh0, int64_t rows, float* buf) {
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const int64_t sh = p.stride_h, sw = p.stride_w, plane_rows = rows + pl.reach_h;
  float* out = buf;
  for (int64_t c = 0; c < p.c_in; ++c)
    for (int64_t a = 0; a < sh; ++a)
      for (int64_t b = 0; b < sw; ++b)
        for (int64_t u = 0; u < plane_rows; ++u, out += pl.width) {
          const int64_t ih = (oh0 + u) * sh + a - p.pad_h;
          if (ih < 0 || ih >= p.h_in) {
            for (int64_t v = 0; v < pl.width; ++v) out[v] = 0.0f;
            continue;
          }
          const float* row = x + (c * p.h_in + ih) * p.w_in;
          // Column v reads input column v * sw + b - pad_w: inside for v in [v0, v1).
          const int64_t first = b - p.pad_w;
          const int64_t v0 = min_i64(pl.width, first >= 0 ? 0 : ceil_div(-first, sw));
          const int64_t v1 = max_i64(v0, min_i64(pl.width, ceil_div(p.w_in - first, sw)));
          for (int64_t v = 0; v < v0; ++v) out[v] = 0.0f;
          int64_t v = v0;
          if (sw == 1) {
            for (; v + kVec <= v1; v += kVec) _mm512_storeu_ps(out + v, _mm512_loadu_ps(row + v + first));
          } else {
            // Loads columns 2 v + first .. + 31, all inside the row; the odd ones are dropped.
            for (; v + kVec <= v1 && 2 * (v + kVec) + first <= p.w_in; v += kVec) {
              const float* at = row + 2 * v + first;
              _mm512_storeu_ps(
                  out + v, _mm512_permutex2var_ps(_mm512_loadu_ps(at), evens, _mm512_loadu_ps(at + kVec)));
            }
          }
          for (; v < v1; ++v) out[v] = row[v * sw + first];
          for (int64_t v = v1; v < pl.width; ++v) out[v] = 0.0f;
        }
}

// Where a tile's NV vectors of positions are: vector j reads src + j * src_step plus the tap
// offsets and writes its mask[j] positions at y + j * y_step (of each output channel's plane,
// ld apart). Two vectors of one row (steps of a vector), or the last vector of two rows
// (steps of a plane row and an output row): a row of 112 is 3 pairs and a 16-position tail.
struct Vectors {
  const float* src;
  int64_t src_step;
  int64_t y_offset;  // from the tile's first channel plane
  int64_t y_step;
  __mmask16 mask[2];
};

// MR output channels (rows of w, `taps` apart) x NV vectors; y = clamp(bias + residual +
// sum) for the tile's positions.
template <int MR, int NV>
__attribute__((target("avx512f"))) void tile(const float* w, int64_t taps, const int32_t* offsets,
                                             const Vectors& v, const float* bias, const float* res, float* y,
                                             int64_t ld, bool clamp, float lo_v, float hi_v) {
  const __mmask16 kAll = 0xffff;
  __m512 acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NV; ++j) {
      acc[r][j] = bias ? _mm512_set1_ps(bias[r]) : _mm512_setzero_ps();
      if (res)
        acc[r][j] = _mm512_add_ps(acc[r][j],
                                  _mm512_maskz_loadu_ps(v.mask[j], res + r * ld + v.y_offset + j * v.y_step));
    }
  for (int64_t k = 0; k < taps; ++k) {
    const float* s = v.src + offsets[k];
    __m512 b[NV];
    for (int j = 0; j < NV; ++j) b[j] = _mm512_loadu_ps(s + j * v.src_step);
    for (int r = 0; r < MR; ++r) {
      const __m512 wv = _mm512_set1_ps(w[r * taps + k]);
      for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_fmadd_ps(wv, b[j], acc[r][j]);
    }
  }
  const __m512 lo = _mm512_set1_ps(lo_v), hi = _mm512_set1_ps(hi_v);
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NV; ++j) {
      // max/min return their second operand when either is NaN: a NaN result stays NaN.
      const __m512 out =
          clamp ? _mm512_maskz_min_ps(kAll, hi, _mm512_maskz_max_ps(kAll, lo, acc[r][j])) : acc[r][j];
      _mm512_mask_storeu_ps(y + r * ld + v.y_offset + j * v.y_step, v.mask[j], out);
    }
}

using TileFn = void (*)(const float*, int64_t, const int32_t*, const Vectors&, const float*, const float*,
                        float*, int64_t, bool, float, float);

__mmask16 first_n(int64_t n) {
  return static_cast<__mmask16>(n >= kVec ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1u);
}
template <int NV, int... M>
constexpr TileFn tile_fn(int64_t rows, std::integer_sequence<int, M...>) {
  TileFn fn = nullptr;
  ((fn = rows == M + 1 ? tile<M + 1, NV> : fn), ...);
  return fn;
}
#endif

}  // namespace

bool conv2d_few_channels_applies(const Conv2dParams& p, size_t thread_scratch_bytes) {
#if AOTC_KERNELS_AVX2
  if (!use_avx512() || p.groups != 1 || p.c_in < 1 || p.c_in > kMaxInputs || p.dilation_h != 1 ||
      p.dilation_w != 1 || p.stride_h < 1 || p.stride_h > kMaxStride || p.stride_w < 1 ||
      p.stride_w > kMaxStride || p.c_in * p.kernel_h * p.kernel_w > kMaxTaps || p.w_out < kVec ||
      p.c_out < 1 || p.kernel_h < 1 || p.kernel_w < 1)
    return false;
  const int64_t floats = static_cast<int64_t>(thread_scratch_bytes / sizeof(float));
  const int64_t rows = strip_rows(p, floats);
  // Every tap offset fits 32 bits (the strip's buffer does).
  return rows >= min_i64(p.h_out, kMinStripRows) && floats <= INT32_MAX;
#else
  (void)p, (void)thread_scratch_bytes;
  return false;
#endif
}

void conv2d_few_channels_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w,
                             const float* bias, const float* residual, float* y) {
#if AOTC_KERNELS_AVX2
  const Planes pl = planes_of(p);
  const int64_t max_rows = strip_rows(p, static_cast<int64_t>(pool.thread_scratch_bytes() / sizeof(float)));
  if (max_rows <= 0 || p.n <= 0) return;
  // Strips small enough that every thread has two or more (a stem at batch 1 on 16 threads).
  const int64_t per_image = ceil_div(2 * pool.size(), p.n);
  const int64_t rows = max_i64(1, min_i64(max_rows, ceil_div(p.h_out, per_image)));
  const int64_t strips = ceil_div(p.h_out, rows), taps = p.c_in * p.kernel_h * p.kernel_w;
  const int64_t plane_floats = (rows + pl.reach_h) * pl.width;
  // Where tap (c, i, j) of output (0, 0) reads, from the strip's first plane.
  int32_t offsets[kMaxTaps];
  for (int64_t c = 0, k = 0; c < p.c_in; ++c)
    for (int64_t i = 0; i < p.kernel_h; ++i)
      for (int64_t j = 0; j < p.kernel_w; ++j, ++k) {
        const int64_t plane = (c * p.stride_h + i % p.stride_h) * p.stride_w + j % p.stride_w;
        offsets[k] = static_cast<int32_t>(plane * plane_floats + i / p.stride_h * pl.width + j / p.stride_w);
      }
  const auto ints = std::make_integer_sequence<int, kMaxRows>{};
  const TileFn pair = tile_fn<2>(kMaxRows, ints), single = tile_fn<1>(kMaxRows, ints);
  const int64_t last_rows = p.c_out % kMaxRows;
  const TileFn pair_last = last_rows ? tile_fn<2>(last_rows, ints) : nullptr;
  const TileFn single_last = last_rows ? tile_fn<1>(last_rows, ints) : nullptr;
  const bool clamp = has_clamp(p.clamp_lo, p.clamp_hi);
  const int64_t hw = p.h_out * p.w_out;
  // A small call stays on the calling thread: waking the pool would cost more than it saves.
  const double flops = 2.0 * static_cast<double>(p.n * p.c_out * hw) * static_cast<double>(taps);
  const int64_t least = flops < 2.0 * kGemmMinFlopsPerRange ? p.n * strips : 1;
  pool.parallel_pieces(p.n * strips, least, [&](int64_t s0, int64_t s1, int thread) {
    float* buf = reinterpret_cast<float*>(pool.thread_scratch(thread));
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t img = s / strips, oh0 = s % strips * rows, n_rows = min_i64(rows, p.h_out - oh0);
      fill_planes(p, pl, x + img * p.c_in * p.h_in * p.w_in, oh0, rows, buf);
      const float* const bias_m = p.has_bias ? bias : nullptr;
      const int64_t plane0 = img * p.c_out * hw + oh0 * p.w_out;
      // Every output channel group over vectors v.
      const auto channels = [&](const Vectors& v, TileFn full_fn, TileFn last_fn) {
        for (int64_t m = 0; m < p.c_out; m += kMaxRows) {
          const int64_t at = plane0 + m * hw;
          (m + kMaxRows <= p.c_out ? full_fn : last_fn)(
              w + m * taps, taps, offsets, v, bias_m ? bias_m + m : nullptr,
              residual ? residual + at : nullptr, y + at, hw, clamp, p.clamp_lo, p.clamp_hi);
        }
      };
      // Pairs of vectors along each row; a row's last vector of at most 16 positions paired
      // with the next row's.
      const int64_t tail = p.w_out % (2 * kVec), body = p.w_out - tail;
      for (int64_t u = 0; u < n_rows; ++u)
        for (int64_t ow = 0; ow < body; ow += 2 * kVec)
          channels({buf + u * pl.width + ow, kVec, u * p.w_out + ow, kVec, {0xffff, 0xffff}}, pair,
                   pair_last);
      if (tail > kVec) {
        for (int64_t u = 0; u < n_rows; ++u)
          channels(
              {buf + u * pl.width + body, kVec, u * p.w_out + body, kVec, {0xffff, first_n(tail - kVec)}},
              pair, pair_last);
      } else if (tail > 0) {
        for (int64_t u = 0; u < n_rows; u += 2) {
          const Vectors v{buf + u * pl.width + body,
                          pl.width,
                          u * p.w_out + body,
                          p.w_out,
                          {first_n(tail), first_n(tail)}};
          if (u + 1 < n_rows)
            channels(v, pair, pair_last);
          else
            channels(v, single, single_last);
        }
      }
    }
  });
#else
  (void)pool, (void)p, (void)x, (void)w, (void)bias, (void)residual, (void)y;
#endif
}

}  // namespace aotc::rt::detail
