// depthwise_conv_transpose.cu - a transposed convolution with one input channel per group
// (groups == c_in, any number of outputs per group), where the GEMM would be one deep: one
// thread per output element adds x * w over the taps that reach it, from the bias, tap after
// tap: the CPU's products (its GEMM of depth 1) and order of additions (col2im), so the same
// bits. Bias and clamp fused; 32-bit positions (the launcher checks), 64-bit offsets.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/index_nd.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

struct DepthwiseShape : Window3d {
  int64_t c_out, outputs_per_group;
  bool has_bias;
  float lo, hi;
};

// x: n * c_in planes of the input volume; w: c_in x outputs_per_group x taps, so output
// channel co's filter is w[co * taps ...].
__global__ void depthwise_conv_transpose_kernel(DepthwiseShape s, int64_t count, const float* __restrict__ x,
                                                const float* __restrict__ w, const float* __restrict__ bias,
                                                float* __restrict__ y) {
  const int64_t volume_out = volume3d(s.out), volume_in = volume3d(s.in);
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
    const Pos3d o = out_pos3d(s, pos);
    float acc = s.has_bias ? bias[co] : 0.0f;
    for_each_transposed_tap(s, o, [&](int t, int id, int ih, int iw) {
      // Rounded product, then rounded sum (no fma): the CPU's two steps.
      acc = __fadd_rn(acc, __fmul_rn(xp[(static_cast<int64_t>(id) * s.in[1] + ih) * s.in[2] + iw], wp[t]));
    });
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
  if (!window3d_fits_int32(p, true)) {
    note_error("depthwise_conv_transpose_f32", "the convolution is too large for 32-bit positions");
    return;
  }
  DepthwiseShape s{window3d(p)};
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
