// depthwise_conv3d.cu - a 3-d convolution with one input channel per group (groups == c_in,
// any number of outputs per group): one thread per output element, its window read straight
// from the input (neighbouring threads share it in L1/L2), bias and clamp fused. A tap in the
// padding multiplies zero by its weight, as the columns of the GEMM path do (an infinite
// weight gives NaN there too).
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/index_nd.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

struct DepthwiseShape : Window3d {
  int c_out, outputs_per_group;
  bool has_bias;
  float lo, hi;
};

// x: planes of the input volume; y: n * c_out planes of the output volume.
__global__ void depthwise_conv3d_kernel(DepthwiseShape s, int64_t count, const float* __restrict__ x,
                                        const float* __restrict__ w, const float* __restrict__ bias,
                                        float* __restrict__ y) {
  const int64_t volume_out = volume3d(s.out), volume_in = volume3d(s.in);
  const int taps = s.kernel[0] * s.kernel[1] * s.kernel[2];
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t plane = e / volume_out;  // image * c_out + channel
    const int pos = static_cast<int>(e - plane * volume_out);
    const int64_t image = plane / s.c_out;
    const int co = static_cast<int>(plane - image * s.c_out);
    const int ci = co / s.outputs_per_group;
    const int c_in = s.c_out / s.outputs_per_group;
    const float* const xp = x + (image * c_in + ci) * volume_in;
    const float* const wp = w + static_cast<int64_t>(co) * taps;
    const Pos3d o = out_pos3d(s, pos);
    float acc = 0.0f;
    int t = 0;
    for (int kd = 0; kd < s.kernel[0]; ++kd) {
      const int id = o.d * s.stride[0] - s.pad[0] + kd * s.dilation[0];
      const bool in_d = id >= 0 && id < s.in[0];
      for (int kh = 0; kh < s.kernel[1]; ++kh) {
        const int ih = o.h * s.stride[1] - s.pad[1] + kh * s.dilation[1];
        const bool in_dh = in_d && ih >= 0 && ih < s.in[1];
        for (int kw = 0; kw < s.kernel[2]; ++kw, ++t) {
          const int iw = o.w * s.stride[2] - s.pad[2] + kw * s.dilation[2];
          const float v = in_dh && iw >= 0 && iw < s.in[2] ? xp[(id * s.in[1] + ih) * s.in[2] + iw] : 0.0f;
          acc = fmaf(v, wp[t], acc);
        }
      }
    }
    if (s.has_bias) acc += bias[co];
    // The CPU's clamp (kernel_util.h clamp_value): NaN passes.
    acc = acc < s.lo ? s.lo : acc;
    y[e] = acc > s.hi ? s.hi : acc;
  }
}

}  // namespace

void depthwise_conv3d_f32(cudaStream_t stream, const ConvNdParams& p, const float* x, const float* w,
                          const float* bias, float* y) {
  const int64_t count = p.n * p.c_out * conv_nd_volume(p.out);
  if (count <= 0) return;
  if (p.groups != p.c_in || p.groups <= 0 || p.c_out % p.groups) {
    note_error("depthwise_conv3d_f32", "not a depthwise convolution (groups == c_in)");
    return;
  }
  if (!window3d_fits_int32(p, false) || p.c_out > kWindow3dMax) {
    note_error("depthwise_conv3d_f32", "the convolution is too large for 32-bit positions");
    return;
  }
  DepthwiseShape s{window3d(p)};
  s.c_out = static_cast<int>(p.c_out);
  s.outputs_per_group = static_cast<int>(p.c_out / p.groups);
  s.has_bias = p.has_bias && bias;
  s.lo = p.clamp_lo;
  s.hi = p.clamp_hi;
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  depthwise_conv3d_kernel<<<static_cast<unsigned>(blocks < (1 << 30) ? blocks : (1 << 30)), kThreads, 0,
                            stream>>>(s, count, x, w, bias, y);
  check_launch("depthwise_conv3d_kernel");
}

}  // namespace aotc::rt::cuda
