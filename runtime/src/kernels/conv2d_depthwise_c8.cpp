// conv2d_depthwise_c8.cpp - depthwise convolution over blocks of 8 channels, one channel per
// vector lane. A block's input planes are interleaved (position-major, 8 channels per
// position) into a zero-padded buffer, so that every tap of every output position is one
// contiguous 8-float load and one FMA, with no bounds checks and no per-row setup; the
// results are written back to the 8 planes. Why: on small planes (mobilenet_v2's 14 x 14
// and 7 x 7) the per-plane tile kernel spent its time in setup, 2-8 GFLOP/s, and depthwise
// layers were ~35% of mobilenet_v2's run. Large planes go in strips of output rows whose
// padded input rows fit the thread's scratch (conv2d_depthwise_c8_strip, planned by
// conv2d_thread_scratch_bytes); only rows wider than the scratch keep the tile kernel.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt::detail {
namespace {

constexpr int64_t kLanes = 8;
constexpr int64_t kMaxTaps = depthwise_c8::kMaxTaps;

// One output row of one block: acc over taps for groups of 4 positions (independent
// accumulators hide the FMA latency), then bias, clamp and the scatter to the planes.
// Buffer row 0 is the padded input row of output row oh - oh_buf.
void block_row(const Conv2dParams& p, const float* buf, int64_t cols, const float* w8, const float* b8,
               int64_t oh, int64_t oh_buf, int64_t lanes, bool clamp, float* const* yplanes) {
  const int64_t taps = p.kernel_h * p.kernel_w;
  const int64_t step = p.stride_w * kLanes;
  int64_t tap_off[kMaxTaps];
  for (int64_t i = 0; i < p.kernel_h; ++i)
    for (int64_t j = 0; j < p.kernel_w; ++j)
      tap_off[i * p.kernel_w + j] =
          ((oh_buf * p.stride_h + i * p.dilation_h) * cols + j * p.dilation_w) * kLanes;
  alignas(32) float out[4][kLanes];
  for (int64_t ow0 = 0; ow0 < p.w_out; ow0 += 4) {
    const int64_t count = min_i64(4, p.w_out - ow0);
    const float* base = buf + ow0 * step;
#if AOTC_KERNELS_AVX2
    __m256 a0 = _mm256_load_ps(b8), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t t = 0; t < taps; ++t) {
      const __m256 wv = _mm256_load_ps(w8 + t * kLanes);
      const float* s = base + tap_off[t];
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(s), wv, a0);
      // Positions past w_out read inside the buffer (it has rows below) or its slack, and
      // are not stored.
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(s + step), wv, a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(s + 2 * step), wv, a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(s + 3 * step), wv, a3);
    }
    if (clamp) {
      const __m256 lo = _mm256_set1_ps(p.clamp_lo), hi = _mm256_set1_ps(p.clamp_hi);
      // max/min return their second operand when either is NaN: NaN stays NaN.
      a0 = _mm256_min_ps(hi, _mm256_max_ps(lo, a0));
      a1 = _mm256_min_ps(hi, _mm256_max_ps(lo, a1));
      a2 = _mm256_min_ps(hi, _mm256_max_ps(lo, a2));
      a3 = _mm256_min_ps(hi, _mm256_max_ps(lo, a3));
    }
    _mm256_store_ps(out[0], a0);
    _mm256_store_ps(out[1], a1);
    _mm256_store_ps(out[2], a2);
    _mm256_store_ps(out[3], a3);
#else
    for (int q = 0; q < 4; ++q)
      for (int64_t l = 0; l < kLanes; ++l) out[q][l] = b8[l];
    for (int64_t t = 0; t < taps; ++t) {
      const float* wv = w8 + t * kLanes;
      const float* s = base + tap_off[t];
      for (int q = 0; q < 4; ++q)
        for (int64_t l = 0; l < kLanes; ++l) out[q][l] += s[q * step + l] * wv[l];
    }
    if (clamp)
      for (int q = 0; q < 4; ++q)
        for (int64_t l = 0; l < kLanes; ++l) out[q][l] = clamp_value(out[q][l], p.clamp_lo, p.clamp_hi);
#endif
    for (int64_t l = 0; l < lanes; ++l) {
      float* yrow = yplanes[l] + oh * p.w_out + ow0;
      for (int64_t q = 0; q < count; ++q) yrow[q] = out[q][l];
    }
  }
}

}  // namespace

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
  const double block_flops = 2.0 * static_cast<double>(kLanes * hw_out * taps);
  const int64_t min_blocks = static_cast<int64_t>(2.0e5 / block_flops) + 1;
  pool.parallel_for(p.n * blocks_per_image, min_blocks, [&](int64_t q0, int64_t q1, int thread) {
    // Weights and bias of the block first (aligned), then the padded interleaved input.
    float* w8 = reinterpret_cast<float*>(pool.thread_scratch(thread));
    float* b8 = w8 + kLanes * kMaxTaps;
    float* buf = b8 + kLanes;
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t img = q / blocks_per_image, c0 = (q % blocks_per_image) * kLanes;
      const int64_t lanes = min_i64(kLanes, p.c_in - c0);
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t l = 0; l < kLanes; ++l) w8[t * kLanes + l] = l < lanes ? w[(c0 + l) * taps + t] : 0.0f;
      for (int64_t l = 0; l < kLanes; ++l) b8[l] = l < lanes && p.has_bias ? bias[c0 + l] : 0.0f;
      float* yplanes[kLanes];
      for (int64_t l = 0; l < lanes; ++l) yplanes[l] = y + (img * p.c_out + c0 + l) * hw_out;
      for (int64_t oh0 = 0; oh0 < p.h_out; oh0 += strip) {
        const int64_t rows_out = min_i64(strip, p.h_out - oh0);
        const int64_t rows = (rows_out - 1) * p.stride_h + span, row0 = oh0 * p.stride_h;  // padded rows
        const int64_t buf_floats = (rows * cols + 4 * p.stride_w) * kLanes;
        for (int64_t i = 0; i < buf_floats; ++i) buf[i] = 0.0f;
        const int64_t r_lo = max_i64(0, p.pad_h - row0), r_hi = min_i64(rows, p.pad_h + p.h_in - row0);
        const int64_t c_lo = max_i64(0, p.pad_w), c_hi = min_i64(cols, p.pad_w + p.w_in);
        for (int64_t l = 0; l < lanes; ++l) {
          const float* xp = x + (img * p.c_in + c0 + l) * hw_in;
          for (int64_t r = r_lo; r < r_hi; ++r) {
            const float* src = xp + (row0 + r - p.pad_h) * p.w_in - p.pad_w;
            float* dst = buf + r * cols * kLanes + l;
            for (int64_t c = c_lo; c < c_hi; ++c) dst[c * kLanes] = src[c];
          }
        }
        for (int64_t oh = oh0; oh < oh0 + rows_out; ++oh)
          block_row(p, buf, cols, w8, b8, oh, oh - oh0, lanes, clamp, yplanes);
      }
    }
  });
}

}  // namespace aotc::rt::detail
