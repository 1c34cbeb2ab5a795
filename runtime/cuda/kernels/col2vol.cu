// col2vol.cu - the second half of a transposed convolution (conv_transpose.cu): col holds,
// per output channel and kernel tap, every input position's contribution; an output position
// o receives tap t's from input position i where o = i * stride - pad + t * dilation (along
// each dim). One thread per output element gathers those (a gather: no atomics, the same
// result every run), starting from the bias and adding tap after tap in the CPU's order
// (runtime/src/kernels/conv_transpose.cpp), then clamps. Consecutive threads take consecutive
// output positions of one channel, whose sources at stride 1 are consecutive too. 32-bit
// positions (the launcher checks that they fit), 64-bit offsets.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

struct Col2volShape {
  int in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];
  int64_t c_out, first_channel, channels;
  bool has_bias;
  float lo, hi;
};

__global__ void col2vol_kernel(Col2volShape s, int64_t count, const float* __restrict__ col,
                               const float* __restrict__ bias, float* __restrict__ y) {
  const int64_t volume_out = static_cast<int64_t>(s.out[0]) * s.out[1] * s.out[2];
  const int64_t volume_in = static_cast<int64_t>(s.in[0]) * s.in[1] * s.in[2];
  const int taps = s.kernel[0] * s.kernel[1] * s.kernel[2];
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t plane = e / volume_out;  // image * channels + channel (of this launch)
    const int pos = static_cast<int>(e - plane * volume_out);
    const int64_t image = plane / s.channels;
    const int64_t channel = s.first_channel + (plane - image * s.channels);
    const float* const src = col + plane * taps * volume_in;
    const int plane_out = s.out[1] * s.out[2];
    const int od = pos / plane_out;
    const int oh = (pos - od * plane_out) / s.out[2];
    const int ow = pos - od * plane_out - oh * s.out[2];
    float acc = s.has_bias ? bias[channel] : 0.0f;
    for (int kd = 0; kd < s.kernel[0]; ++kd) {
      // id * stride = od + pad - kd * dilation, an input position when it divides.
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
          acc += src[t * volume_in + (static_cast<int64_t>(id) * s.in[1] + ih) * s.in[2] + iw];
        }
      }
    }
    // The CPU's clamp (kernel_util.h clamp_value): NaN passes.
    acc = acc < s.lo ? s.lo : acc;
    y[(image * s.c_out + channel) * volume_out + pos] = acc > s.hi ? s.hi : acc;
  }
}

}  // namespace

void col2vol_f32(cudaStream_t stream, const ConvNdParams& p, int64_t images, int64_t first_channel,
                 int64_t channels, const float* col, const float* bias, float* y) {
  const int64_t count = images * channels * conv_nd_volume(p.out);
  if (count <= 0) return;
  constexpr int64_t kMax = int64_t{1} << 30;
  bool fits = conv_nd_volume(p.in) <= kMax && conv_nd_volume(p.out) <= kMax &&
              conv_nd_volume(p.kernel) <= kMax && first_channel >= 0 && first_channel + channels <= p.c_out;
  for (int d = 0; d < 3; ++d)
    fits = fits && p.kernel[d] * p.dilation[d] <= kMax && p.out[d] + p.pad[d] <= kMax &&
           p.in[d] * p.stride[d] <= kMax && p.stride[d] > 0;
  if (!fits) {
    note_error("col2vol", "the convolution is too large for 32-bit positions");
    return;
  }
  Col2volShape s{};
  for (int d = 0; d < 3; ++d) {
    s.in[d] = static_cast<int>(p.in[d]);
    s.out[d] = static_cast<int>(p.out[d]);
    s.kernel[d] = static_cast<int>(p.kernel[d]);
    s.stride[d] = static_cast<int>(p.stride[d]);
    s.pad[d] = static_cast<int>(p.pad[d]);
    s.dilation[d] = static_cast<int>(p.dilation[d]);
  }
  s.c_out = p.c_out;
  s.first_channel = first_channel;
  s.channels = channels;
  s.has_bias = p.has_bias && bias;
  s.lo = p.clamp_lo;
  s.hi = p.clamp_hi;
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  col2vol_kernel<<<static_cast<unsigned>(blocks < (1 << 30) ? blocks : (1 << 30)), kThreads, 0, stream>>>(
      s, count, col, bias, y);
  check_launch("col2vol_kernel");
}

}  // namespace aotc::rt::cuda
