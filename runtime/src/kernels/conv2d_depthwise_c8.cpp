// conv2d_depthwise_c8.cpp - depthwise convolution over blocks of 8 channels, one channel per
// vector lane. A block's input planes are interleaved (position-major, 8 channels per
// position) into a zero-padded buffer, so that every tap of every output position is one
// contiguous 8-float load and one FMA, with no bounds checks and no per-row setup; the
// results are written back to the 8 planes. Why: on small planes (mobilenet_v2's 14 x 14
// and 7 x 7) the per-plane tile kernel spent its time in setup, and depthwise layers were a
// large part of mobilenet_v2's run (bench/results_cpu.md). Large planes go in strips of
// output rows whose padded input rows fit the thread's scratch (conv2d_depthwise_c8_strip,
// planned by conv2d_thread_scratch_bytes); only rows wider than the scratch keep the tile
// kernel.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt::detail {
namespace {

constexpr int64_t kLanes = 8;
constexpr int64_t kMaxTaps = depthwise_c8::kMaxTaps;

// Output positions computed together: one accumulator each (independent FMAs hide the
// latency), and as many as there are lanes, so that the results are one 8 x 8 transpose
// away from 8 contiguous positions of each channel's plane.
constexpr int64_t kGroup = depthwise_c8::kGroup;
static_assert(kGroup == kLanes, "depthwise_lanes_row transposes kGroup positions x kLanes channels");

// Input columns [c_lo, c_hi) of one padded buffer row from the block's planes (src[l] is
// plane l's input row, indexed by padded column) into the interleaved row dst. With all 8
// lanes, 8 columns at a time are one transpose: the scalar copy of each float was 40% of
// the block's time (perf, mobilenet_v2).
// The last 1-7 columns too, as one transpose of masked loads instead of a scalar copy per
// float (7 x 7 planes have no full group of 8 columns; alone this made no difference that
// the noise let me measure on efficientnet_b0's 7 x 7 layers).
void interleave_row(const float* const* src, int64_t lanes, int64_t c_lo, int64_t c_hi, float* dst) {
  int64_t c = c_lo;
#if AOTC_KERNELS_AVX2
  if (lanes == kLanes) {
    for (; c + kLanes <= c_hi; c += kLanes) {
      __m256 r[8];
      for (int l = 0; l < 8; ++l) r[l] = _mm256_loadu_ps(src[l] + c);
      transpose8x8(r);
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(dst + (c + j) * kLanes, r[j]);
    }
    if (c < c_hi) {
      const int64_t rest = c_hi - c;
      const __m256i mask = first_lanes_mask(rest);
      __m256 r[8];
      for (int l = 0; l < 8; ++l) r[l] = _mm256_maskload_ps(src[l] + c, mask);
      transpose8x8(r);
      for (int64_t j = 0; j < rest; ++j) _mm256_storeu_ps(dst + (c + j) * kLanes, r[j]);
      return;
    }
  }
#endif
  // Lanes past the block's channels are zeroed: the buffer is reused from block to block.
  for (; c < c_hi; ++c)
    for (int64_t l = 0; l < kLanes; ++l) dst[c * kLanes + l] = l < lanes ? src[l][c] : 0.0f;
}

#if AOTC_KERNELS_AVX2
// One kernel row of K taps at stride 1 (undilated) for kGroup positions, 8 lanes a
// position: each input vector is loaded once and feeds the up to K outputs that read it
// (K = 3: 10 loads for 24 FMAs; 5: 12 for 40; the general loop loads once per FMA, and the
// loads bounded it).
template <int K>
inline void kernel_row_stride_1(const float* s, const float* w, __m256 (&a)[kGroup]) {
  __m256 wv[K];
  for (int j = 0; j < K; ++j) wv[j] = _mm256_load_ps(w + j * kLanes);
  for (int p = 0; p < kGroup + K - 1; ++p) {
    const __m256 v = _mm256_loadu_ps(s + p * kLanes);
    for (int j = 0; j < K; ++j)
      if (p - j >= 0 && p - j < kGroup) a[p - j] = _mm256_fmadd_ps(v, wv[j], a[p - j]);
  }
}
#endif

}  // namespace

void depthwise_lanes_row(const Conv2dParams& p, const float* const* rows, int64_t pos_stride, const float* w8,
                         const float* b8, int64_t oh, int64_t lanes, bool clamp, float* const* yplanes) {
  const int64_t taps = p.kernel_h * p.kernel_w;
  const int64_t step = p.stride_w * pos_stride;
  const float* tap[kMaxTaps];
  for (int64_t i = 0; i < p.kernel_h; ++i)
    for (int64_t j = 0; j < p.kernel_w; ++j)
      tap[i * p.kernel_w + j] = rows[i] + j * p.dilation_w * pos_stride;
#if AOTC_KERNELS_AVX2
  const bool rows_of_k =
      (p.kernel_w == 3 || p.kernel_w == 5) && p.stride_w == 1 && p.dilation_w == 1 && pos_stride == kLanes;
#endif
  for (int64_t ow0 = 0; ow0 < p.w_out; ow0 += kGroup) {
    const int64_t count = min_i64(kGroup, p.w_out - ow0);
    const int64_t base = ow0 * step;
#if AOTC_KERNELS_AVX2
    __m256 a[kGroup];
    for (int q = 0; q < kGroup; ++q) a[q] = _mm256_load_ps(b8);
    // Positions past w_out read inside the buffer (it has rows below) or its slack, and are
    // not stored.
    if (rows_of_k && p.kernel_w == 3) {
      for (int64_t i = 0; i < p.kernel_h; ++i)
        kernel_row_stride_1<3>(tap[i * 3] + base, w8 + i * 3 * kLanes, a);
    } else if (rows_of_k) {
      for (int64_t i = 0; i < p.kernel_h; ++i)
        kernel_row_stride_1<5>(tap[i * 5] + base, w8 + i * 5 * kLanes, a);
    } else {
      for (int64_t t = 0; t < taps; ++t) {
        const __m256 wv = _mm256_load_ps(w8 + t * kLanes);
        const float* s = tap[t] + base;
        for (int q = 0; q < kGroup; ++q) a[q] = _mm256_fmadd_ps(_mm256_loadu_ps(s + q * step), wv, a[q]);
      }
    }
    if (clamp) {
      const __m256 lo = _mm256_set1_ps(p.clamp_lo), hi = _mm256_set1_ps(p.clamp_hi);
      // max/min return their second operand when either is NaN: NaN stays NaN.
      for (int q = 0; q < kGroup; ++q) a[q] = _mm256_min_ps(hi, _mm256_max_ps(lo, a[q]));
    }
    transpose8x8(a);  // a[l]: lane l's kGroup positions
    if (count == kGroup) {
      for (int64_t l = 0; l < lanes; ++l) _mm256_storeu_ps(yplanes[l] + oh * p.w_out + ow0, a[l]);
    } else {
      store_first_lanes(yplanes, oh * p.w_out + ow0, a, lanes, count);
    }
#else
    float out[kLanes][kGroup];  // out[l][q]: lane l of position q
    for (int64_t l = 0; l < kLanes; ++l)
      for (int q = 0; q < kGroup; ++q) out[l][q] = b8[l];
    for (int64_t t = 0; t < taps; ++t) {
      const float* wv = w8 + t * kLanes;
      const float* s = tap[t] + base;
      for (int q = 0; q < kGroup; ++q)
        for (int64_t l = 0; l < kLanes; ++l) out[l][q] += s[q * step + l] * wv[l];
    }
    if (clamp)
      for (int64_t l = 0; l < kLanes; ++l)
        for (int q = 0; q < kGroup; ++q) out[l][q] = clamp_value(out[l][q], p.clamp_lo, p.clamp_hi);
    for (int64_t l = 0; l < lanes; ++l) {
      float* yrow = yplanes[l] + oh * p.w_out + ow0;
      for (int64_t q = 0; q < count; ++q) yrow[q] = out[l][q];
    }
#endif
  }
}

bool depthwise_c8_fits(const Conv2dParams& p, size_t thread_scratch_bytes) {
  return conv2d_depthwise_c8_applies(p) &&
         static_cast<int64_t>(thread_scratch_bytes / sizeof(float)) >= conv2d_depthwise_c8_floats(p);
}

void conv2d_depthwise_c8(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w,
                         const float* bias, float* y) {
  const int64_t strip = conv2d_depthwise_c8_strip(p);
  const int64_t cols = (p.w_out - 1) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + 1;
  const int64_t span = (p.kernel_h - 1) * p.dilation_h + 1;
  const int64_t taps = p.kernel_h * p.kernel_w;
  const int64_t hw_in = p.h_in * p.w_in, hw_out = p.h_out * p.w_out;
  const int64_t blocks_per_image = ceil_div(p.c_in, kLanes);
  const bool clamp = has_clamp(p.clamp_lo, p.clamp_hi);
  // Work items: (image, block, part of the output rows); parts where blocks are few.
  const int64_t parts = row_parts_for(p.n * blocks_per_image, pool.size(), p.h_out, 4);
  const double item_flops = 2.0 * static_cast<double>(kLanes * hw_out * taps) / static_cast<double>(parts);
  const int64_t min_items = static_cast<int64_t>(kDepthwiseMinFlopsPerRange / item_flops) + 1;
  pool.parallel_for(p.n * blocks_per_image * parts, min_items, [&](int64_t q0, int64_t q1, int thread) {
    // Weights and bias of the block first (aligned), then the padded interleaved input.
    float* w8 = reinterpret_cast<float*>(pool.thread_scratch(thread));
    float* b8 = w8 + kLanes * kMaxTaps;
    float* buf = b8 + kLanes;
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t block = q / parts, part = q % parts;
      const int64_t img = block / blocks_per_image, c0 = (block % blocks_per_image) * kLanes;
      const int64_t oh_begin = part * p.h_out / parts, oh_end = (part + 1) * p.h_out / parts;
      const int64_t lanes = min_i64(kLanes, p.c_in - c0);
      if (part == 0 || q == q0) {
        for (int64_t t = 0; t < taps; ++t)
          for (int64_t l = 0; l < kLanes; ++l) w8[t * kLanes + l] = l < lanes ? w[(c0 + l) * taps + t] : 0.0f;
        for (int64_t l = 0; l < kLanes; ++l) b8[l] = l < lanes && p.has_bias ? bias[c0 + l] : 0.0f;
      }
      float* yplanes[kLanes];
      for (int64_t l = 0; l < lanes; ++l) yplanes[l] = y + (img * p.c_out + c0 + l) * hw_out;
      for (int64_t oh0 = oh_begin; oh0 < oh_end; oh0 += strip) {
        const int64_t rows_out = min_i64(strip, oh_end - oh0);
        const int64_t rows = (rows_out - 1) * p.stride_h + span, row0 = oh0 * p.stride_h;  // padded rows
        const int64_t r_lo = max_i64(0, p.pad_h - row0), r_hi = min_i64(rows, p.pad_h + p.h_in - row0);
        const int64_t c_lo = max_i64(0, p.pad_w), c_hi = min_i64(cols, p.pad_w + p.w_in);
        // Zeros where the interleaved input does not go: the padding rows and columns and
        // the slack past the last row (zeroing the whole buffer first was another pass).
        const int64_t row_floats = cols * kLanes;
        auto zero = [](float* at, int64_t floats) {
          for (int64_t i = 0; i < floats; ++i) at[i] = 0.0f;
        };
        zero(buf, r_lo * row_floats);
        for (int64_t r = r_lo; r < r_hi; ++r) {
          zero(buf + r * row_floats, c_lo * kLanes);
          zero(buf + r * row_floats + c_hi * kLanes, (cols - c_hi) * kLanes);
        }
        const int64_t tail_row = max_i64(r_hi, r_lo);
        zero(buf + tail_row * row_floats, (rows - tail_row) * row_floats + kGroup * p.stride_w * kLanes);
        for (int64_t r = r_lo; r < r_hi; ++r) {
          // src[l][c] is padded column c of plane l's input row: it is read only for c in
          // [c_lo, c_hi), the columns inside the image.
          const float* src[kLanes];
          for (int64_t l = 0; l < lanes; ++l)
            src[l] = x + (img * p.c_in + c0 + l) * hw_in + (row0 + r - p.pad_h) * p.w_in - p.pad_w;
          interleave_row(src, lanes, c_lo, c_hi, buf + r * cols * kLanes);
        }
        for (int64_t oh = oh0; oh < oh0 + rows_out; ++oh) {
          const float* rows_of_taps[kMaxTaps];  // buffer row 0 is padded input row oh0 * stride_h
          for (int64_t i = 0; i < p.kernel_h; ++i)
            rows_of_taps[i] = buf + ((oh - oh0) * p.stride_h + i * p.dilation_h) * cols * kLanes;
          depthwise_lanes_row(p, rows_of_taps, kLanes, w8, b8, oh, lanes, clamp, yplanes);
        }
      }
    }
  });
}

}  // namespace aotc::rt::detail
