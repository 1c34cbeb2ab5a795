// adaptive_avg_pool2d_nhwc.cu - adaptive average pooling of an NHWC tensor
// (convert_to_channels_last.cpp), bins as torch computes them (floor start, ceil end). A thread
// per output element, consecutive threads consecutive channels: the global pooling that
// ends a CNN (7x7 -> 1x1 over 2048 channels) reads each pixel's channels as one run.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

__global__ void adaptive_avg_pool2d_nhwc_kernel(int64_t total, int64_t c, int64_t h_in, int64_t w_in,
                                                int64_t h_out, int64_t w_out, const float* __restrict__ x,
                                                float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t ch = i % c;
  const int64_t pixel = i / c;
  const int64_t ow = pixel % w_out;
  const int64_t oh = (pixel / w_out) % h_out;
  const int64_t image = pixel / (w_out * h_out);
  const int64_t ih0 = (oh * h_in) / h_out, ih1 = ((oh + 1) * h_in + h_out - 1) / h_out;
  const int64_t iw0 = (ow * w_in) / w_out, iw1 = ((ow + 1) * w_in + w_out - 1) / w_out;
  const float* xp = x + image * h_in * w_in * c + ch;
  float sum = 0.0f;
  for (int64_t ih = ih0; ih < ih1; ++ih)
    for (int64_t iw = iw0; iw < iw1; ++iw) sum += xp[(ih * w_in + iw) * c];
  y[i] = sum / static_cast<float>((ih1 - ih0) * (iw1 - iw0));
}

}  // namespace

void adaptive_avg_pool2d_nhwc_f32(cudaStream_t stream, int64_t n, int64_t c, int64_t h_in, int64_t w_in,
                                  int64_t h_out, int64_t w_out, const float* x, float* y) {
  const int64_t total = n * c * h_out * w_out;
  if (total <= 0) return;
  adaptive_avg_pool2d_nhwc_kernel<<<blocks_for(total), kThreads, 0, stream>>>(total, c, h_in, w_in, h_out,
                                                                              w_out, x, y);
  check_launch("adaptive_avg_pool2d_nhwc_kernel");
}

}  // namespace aotc::rt::cuda
