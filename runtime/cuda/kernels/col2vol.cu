// col2vol.cu - the second half of a transposed convolution (conv_transpose.cu): col holds,
// per output channel and kernel tap, every input position's contribution; an output position
// o receives tap t's from input position i where o = i * stride - pad + t * dilation (along
// each dim). One thread per output element gathers those (a gather: no atomics, the same
// result every run), starting from the bias and adding tap after tap in the CPU's order
// (runtime/src/kernels/conv_transpose.cpp), then clamps. Consecutive threads take consecutive
// output positions of one channel, whose sources at stride 1 are consecutive too. 32-bit
// positions (the launcher checks that they fit), 64-bit offsets.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/index_nd.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

struct Col2volShape : Window3d {
  int64_t c_out, first_channel, channels;
  bool has_bias;
  float lo, hi;
};

__global__ void col2vol_kernel(Col2volShape s, int64_t count, const float* __restrict__ col,
                               const float* __restrict__ bias, float* __restrict__ y) {
  const int64_t volume_out = volume3d(s.out), volume_in = volume3d(s.in);
  const int taps = s.kernel[0] * s.kernel[1] * s.kernel[2];
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t plane = e / volume_out;  // image * channels + channel (of this launch)
    const int pos = static_cast<int>(e - plane * volume_out);
    const int64_t image = plane / s.channels;
    const int64_t channel = s.first_channel + (plane - image * s.channels);
    const float* const src = col + plane * taps * volume_in;
    const Pos3d o = out_pos3d(s, pos);
    float acc = s.has_bias ? bias[channel] : 0.0f;
    for_each_transposed_tap(s, o, [&](int t, int id, int ih, int iw) {
      acc += src[t * volume_in + (static_cast<int64_t>(id) * s.in[1] + ih) * s.in[2] + iw];
    });
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
  if (!window3d_fits_int32(p, true) || first_channel < 0 || first_channel + channels > p.c_out) {
    note_error("col2vol", "the convolution is too large for 32-bit positions");
    return;
  }
  Col2volShape s{window3d(p)};
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
