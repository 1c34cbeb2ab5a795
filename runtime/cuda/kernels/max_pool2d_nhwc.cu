// max_pool2d_nhwc.cu - max pooling of an NHWC tensor (channels_last_cuda.cpp): a thread
// per output element, consecutive threads consecutive channels, so a warp reads each
// window pixel's channels as one run. Padded cells never win and NaN propagates, as in
// torch and max_pool2d.cu.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

__global__ void max_pool2d_nhwc_kernel(int64_t total, Pool2dParams p, const float* __restrict__ x,
                                       float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t c = i % p.c;
  const int64_t pixel = i / p.c;  // (image * h_out + oh) * w_out + ow
  const int64_t ow = pixel % p.w_out;
  const int64_t oh = (pixel / p.w_out) % p.h_out;
  const int64_t image = pixel / (p.w_out * p.h_out);
  const float* xp = x + image * p.h_in * p.w_in * p.c + c;
  float m = -__builtin_inff();
  for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
    const int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
    if (ih < 0 || ih >= p.h_in) continue;
    for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
      const int64_t iw = ow * p.stride_w - p.pad_w + kw * p.dilation_w;
      if (iw < 0 || iw >= p.w_in) continue;
      const float v = xp[(ih * p.w_in + iw) * p.c];
      m = (v > m || v != v) ? v : m;
      if (m != m) break;
    }
  }
  y[i] = m;
}

}  // namespace

void max_pool2d_nhwc_f32(cudaStream_t stream, const Pool2dParams& p, const float* x, float* y) {
  const int64_t total = p.n * p.c * p.h_out * p.w_out;
  if (total <= 0) return;
  max_pool2d_nhwc_kernel<<<blocks_for(total), kThreads, 0, stream>>>(total, p, x, y);
  check_launch("max_pool2d_nhwc_kernel");
}

}  // namespace aotc::rt::cuda
