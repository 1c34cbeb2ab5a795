// adaptive_max_pool3d.cu - adaptive max pooling over N x C x D x H x W planes (1-d and 2-d
// with leading 1s), one thread per output element, with the argmax indices (flat within
// the input plane). Bins as adaptive_avg_pool3d.cu's; as the CPU kernel, the value and
// index are those of the first maximum in bin order (d, h, w) or of the last NaN.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

__global__ void adaptive_max_pool3d_kernel(int64_t total, AdaptivePoolParams p, const float* __restrict__ x,
                                           float* __restrict__ y, int64_t* __restrict__ indices) {
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
  float best = -__builtin_inff();
  int64_t best_index = (d0 * p.in[1] + h0) * p.in[2] + w0;
  // No early exit at a NaN: a later NaN is the one torch reports.
  for (int64_t id = d0; id < d1; ++id)
    for (int64_t ih = h0; ih < h1; ++ih) {
      const int64_t row = (id * p.in[1] + ih) * p.in[2];
      for (int64_t iw = w0; iw < w1; ++iw) {
        const float v = xp[row + iw];
        if (v > best || v != v) {
          best = v;
          best_index = row + iw;
        }
      }
    }
  y[i] = best;
  if (indices) indices[i] = best_index;
}

}  // namespace

void adaptive_max_pool3d_f32(cudaStream_t stream, const AdaptivePoolParams& p, const float* x, float* y,
                             int64_t* indices) {
  if (p.n <= 0 || p.c <= 0 || p.out[0] <= 0 || p.out[1] <= 0 || p.out[2] <= 0) return;
  const int64_t total = p.n * p.c * p.out[0] * p.out[1] * p.out[2];
  adaptive_max_pool3d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(total, p, x, y, indices);
  check_launch("adaptive_max_pool3d_kernel");
}

}  // namespace aotc::rt::cuda
