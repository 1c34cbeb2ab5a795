// depthwise_conv_transpose.cu - a transposed convolution with one input channel per group
// (groups == c_in, any number of outputs per group), where the GEMM would be one deep: one
// thread per output element adds x * w over the taps that reach it, from the bias, tap after
// tap: the CPU's products (its GEMM of depth 1) and order of additions (col2im), so the same
// bits. Bias and clamp fused; 32-bit positions (the launcher checks), 64-bit offsets.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

struct DepthwiseShape {
  int in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];
  int64_t c_out, outputs_per_group;
  bool has_bias;
  float lo, hi;
};

// x: n * c_in planes of the input volume; w: c_in x outputs_per_group x taps, so output
// channel co's filter is w[co * taps ...].
__global__ void depthwise_conv_transpose_kernel(DepthwiseShape s, int64_t count, const float* __restrict__ x,
                                                const float* __restrict__ w, const float* __restrict__ bias,
                                                float* __restrict__ y) {
  const int64_t volume_out = static_cast<int64_t>(s.out[0]) * s.out[1] * s.out[2];
  const int64_t volume_in = static_cast<int64_t>(s.in[0]) * s.in[1] * s.in[2];
  const int taps = s.kernel[0] * s.kernel[1] * s.kernel[2];
  const int64_t c_in = s.c_out / s.outputs_per_group;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t plane = e / volume_out;  // image * c_out + channel
    const int pos = static_cast<int>(e - plane * volume_out);
    const int64_t image = plane / s.c_out;
    const int64_t co = plane - image * s.c_out;
    const float* const xp = x + (image * c_in + co / s.outputs_per_group) * volume_in;
    const float* const wp = w + co * taps;
    const int plane_out = s.out[1] * s.out[2];
    const int od = pos / plane_out;
    const int oh = (pos - od * plane_out) / s.out[2];
    const int ow = pos - od * plane_out - oh * s.out[2];
    float acc = s.has_bias ? bias[co] : 0.0f;
    for (int kd = 0; kd < s.kernel[0]; ++kd) {
      const int sd = od + s.pad[0] - kd * s.dilation[0];
      if (sd < 0) break;  // and every later kd
      const int id = sd / s.stride[0];
      if (id * s.stride[0] != sd || id >= s.in[0]) continue;
      for (int kh = 0; kh < s.kernel[1]; ++kh) {
        const int sh = oh + s.pad[1] - kh * s.dilation[1];
        if (sh < 0) break;
        const int ih = sh / s.stride[1];
        if (ih * s.stride[1] != sh || ih >= s.in[1]) continue;
        for (int kw = 0; kw < s.kernel[2]; ++kw) {
          const int sw = ow + s.pad[2] - kw * s.dilation[2];
          if (sw < 0) break;
          const int iw = sw / s.stride[2];
          if (iw * s.stride[2] != sw || iw >= s.in[2]) continue;
          const int t = (kd * s.kernel[1] + kh) * s.kernel[2] + kw;
          // Rounded product, then rounded sum (no fma): the CPU's two steps.
          acc =
              __fadd_rn(acc, __fmul_rn(xp[(static_cast<int64_t>(id) * s.in[1] + ih) * s.in[2] + iw], wp[t]));
        }
      }
    }
    acc = acc < s.lo ? s.lo : acc;  // the CPU's clamp: NaN passes
    y[e] = acc > s.hi ? s.hi : acc;
  }
}

}  // namespace

void depthwise_conv_transpose_f32(cudaStream_t stream, const ConvNdParams& p, const float* x, const float* w,
                                  const float* bias, float* y) {
  const int64_t count = p.n * p.c_out * conv_nd_volume(p.out);
  if (count <= 0) return;
  if (p.groups != p.c_in || p.groups <= 0 || p.c_out % p.groups) {
    note_error("depthwise_conv_transpose_f32", "not a depthwise convolution (groups == c_in)");
    return;
  }
  constexpr int64_t kMax = int64_t{1} << 30;
  bool fits =
      conv_nd_volume(p.in) <= kMax && conv_nd_volume(p.out) <= kMax && conv_nd_volume(p.kernel) <= kMax;
  for (int d = 0; d < 3; ++d)
    fits = fits && p.kernel[d] * p.dilation[d] <= kMax && p.out[d] + p.pad[d] <= kMax &&
           p.in[d] * p.stride[d] <= kMax && p.stride[d] > 0;
  if (!fits) {
    note_error("depthwise_conv_transpose_f32", "the convolution is too large for 32-bit positions");
    return;
  }
  DepthwiseShape s{};
  for (int d = 0; d < 3; ++d) {
    s.in[d] = static_cast<int>(p.in[d]);
    s.out[d] = static_cast<int>(p.out[d]);
    s.kernel[d] = static_cast<int>(p.kernel[d]);
    s.stride[d] = static_cast<int>(p.stride[d]);
    s.pad[d] = static_cast<int>(p.pad[d]);
    s.dilation[d] = static_cast<int>(p.dilation[d]);
  }
  s.c_out = p.c_out;
  s.outputs_per_group = p.c_out / p.groups;
  s.has_bias = p.has_bias && bias;
  s.lo = p.clamp_lo;
  s.hi = p.clamp_hi;
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  depthwise_conv_transpose_kernel<<<static_cast<unsigned>(blocks < (1 << 30) ? blocks : (1 << 30)), kThreads,
                                    0, stream>>>(s, count, x, w, bias, y);
  check_launch("depthwise_conv_transpose_kernel");
}

}  // namespace aotc::rt::cuda
