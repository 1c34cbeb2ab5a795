// adaptive_avg_pool2d.cu - bins as torch computes them (floor start, ceil end), in two forms
// chosen by the bin's size:
//   - a warp per output element for small bins: the global pooling that ends most CNNs
//     (7x7 -> 1x1 over 2048 channels) is a few thousand short sums, which a warp reads
//     coalesced and adds with shuffles;
//   - a block per output element for bins of kBlockBin values or more: a squeeze-and-
//     excitation block pools each of a few dozen 112x112 planes to one value, and a warp per
//     plane left most of the GPU idle while each lane walked hundreds of values in turn
//     (efficientnet_b0's 17 poolings took 0.25 ms, a quarter of its run).
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/block_sum.cuh>

#include <algorithm>

namespace aotc::rt::cuda {
namespace {

constexpr int64_t kBlockBin = 128;

struct Bin {
  int64_t ih0, ih1, iw0, iw1;
  __device__ Bin(int64_t i, int64_t h_in, int64_t w_in, int64_t h_out, int64_t w_out) {
    const int64_t ow = i % w_out, oh = (i / w_out) % h_out;
    ih0 = (oh * h_in) / h_out;
    ih1 = ((oh + 1) * h_in + h_out - 1) / h_out;
    iw0 = (ow * w_in) / w_out;
    iw1 = ((ow + 1) * w_in + w_out - 1) / w_out;
  }
};

__global__ void adaptive_avg_pool2d_kernel(int64_t total, int64_t h_in, int64_t w_in, int64_t h_out,
                                           int64_t w_out, const float* __restrict__ x,
                                           float* __restrict__ y) {
  const int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (i >= total) return;  // whole warps leave together: i is the same across a warp
  const Bin b(i, h_in, w_in, h_out, w_out);
  const int64_t bw = b.iw1 - b.iw0, count = (b.ih1 - b.ih0) * bw;
  const float* xp = x + i / (w_out * h_out) * h_in * w_in;
  float sum = 0.0f;
  for (int64_t j = lane; j < count; j += 32) sum += xp[(b.ih0 + j / bw) * w_in + b.iw0 + j % bw];
  sum = warp_sum(sum);
  if (lane == 0) y[i] = sum / static_cast<float>(count);
}

// A block per output element (blockIdx.x); its threads take the bin's values in turn, row
// by row, four loads in flight each.
__global__ void adaptive_avg_pool2d_block_kernel(int64_t h_in, int64_t w_in, int64_t h_out, int64_t w_out,
                                                 const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float shared[32];
  const int64_t i = blockIdx.x;
  const Bin b(i, h_in, w_in, h_out, w_out);
  const float* xp = x + i / (w_out * h_out) * h_in * w_in;
  // The launch checks that a plane's offsets fit 32 bits.
  const int bw = static_cast<int>(b.iw1 - b.iw0);
  const int count = static_cast<int>((b.ih1 - b.ih0) * bw);
  float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  int j = static_cast<int>(threadIdx.x);
  for (; j + 3 * static_cast<int>(blockDim.x) < count; j += 4 * static_cast<int>(blockDim.x)) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int jk = j + k * static_cast<int>(blockDim.x);
      s[k] += xp[(b.ih0 + jk / bw) * w_in + b.iw0 + jk % bw];
    }
  }
  for (; j < count; j += static_cast<int>(blockDim.x)) s[0] += xp[(b.ih0 + j / bw) * w_in + b.iw0 + j % bw];
  const float sum = block_sum((s[0] + s[1]) + (s[2] + s[3]), shared);
  if (threadIdx.x == 0) y[i] = sum / static_cast<float>(count);
}

}  // namespace

void adaptive_avg_pool2d_f32(cudaStream_t stream, int64_t n, int64_t c, int64_t h_in, int64_t w_in,
                             int64_t h_out, int64_t w_out, const float* x, float* y) {
  const int64_t total = n * c * h_out * w_out;
  if (total <= 0) return;
  // The largest bin: every bin spans at most ceil(h_in / h_out) + 1 rows, likewise columns.
  const int64_t largest = std::min(h_in, h_in / h_out + 2) * std::min(w_in, w_in / w_out + 2);
  const int64_t smallest = (h_in / h_out) * (w_in / w_out);
  if (smallest >= kBlockBin && h_in * w_in < (int64_t{1} << 31) && total < (int64_t{1} << 31)) {
    const int threads = largest >= 8192 ? 1024 : largest >= 1024 ? 256 : 128;
    adaptive_avg_pool2d_block_kernel<<<static_cast<unsigned>(total), threads, 0, stream>>>(h_in, w_in, h_out,
                                                                                           w_out, x, y);
    check_launch("adaptive_avg_pool2d_block_kernel");
    return;
  }
  adaptive_avg_pool2d_kernel<<<blocks_for(total * 32), kThreads, 0, stream>>>(total, h_in, w_in, h_out, w_out,
                                                                              x, y);
  check_launch("adaptive_avg_pool2d_kernel");
}

}  // namespace aotc::rt::cuda
