// adaptive_max_pool3d.cu - adaptive max pooling over N x C x D x H x W planes (1-d and 2-d
// with leading 1s), one thread per output element, with the argmax indices (flat within
// the input plane). Bins as adaptive_avg_pool3d.cu's; as the CPU kernel, the value and
// index are those of the first maximum in bin order (d, h, w) or of the last NaN.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/index_nd.cuh>

namespace aotc::rt::cuda {
namespace {

__global__ void adaptive_max_pool3d_kernel(int64_t total, AdaptivePoolParams p, const float* __restrict__ x,
                                           float* __restrict__ y, int64_t* __restrict__ indices) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const OutElement3d o = out_element3d(i, p.out);
  const float* xp = x + o.plane * p.in[0] * p.in[1] * p.in[2];
  const Bins3d b = adaptive_bins3d(o, p);
  float best = -__builtin_inff();
  int64_t best_index = (b.d.lo * p.in[1] + b.h.lo) * p.in[2] + b.w.lo;
  // No early exit at a NaN: a later NaN is the one torch reports.
  for (int64_t id = b.d.lo; id < b.d.hi; ++id)
    for (int64_t ih = b.h.lo; ih < b.h.hi; ++ih) {
      const int64_t row = (id * p.in[1] + ih) * p.in[2];
      for (int64_t iw = b.w.lo; iw < b.w.hi; ++iw) {
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
