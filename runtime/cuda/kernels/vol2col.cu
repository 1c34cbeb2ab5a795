// vol2col.cu - unfolds the receptive fields of 3-d convolutions (conv3d.cu) into rows, so that
// each image-group is one GEMM of a linear layer's form (A B^T):
// col[img][j][(c, kd, kh, kw)] is the input value that tap (kd, kh, kw) of channel c reads for
// output position first_column + j, zero in the padding. One thread per element, consecutive
// threads consecutive taps of one position: stores are coalesced, and the loads of a warp
// fall on a few input rows that neighbouring positions read again (from L1 and L2). 32-bit
// index arithmetic within an image (the launcher checks that it fits), 64-bit offsets.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

struct Vol2colShape {
  int c_in;
  int in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];
  int first_column, columns;
  int row;  // values per position: c_in x kernel volume
};

__global__ void vol2col_kernel(Vol2colShape s, int64_t count, const float* __restrict__ x,
                               float* __restrict__ col) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= count) return;
  const int64_t per_image = static_cast<int64_t>(s.columns) * s.row;
  const int64_t image = e / per_image;
  const int within = static_cast<int>(e - image * per_image);
  const int j = within / s.row, r = within - j * s.row;
  const int taps = s.kernel[0] * s.kernel[1] * s.kernel[2];
  const int c = r / taps, tap = r - c * taps;
  const int kd = tap / (s.kernel[1] * s.kernel[2]);
  const int khw = tap - kd * s.kernel[1] * s.kernel[2];
  const int kh = khw / s.kernel[2], kw = khw - kh * s.kernel[2];
  const int pos = s.first_column + j;
  const int plane_out = s.out[1] * s.out[2];
  const int od = pos / plane_out;
  const int oh = (pos - od * plane_out) / s.out[2];
  const int ow = pos - od * plane_out - oh * s.out[2];
  const int id = od * s.stride[0] + kd * s.dilation[0] - s.pad[0];
  const int ih = oh * s.stride[1] + kh * s.dilation[1] - s.pad[1];
  const int iw = ow * s.stride[2] + kw * s.dilation[2] - s.pad[2];
  float value = 0.0f;
  if (id >= 0 && id < s.in[0] && ih >= 0 && ih < s.in[1] && iw >= 0 && iw < s.in[2])
    value = x[((image * s.c_in + c) * s.in[0] + id) * static_cast<int64_t>(s.in[1]) * s.in[2] +
              static_cast<int64_t>(ih) * s.in[2] + iw];
  col[e] = value;
}

}  // namespace

void vol2col_f32(cudaStream_t stream, const ConvNdParams& p, int64_t images, int64_t first_column,
                 int64_t columns, const float* x, float* col) {
  const int64_t row = p.c_in * conv_nd_volume(p.kernel);
  if (images <= 0 || row <= 0 || columns <= 0) return;
  constexpr int64_t kMax = int64_t{1} << 30;
  bool fits = row * columns <= kMax && conv_nd_volume(p.in) <= kMax && conv_nd_volume(p.out) <= kMax &&
              first_column >= 0 && first_column + columns <= conv_nd_volume(p.out);
  for (int d = 0; d < 3; ++d)
    fits = fits && p.kernel[d] * p.dilation[d] <= kMax && p.out[d] * p.stride[d] <= kMax && p.pad[d] <= kMax;
  if (!fits) {
    note_error("vol2col", "the convolution is too large for the vol2col kernel");
    return;
  }
  Vol2colShape s{};
  s.c_in = static_cast<int>(p.c_in);
  for (int d = 0; d < 3; ++d) {
    s.in[d] = static_cast<int>(p.in[d]);
    s.out[d] = static_cast<int>(p.out[d]);
    s.kernel[d] = static_cast<int>(p.kernel[d]);
    s.stride[d] = static_cast<int>(p.stride[d]);
    s.pad[d] = static_cast<int>(p.pad[d]);
    s.dilation[d] = static_cast<int>(p.dilation[d]);
  }
  s.first_column = static_cast<int>(first_column);
  s.columns = static_cast<int>(columns);
  s.row = static_cast<int>(row);
  const int64_t count = images * columns * row;
  vol2col_kernel<<<static_cast<unsigned>((count + kThreads - 1) / kThreads), kThreads, 0, stream>>>(s, count,
                                                                                                    x, col);
  check_launch("vol2col_kernel");
}

}  // namespace aotc::rt::cuda
