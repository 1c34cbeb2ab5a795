// kernels/spatial.h - kernels over 1-d, 2-d and 3-d spatial tensors (N, C, D, H, W):
// 3-d and transposed convolution, 3-d and adaptive pooling (with argmax indices), group
// normalisation and upsampling. Included by kernels.h; same conventions (see there).
//
// Spatial sizes are given as 3 values (d, h, w). 1-d and 2-d tensors use leading 1s: a
// 2-d tensor N x C x H x W is N x C x 1 x H x W, with kernel 1, stride 1, padding 0 along d.
#pragma once

#include <cstdint>

namespace aotc::rt {

class ThreadPool;

// ---------------------------------------------------------------- convolution (3-d, transposed)
struct ConvNdParams {
  int64_t n = 1, c_in = 0, c_out = 0, groups = 1;
  int64_t in[3] = {1, 1, 1};   // input d, h, w
  int64_t out[3] = {1, 1, 1};  // output d, h, w (computed by the compiler, as torch does)
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};  // symmetric zero padding (transposed: cropped from the output)
  int64_t dilation[3] = {1, 1, 1};
  bool has_bias = false;
  float clamp_lo = -__builtin_inff();
  float clamp_hi = __builtin_inff();
};

inline int64_t conv_nd_volume(const int64_t* v) { return v[0] * v[1] * v[2]; }

// x: n x c_in x in; w: c_out x (c_in/groups) x kernel; bias: c_out; y: n x c_out x out.
void conv3d_f32(ThreadPool& pool, const ConvNdParams& p, const float* x, const float* w, const float* bias,
                float* y, float* scratch);

// Transposed convolution (the gradient of a convolution with respect to its input):
// per image-group one GEMM col = w_g^T x_g (c_out/g x kernel volume rows, input volume
// columns), then col2im scatters col into y, which starts as the bias. Output padding only
// makes the output larger (out is given); those positions receive the bias alone.
// x: n x c_in x in; w: c_in x (c_out/groups) x kernel (torch's layout); bias: c_out;
// y: n x c_out x out.
void conv_transpose_f32(ThreadPool& pool, const ConvNdParams& p, const float* x, const float* w,
                        const float* bias, float* y, float* scratch);

// ---------------------------------------------------------------- pooling (3-d, with indices)
struct Pool3dParams {
  int64_t n = 1, c = 0;
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};  // ceil_mode is in the sizes the compiler computes
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};  // max pooling only
  bool count_include_pad = true;    // average pooling only
  int64_t divisor_override = 0;     // average pooling only; 0 means none
};
// indices (nullable): for each output, the flat index within its input plane (d * H * W +
// h * W + w) of the maximum: the first one in window order, or the last NaN, as torch does.
void max_pool3d_f32(ThreadPool& pool, const Pool3dParams& p, const float* x, float* y, int64_t* indices);
void avg_pool3d_f32(ThreadPool& pool, const Pool3dParams& p, const float* x, float* y);

// Adaptive pooling: output bin i of a dim covers input [floor(i * in / out),
// ceil((i + 1) * in / out)). Indices as for max_pool3d_f32.
struct AdaptivePoolParams {
  int64_t n = 1, c = 0;
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
};
void adaptive_avg_pool3d_f32(ThreadPool& pool, const AdaptivePoolParams& p, const float* x, float* y);
void adaptive_max_pool3d_f32(ThreadPool& pool, const AdaptivePoolParams& p, const float* x, float* y,
                             int64_t* indices);

// Max unpooling (the inverse of max pooling with indices): each plane of y (out_volume
// values) is zero but for y[indices[i]] = x[i] over the plane's in_volume inputs; later
// duplicates win, as in torch's serial loop. Indices outside [0, out_volume), which torch
// rejects when it runs, are skipped: the kernel never writes out of bounds.
void max_unpool_f32(ThreadPool& pool, int64_t planes, int64_t in_volume, int64_t out_volume, const float* x,
                    const int64_t* indices, float* y);

// ---------------------------------------------------------------- normalisation
// Group normalisation (instance normalisation is groups == c): per image and group of
// c / groups channels, y = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c], the biased
// variance over the group's channels x spatial values. gamma / beta may be null (1 / 0).
struct GroupNormParams {
  int64_t n = 1, c = 0, groups = 1, spatial = 1;
  float eps = 1e-5f;
  float clamp_lo = -__builtin_inff();
  float clamp_hi = __builtin_inff();
};
void group_norm_f32(ThreadPool& pool, const GroupNormParams& p, const float* x, const float* gamma,
                    const float* beta, float* y);

// ---------------------------------------------------------------- resampling
enum class UpsampleMode : int32_t {
  Nearest = 0,       // src = min(floor(dst * ratio), in - 1)
  NearestExact = 1,  // src = min(floor((dst + 0.5) * ratio), in - 1)
  Linear = 2,        // linear / bilinear / trilinear, align_corners or half-pixel centres
  Cubic = 3,         // bicubic (torch's cubic convolution, A = -0.75), taps clamped to the input
};
// ratio[d] is torch's source scale along each dim, computed by the compiler as torch does
// (area_pixel_compute_scale): (in - 1) / (out - 1) with align_corners, else 1 / scale_factor
// when a scale factor was given, else in / out. dims (1 to 3) is how many trailing dims
// are interpolated; the others must have in == out == 1. Cubic is 2-d at most.
struct UpsampleParams {
  UpsampleMode mode = UpsampleMode::Nearest;
  bool align_corners = false;
  int32_t dims = 2;
  int64_t planes = 0;  // n * c
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  float ratio[3] = {1.0f, 1.0f, 1.0f};
};
void upsample_f32(ThreadPool& pool, const UpsampleParams& p, const float* x, float* y, void* scratch);

// Grid sampling (F.grid_sample, 2-d): y[n, c, oh, ow] samples x[n, c] at the normalised
// position grid[n, oh, ow] = (x, y) in [-1, 1], as torch's grid_sampler_2d computes it
// (unnormalise with or without align_corners, then the padding mode, in float).
enum class GridSampleMode : int32_t { Bilinear = 0, Nearest = 1 };
enum class GridSamplePadding : int32_t { Zeros = 0, Border = 1, Reflection = 2 };
struct GridSampleParams {
  int64_t n = 1, c = 0, h_in = 0, w_in = 0, h_out = 0, w_out = 0;
  GridSampleMode mode = GridSampleMode::Bilinear;
  GridSamplePadding padding = GridSamplePadding::Zeros;
  bool align_corners = false;
};
// x: n x c x h_in x w_in; grid: n x h_out x w_out x 2; y: n x c x h_out x w_out.
void grid_sample_f32(ThreadPool& pool, const GridSampleParams& p, const float* x, const float* grid,
                     float* y);

}  // namespace aotc::rt
