// adaptive_avg_pool3d.cu - adaptive average pooling over N x C x D x H x W planes; output
// bin i of a dim covers input [floor(i * in / out), ceil((i + 1) * in / out)), as in torch.
// One thread per output element, summing in bin order (d, h, w) as the CPU kernel does.
// Global pooling (a 1x1x1 output) sums a plane as the CPU's sum_contiguous does, in 16
// interleaved partial sums added pairwise at the end: here 16 lanes of a warp per plane,
// which read the plane coalesced and give the CPU's result bit for bit.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

constexpr int kLanes = 16;  // sum_contiguous's partial sums (runtime/src/kernels/kernel_util.h)

__global__ void global_avg_pool3d_kernel(int64_t planes, int64_t volume, const float* __restrict__ x,
                                         float* __restrict__ y) {
  const int64_t plane = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes;
  const int lane = threadIdx.x % kLanes;
  // A warp past the last plane leaves whole; one with a plane in either half stays whole
  // for the shuffles.
  if (plane - (threadIdx.x % 32) / kLanes >= planes) return;
  const bool active = plane < planes;
  float acc = 0.0f;
  if (active)
    for (int64_t j = lane; j < volume; j += kLanes) acc += x[plane * volume + j];
  // acc[l] += acc[l + width] for width 8, 4, 2, 1, within each half-warp.
  for (int width = kLanes / 2; width > 0; width /= 2)
    acc += __shfl_down_sync(0xffffffffu, acc, width, kLanes);
  if (active && lane == 0) y[plane] = acc / static_cast<float>(volume);
}

__global__ void adaptive_avg_pool3d_kernel(int64_t total, AdaptivePoolParams p, const float* __restrict__ x,
                                           float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t ow = i % p.out[2];
  const int64_t oh = (i / p.out[2]) % p.out[1];
  const int64_t od = (i / (p.out[2] * p.out[1])) % p.out[0];
  const int64_t plane = i / (p.out[2] * p.out[1] * p.out[0]);
  const float* xp = x + plane * p.in[0] * p.in[1] * p.in[2];
  const int64_t d0 = (od * p.in[0]) / p.out[0], d1 = ((od + 1) * p.in[0] + p.out[0] - 1) / p.out[0];
  const int64_t h0 = (oh * p.in[1]) / p.out[1], h1 = ((oh + 1) * p.in[1] + p.out[1] - 1) / p.out[1];
  const int64_t w0 = (ow * p.in[2]) / p.out[2], w1 = ((ow + 1) * p.in[2] + p.out[2] - 1) / p.out[2];
  float sum = 0.0f;
  for (int64_t id = d0; id < d1; ++id)
    for (int64_t ih = h0; ih < h1; ++ih) {
      const float* xrow = xp + (id * p.in[1] + ih) * p.in[2];
      for (int64_t iw = w0; iw < w1; ++iw) sum += xrow[iw];
    }
  y[i] = sum / static_cast<float>((d1 - d0) * (h1 - h0) * (w1 - w0));
}

}  // namespace

void adaptive_avg_pool3d_f32(cudaStream_t stream, const AdaptivePoolParams& p, const float* x, float* y) {
  if (p.n <= 0 || p.c <= 0 || p.out[0] <= 0 || p.out[1] <= 0 || p.out[2] <= 0) return;
  const int64_t planes = p.n * p.c, vol_out = p.out[0] * p.out[1] * p.out[2];
  if (vol_out == 1) {
    global_avg_pool3d_kernel<<<blocks_for(planes * kLanes), kThreads, 0, stream>>>(
        planes, p.in[0] * p.in[1] * p.in[2], x, y);
    check_launch("global_avg_pool3d_kernel");
    return;
  }
  adaptive_avg_pool3d_kernel<<<blocks_for(planes * vol_out), kThreads, 0, stream>>>(planes * vol_out, p, x,
                                                                                    y);
  check_launch("adaptive_avg_pool3d_kernel");
}

}  // namespace aotc::rt::cuda
