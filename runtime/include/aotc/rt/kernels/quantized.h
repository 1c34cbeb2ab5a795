// kernels/quantized.h - int8 kernels for PyTorch's quantized models (torch.ao.quantization):
// activations are uint8 with a per-tensor scale and zero point, weights int8 per tensor or
// per output channel, sums int32. Each kernel does torch's own arithmetic (x86 engine
// "fbgemm"): the same float operations in the same order, rounding half to even
// (nearbyint), so that the results equal torch's quantized execution value for value.
//
// Rank-4 activations are NHWC (torch's channels_last, which its quantized convolutions
// produce) unless a kernel says otherwise; the compiler reorders where torch's tensor is
// NCHW.
#pragma once

#include <aotc/rt/kernels/pooling.h>

#include <cstdint>

namespace aotc::rt {

class ThreadPool;

// ---------------------------------------------------------------- quantize, dequantize
// torch.quantize_per_tensor(x, scale, zero, torch.quint8):
//   q = clamp(zero + nearbyint(x * inv_scale), 0, 255), inv_scale = 1.0f / float(scale).
// Beyond the int32 range, as torch 2.11 does on x86 (measured): fbgemm first clips
// t = x * inv_scale with minps(t, 2147483520.0f), which turns NaN into that value, then adds
// the zero point to the converted int32 with wrap-around. So NaN, +inf and t >= about
// 2^31 - zero give 255 where zero < 128 and 0 where zero >= 128; -inf gives 0. quantize_u8
// and qadd_u8 do the same.
void quantize_u8(ThreadPool& pool, int64_t count, float inv_scale, int32_t zero, const float* x, uint8_t* q);
// quantize_u8 of an NCHW float tensor x [n][c][hw] written NHWC, q [n][hw][c]: a model's
// input quantized straight into the layout of the convolution that reads it.
void quantize_to_nhwc_u8(ThreadPool& pool, int64_t n, int64_t c, int64_t hw, float inv_scale, int32_t zero,
                         const float* x, uint8_t* q);
// tensor.dequantize(): x = float(q - zero) * scale.
void dequantize_u8(ThreadPool& pool, int64_t count, float scale, int32_t zero, const uint8_t* q, float* x);

// ---------------------------------------------------------------- requantization
// The int32 sums of a convolution or linear layer to uint8, output channel j, as fbgemm
// does it with a float bias (PyTorch's quantized::conv2d and quantized::linear):
//   acc = sum_k a[k] * w[j][k] + acc_offset[j] - (w_zero ? w_zero[j] * sum_k a[k] : 0)
//   y   = clamp(out_zero + nearbyint((float(acc) + bias_over_scale[j]) * multiplier[j]), lo, hi)
// acc in int32; then one float addition and one float product, each rounded to float.
// The compiler computes, with s_a, s_w[j], s_y the scales as floats and z_a the input's
// zero point:
//   acc_offset[j]      = -z_a * sum_k w[j][k] + K * z_a * w_zero[j]
//   bias_over_scale[j] = bias[j] / (s_a * s_w[j])            (0 without bias)
//   multiplier[j]      = (s_a * s_w[j]) / s_y
// so that acc is sum_k (a[k] - z_a) * (w[j][k] - w_zero[j]).
//
// torch's engine "x86" (its default on x86-64) runs a convolution whose weights' zero points
// are all 0 and that has at most 100 groups on oneDNN where the CPU has AVX512-VNNI, and
// oneDNN rounds differently: two fused multiply-adds, the zero point added in float before
// the rounding, the clamp in float:
//   y = cvtps2dq(clamp(fma(fma(float(acc), acc_scale[j], bias[j]), multiplier[j], float(out_zero)), lo, hi))
// (measured on torch 2.11: resnet18, resnet50, resnext101_32x8d, googlenet, mobilenet_v2 and
// v3, shufflenet_v2 give 0 of 1000 outputs that differ from torch's; with each step rounded
// instead, resnext101_32x8d gives 511). A non-null acc_scale selects this form;
// bias_over_scale then holds the float bias itself. torch hands oneDNN the reciprocals
// of reciprocals of its scales, s' = 1.0f / float(1.0 / s) (s in double), and the compiler
// computes acc_scale[j] = s_a' * s_w'[j] and multiplier[j] = 1.0f / s_y'.
struct QRequant {
  const int32_t* acc_offset = nullptr;     // [n]
  const float* bias_over_scale = nullptr;  // [n]
  const float* multiplier = nullptr;       // [n]
  const int32_t* w_zero = nullptr;         // [n], the weights' zero points; nullptr: all 0
  const float* acc_scale = nullptr;        // [n]: the oneDNN form; nullptr: fbgemm's
  int32_t out_zero = 0;
  int32_t lo = 0, hi = 255;  // a fused relu: lo = out_zero
};

// ---------------------------------------------------------------- convolution, linear
// NHWC uint8 x [n][h_in][w_in][c_in] -> NHWC uint8 y [n][h_out][w_out][c_out]. Padding reads
// as in_zero (torch pads with the zero point, whose (a - z_a) is 0). Output sizes are the
// compiler's. Weights: packed at compile time by qconv2d_pack_weights (layouts.h) from
// torch's int8 [c_out][c_in / groups][kernel_h][kernel_w]. rq has c_out entries. Needs
// ThreadPool::thread_scratch of qconv2d_thread_scratch_bytes(p) per thread.
struct QConv2dParams {
  int64_t n = 1, c_in = 0, h_in = 0, w_in = 0, c_out = 0, h_out = 0, w_out = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  int32_t in_zero = 0;
};
void qconv2d_u8(ThreadPool& pool, const QConv2dParams& p, const uint8_t* x, const int8_t* w_packed,
                const QRequant& rq, uint8_t* y);

// y[m][n] = requant(sum_k x[m][k] * w[n][k]): torch's quantized::linear on a row-major
// uint8 x [m][k]. Weights packed by qlinear_pack_weights (layouts.h) from torch's int8
// [n][k]. rq has n entries. Needs qlinear_thread_scratch_bytes(p) per thread.
struct QLinearParams {
  int64_t m = 0, n = 0, k = 0;
};
void qlinear_u8(ThreadPool& pool, const QLinearParams& p, const uint8_t* x, const int8_t* w_packed,
                const QRequant& rq, uint8_t* y);

// ---------------------------------------------------------------- dynamic quantization
// The quantization parameters torch chooses for values in [min, max] (torch's and fbgemm's
// ChooseQuantizationParams, uint8, no symmetric range, no power-of-two scale): the range
// widened to hold 0, scale = (max - min) / (qmax - qmin) in double (0.1 where it would be 0
// or its float reciprocal infinite; raised to 6.1e-5 with the range scaled alike), the zero
// point from whichever end adds the smaller terms, rounded half to even and clamped to
// [qmin, qmax] = [0, 255], or [0, 127] with reduce_range.
struct QParams {
  float scale = 1;
  int32_t zero_point = 0;
};
QParams choose_qparams_u8(float min, float max, bool reduce_range);

// torch's quantized::linear_dynamic (and linear_relu_dynamic) on fbgemm: x float [m][k] is
// quantized at each run with choose_qparams_u8 of its own minimum and maximum, each value as
// clamp(cvtps2dq(fma(x, 1.0f / scale, float(zero))), 0, 255) (fbgemm's Quantize for a packed
// A: the zero point added before the rounding), multiplied by the int8 weights in int32, and
// scaled back in float:
//   y[i][j] = float(acc[i][j]) * (scale * w.scale[j]) + w.bias[j]      (relu: max(y, 0))
// with acc the exact sum of (x_q - zero) * (w - w.zero[j]). Weights packed by
// qlinear_pack_weights. Needs qlinear_dynamic_scratch_bytes(p) of scratch and
// qlinear_thread_scratch_bytes({m, n, k}) per thread.
struct QLinearDynamicParams {
  int64_t m = 0, n = 0, k = 0;
  bool reduce_range = false, relu = false;
};
struct QLinearDynamicWeights {
  const int8_t* packed = nullptr;
  const int32_t* colsum = nullptr;  // [n]: sum_k w[j][k]
  const float* scale = nullptr;     // [n]
  const int32_t* zero = nullptr;    // [n], the weights' zero points; nullptr: all 0
  const float* bias = nullptr;      // [n]; nullptr: none
};
void qlinear_dynamic_f32(ThreadPool& pool, const QLinearDynamicParams& p, const float* x,
                         const QLinearDynamicWeights& w, float* y, uint8_t* scratch);

// ---------------------------------------------------------------- pointwise
// quantized::add (and add_relu) of two uint8 tensors of count elements each:
//   da = fma(a_scale, float(qa), a_premul), db likewise (premul = scale * float(-zero), a
//   float product), s = da + db, relu: s = max(s, 0),
//   y = clamp(out_zero + nearbyint(s * out_inv_scale), 0, 255).
struct QAddParams {
  float a_scale = 1, a_premul = 0, b_scale = 1, b_premul = 0;
  float out_inv_scale = 1;  // 1.0f / float(out_scale)
  int32_t out_zero = 0;
  bool relu = false;
};
void qadd_u8(ThreadPool& pool, int64_t count, const QAddParams& p, const uint8_t* a, const uint8_t* b,
             uint8_t* y);

// y = min(max(x, lo), hi) on uint8: relu (lo = zero point), relu6 and hardtanh (the bounds
// quantized with the tensor's own scale and zero point), the same scale and zero point out.
void clamp_u8(ThreadPool& pool, int64_t count, uint8_t lo, uint8_t hi, const uint8_t* x, uint8_t* y);

// y = table[x]: an element-wise op whose 256 results torch computed at compile time
// (hardswish, hardsigmoid, sigmoid, ... of a quantized tensor; requantizing for cat).
void lookup_u8(ThreadPool& pool, int64_t count, const uint8_t* table, const uint8_t* x, uint8_t* y);

// quantized::mul (and mul_relu), as torch computes it:
//   y = clamp(out_zero + nearbyint(float((qa - a_zero) * (qb - b_zero)) * multiplier), lo, 255)
// with the product in int32 and multiplier = (float(s_a) * float(s_b)) * (1.0f / float(s_y)).
// dims: the output in memory order, padded with leading 1s; a and b read at these element
// strides (0 where they broadcast); y dense.
struct QMulParams {
  int64_t dims[4] = {1, 1, 1, 1};
  int64_t a_strides[4] = {}, b_strides[4] = {};
  int32_t a_zero = 0, b_zero = 0, out_zero = 0;
  float multiplier = 1;
  int32_t lo = 0;  // mul_relu: out_zero
};
void qmul_u8(ThreadPool& pool, const QMulParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y);

// quantized::layer_norm over the last n values of each of rows rows (uint8 in and out), as
// torch 2.11 computes it: per row the integer sum and sum of squares of the raw bytes,
//   mean_raw = float(sum) / n, mean = mean_raw - float(x_zero),
//   var      = max(fma(-mean_raw, mean_raw, float(sum_sq) / n), 0),
//   inv_std  = float(double(x_scale) / sqrt(double((var * x_scale) * x_scale) + eps)),
// then per value (torch's build fuses the last multiply and add; measured: 0 of 60M values
// differ with the fusion, 41 without):
//   y = fma((float(q - x_zero) - mean) * inv_std, gamma[i], beta[i])
// quantized as quantize_u8 does with y_inv_scale and y_zero. gamma and beta may be null
// (1 and 0).
struct QLayerNormParams {
  int64_t rows = 0, n = 0;
  float x_scale = 1;
  int32_t x_zero = 0;
  double eps = 1e-5;
  float y_inv_scale = 1;  // 1.0f / float(output scale)
  int32_t y_zero = 0;
};
void qlayer_norm_u8(ThreadPool& pool, const QLayerNormParams& p, const uint8_t* x, const float* gamma,
                    const float* beta, uint8_t* y);

// ---------------------------------------------------------------- pooling
// Max pooling on uint8 (exact: the output keeps the input's scale and zero point); padding
// never wins. channels_last: x and y NHWC, else NCHW.
void max_pool2d_u8(ThreadPool& pool, const Pool2dParams& p, bool channels_last, const uint8_t* x, uint8_t* y);
// Adaptive average pooling on uint8, bins as the float kernel (floor start, ceil end),
// the input's scale and zero point out. torch has two kernels, and the model's tensor
// decides which:
//   channels_last (NHWC):  y = clamp(zero + nearbyint(float(sum - size * zero) * (1.0f / size)), 0, 255)
//   NCHW:                  y = clamp(nearbyint(float(sum) * (1.0f / size)), 0, 255)
// with sum the int32 sum of the bin's values and size its element count.
void adaptive_avg_pool2d_u8(ThreadPool& pool, int64_t n, int64_t c, int64_t h_in, int64_t w_in, int64_t h_out,
                            int64_t w_out, bool channels_last, int32_t zero, const uint8_t* x, uint8_t* y);

}  // namespace aotc::rt
