// depthwise_conv2d.cu - one filter per channel (groups == c_in == c_out): one thread per
// output element, the window read straight from the input (it stays in L1/L2 across the
// neighbouring threads), bias and clamp fused.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/pointwise.cuh>

namespace aotc::rt::cuda {
namespace {

struct DepthwiseShape {
  int c, h_in, w_in, h_out, w_out, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h,
      dilation_w;
};

// A 2-d grid: y is the (image, channel) plane, x runs over its output positions, so the
// filter and bias are per block and a thread divides once (by the output width); 32-bit
// index arithmetic (the launcher checks the sizes).
// InputEpilogue: the input values through the writer's bias and clamp as they are read.
template <bool InputEpilogue>
__global__ void depthwise_conv2d_kernel(DepthwiseShape s, bool has_bias, float lo, float hi,
                                        const float* __restrict__ x, const float* __restrict__ w,
                                        const float* __restrict__ bias, float* __restrict__ y,
                                        DepthwiseInputEpilogue in) {
  const int pos = blockIdx.x * blockDim.x + threadIdx.x;
  if (pos >= s.h_out * s.w_out) return;
  const int plane = blockIdx.y;
  const int c = plane % s.c;
  const int oh = pos / s.w_out, ow = pos - oh * s.w_out;
  const float* xp = x + static_cast<int64_t>(plane) * s.h_in * s.w_in;
  const float* wp = w + c * s.kernel_h * s.kernel_w;
  const int ih0 = oh * s.stride_h - s.pad_h, iw0 = ow * s.stride_w - s.pad_w;
  const float in_bias = InputEpilogue && in.in_bias ? in.in_bias[c] : 0.0f;
  float acc = 0.0f;
  for (int kh = 0; kh < s.kernel_h; ++kh) {
    const int ih = ih0 + kh * s.dilation_h;
    if (ih < 0 || ih >= s.h_in) continue;
    for (int kw = 0; kw < s.kernel_w; ++kw) {
      const int iw = iw0 + kw * s.dilation_w;
      if (iw < 0 || iw >= s.w_in) continue;
      float v = xp[ih * s.w_in + iw];
      if constexpr (InputEpilogue) v = clamp_apply(v + in_bias, in.in_lo, in.in_hi);
      acc = fmaf(v, wp[kh * s.kernel_w + kw], acc);
    }
  }
  if (has_bias) acc += bias[c];
  y[static_cast<int64_t>(plane) * s.h_out * s.w_out + pos] = clamp_apply(acc, lo, hi);
}

}  // namespace

void depthwise_conv2d_f32(cudaStream_t stream, const Conv2dParams& p, const float* x, const float* w,
                          const float* bias, float* y, const DepthwiseInputEpilogue* input_epilogue) {
  const int64_t planes = p.n * p.c_out, spatial = p.h_out * p.w_out;
  if (planes <= 0 || spatial <= 0) return;
  if (planes > 65535 || spatial > (int64_t{1} << 30) || p.h_in * p.w_in > (int64_t{1} << 30)) {
    // Beyond the 2-d grid: the generic grouped kernel computes the same thing.
    if (input_epilogue) {
      note_error("depthwise_conv2d_f32",
                 "an input epilogue past the 2-d grid (depthwise_input_epilogue_fits)");
      return;
    }
    return direct_conv2d_f32(stream, p, x, w, bias, y);
  }
  const DepthwiseShape s{
      static_cast<int>(p.c_out),     static_cast<int>(p.h_in),     static_cast<int>(p.w_in),
      static_cast<int>(p.h_out),     static_cast<int>(p.w_out),    static_cast<int>(p.kernel_h),
      static_cast<int>(p.kernel_w),  static_cast<int>(p.stride_h), static_cast<int>(p.stride_w),
      static_cast<int>(p.pad_h),     static_cast<int>(p.pad_w),    static_cast<int>(p.dilation_h),
      static_cast<int>(p.dilation_w)};
  const dim3 grid(blocks_for(spatial), static_cast<unsigned>(planes));
  if (input_epilogue)
    depthwise_conv2d_kernel<true><<<grid, kThreads, 0, stream>>>(s, p.has_bias, p.clamp_lo, p.clamp_hi, x, w,
                                                                 bias, y, *input_epilogue);
  else
    depthwise_conv2d_kernel<false><<<grid, kThreads, 0, stream>>>(s, p.has_bias, p.clamp_lo, p.clamp_hi, x, w,
                                                                  bias, y, DepthwiseInputEpilogue{});
  check_launch("depthwise_conv2d_kernel");
}

}  // namespace aotc::rt::cuda
