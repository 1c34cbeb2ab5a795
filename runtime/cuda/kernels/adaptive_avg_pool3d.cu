// adaptive_avg_pool3d.cu - adaptive average pooling over N x C x D x H x W planes; output
// bin i of a dim covers input [floor(i * in / out), ceil((i + 1) * in / out)), as in torch.
// One thread per output element, summing in bin order (d, h, w) as the CPU kernel does.
// Global pooling (a 1x1x1 output) sums a plane as the CPU's sum_contiguous does, in 16
// interleaved partial sums added pairwise at the end: here 16 lanes of a warp per plane,
// which read the plane coalesced and give the CPU's result bit for bit.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/index_nd.cuh>

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
  const OutElement3d o = out_element3d(i, p.out);
  const float* xp = x + o.plane * p.in[0] * p.in[1] * p.in[2];
  const Bins3d b = adaptive_bins3d(o, p);
  float sum = 0.0f;
  for (int64_t id = b.d.lo; id < b.d.hi; ++id)
    for (int64_t ih = b.h.lo; ih < b.h.hi; ++ih) {
      const float* xrow = xp + (id * p.in[1] + ih) * p.in[2];
      for (int64_t iw = b.w.lo; iw < b.w.hi; ++iw) sum += xrow[iw];
    }
  y[i] = sum / static_cast<float>((b.d.hi - b.d.lo) * (b.h.hi - b.h.lo) * (b.w.hi - b.w.lo));
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
