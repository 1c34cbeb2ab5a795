// max_pool2d.cu - one thread per output element; padded cells never win and NaN
// propagates, as in torch (and the CPU kernel).
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

__global__ void max_pool2d_kernel(int64_t total, Pool2dParams p, const float* __restrict__ x,
                                  float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t ow = i % p.w_out;
  const int64_t oh = (i / p.w_out) % p.h_out;
  const int64_t plane = i / (p.w_out * p.h_out);
  const float* xp = x + plane * p.h_in * p.w_in;
  float m = -__builtin_inff();
  for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
    const int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
    if (ih < 0 || ih >= p.h_in) continue;
    for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
      const int64_t iw = ow * p.stride_w - p.pad_w + kw * p.dilation_w;
      if (iw < 0 || iw >= p.w_in) continue;
      const float v = xp[ih * p.w_in + iw];
      m = (v > m || v != v) ? v : m;
      if (m != m) break;
    }
  }
  y[i] = m;
}

}  // namespace

void max_pool2d_f32(cudaStream_t stream, const Pool2dParams& p, const float* x, float* y) {
  const int64_t total = p.n * p.c * p.h_out * p.w_out;
  if (total <= 0) return;
  max_pool2d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(total, p, x, y);
  check_launch("max_pool2d_kernel");
}

}  // namespace aotc::rt::cuda
