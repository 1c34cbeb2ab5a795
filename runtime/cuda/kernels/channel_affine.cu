// channel_affine.cu - y = x * scale[c] + shift[c] (a batch norm that could not be folded
// into a convolution), clamped; one thread per element.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/pointwise.cuh>

namespace aotc::rt::cuda {
namespace {

__global__ void channel_affine_kernel(int64_t total, int64_t c, int64_t spatial,
                                      const float* __restrict__ scale, const float* __restrict__ shift,
                                      float lo, float hi, const float* __restrict__ x,
                                      float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t ch = (i / spatial) % c;
  y[i] = clamp_apply(fmaf(x[i], scale[ch], shift[ch]), lo, hi);
}

}  // namespace

void channel_affine_f32(cudaStream_t stream, int64_t n, int64_t c, int64_t spatial, const float* scale,
                        const float* shift, float clamp_lo, float clamp_hi, const float* x, float* y) {
  const int64_t total = n * c * spatial;
  if (total <= 0) return;
  channel_affine_kernel<<<blocks_for(total), kThreads, 0, stream>>>(total, c, spatial, scale, shift, clamp_lo,
                                                                    clamp_hi, x, y);
  check_launch("channel_affine_kernel");
}

}  // namespace aotc::rt::cuda
