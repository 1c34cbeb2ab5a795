// adaptive_avg_pool2d.cu - bins as torch computes them (floor start, ceil end). A warp per
// output element: the global pooling that ends most CNNs (7x7 -> 1x1 over 2048 channels)
// is a few thousand short sums, which a warp reads coalesced and adds with shuffles.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

__global__ void adaptive_avg_pool2d_kernel(int64_t total, int64_t h_in, int64_t w_in, int64_t h_out,
                                           int64_t w_out, const float* __restrict__ x,
                                           float* __restrict__ y) {
  const int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (i >= total) return;  // whole warps leave together: i is the same across a warp
  const int64_t ow = i % w_out;
  const int64_t oh = (i / w_out) % h_out;
  const int64_t plane = i / (w_out * h_out);
  const int64_t ih0 = (oh * h_in) / h_out, ih1 = ((oh + 1) * h_in + h_out - 1) / h_out;
  const int64_t iw0 = (ow * w_in) / w_out, iw1 = ((ow + 1) * w_in + w_out - 1) / w_out;
  const int64_t bw = iw1 - iw0, count = (ih1 - ih0) * bw;
  const float* xp = x + plane * h_in * w_in;
  float sum = 0.0f;
  for (int64_t j = lane; j < count; j += 32) sum += xp[(ih0 + j / bw) * w_in + iw0 + j % bw];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[i] = sum / static_cast<float>(count);
}

}  // namespace

void adaptive_avg_pool2d_f32(cudaStream_t stream, int64_t n, int64_t c, int64_t h_in, int64_t w_in,
                             int64_t h_out, int64_t w_out, const float* x, float* y) {
  const int64_t total = n * c * h_out * w_out;
  if (total <= 0) return;
  adaptive_avg_pool2d_kernel<<<blocks_for(total * 32), kThreads, 0, stream>>>(total, h_in, w_in, h_out, w_out,
                                                                              x, y);
  check_launch("adaptive_avg_pool2d_kernel");
}

}  // namespace aotc::rt::cuda
