// kernels/pooling.h - the 2-d pooling kernels (max, average, adaptive average).
#pragma once

#include <cstdint>

namespace aotc::rt {

class ThreadPool;

// ---------------------------------------------------------------- pooling
struct Pool2dParams {
  int64_t n = 1, c = 0, h_in = 0, w_in = 0, h_out = 0, w_out = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;  // max pooling only
  bool count_include_pad = true;           // average pooling only
  int64_t divisor_override = 0;            // average pooling only; 0 means none
};
// Output sizes (ceil_mode included) are computed by the compiler, as torch does.
void max_pool2d_f32(ThreadPool& pool, const Pool2dParams& p, const float* x, float* y);
void avg_pool2d_f32(ThreadPool& pool, const Pool2dParams& p, const float* x, float* y);
// Adaptive average pooling: bins as torch computes them (floor start, ceil end).
void adaptive_avg_pool2d_f32(ThreadPool& pool, int64_t n, int64_t c, int64_t h_in, int64_t w_in,
                             int64_t h_out, int64_t w_out, const float* x, float* y);

}  // namespace aotc::rt
