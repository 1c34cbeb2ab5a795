// avg_pool3d.cu - one thread per output element over N x C x D x H x W, with torch's
// divisor rules (those of the CPU kernel): count_include_pad counts padded cells inside the
// padded input, never the cells a ceil_mode window sticks out beyond it; divisor_override
// replaces both; a window entirely in the padding gives 0. The sum runs in window order
// (d, h, w), as the CPU's does.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/index_nd.cuh>

namespace aotc::rt::cuda {
namespace {

// A window along one dim: [lo, hi) within the padded input, and its part inside the input.
struct Window {
  int64_t lo, hi, lo_in, hi_in;
};
__device__ Window window(int64_t o, int64_t stride, int64_t pad, int64_t kernel, int64_t in) {
  const int64_t lo = o * stride - pad;
  const int64_t hi = min(lo + kernel, in + pad);
  return {lo, hi, max(lo, int64_t{0}), min(hi, in)};
}

__global__ void avg_pool3d_kernel(int64_t total, Pool3dParams p, const float* __restrict__ x,
                                  float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const OutElement3d o = out_element3d(i, p.out);
  const float* xp = x + o.plane * p.in[0] * p.in[1] * p.in[2];
  const Window wd = window(o.d, p.stride[0], p.pad[0], p.kernel[0], p.in[0]);
  const Window wh = window(o.h, p.stride[1], p.pad[1], p.kernel[1], p.in[1]);
  const Window ww = window(o.w, p.stride[2], p.pad[2], p.kernel[2], p.in[2]);
  if (wd.lo_in >= wd.hi_in || wh.lo_in >= wh.hi_in || ww.lo_in >= ww.hi_in) {
    y[i] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int64_t id = wd.lo_in; id < wd.hi_in; ++id)
    for (int64_t ih = wh.lo_in; ih < wh.hi_in; ++ih) {
      const float* xrow = xp + (id * p.in[1] + ih) * p.in[2];
      for (int64_t iw = ww.lo_in; iw < ww.hi_in; ++iw) sum += xrow[iw];
    }
  int64_t divisor;
  if (p.divisor_override != 0)
    divisor = p.divisor_override;
  else if (p.count_include_pad)
    divisor = (wd.hi - wd.lo) * (wh.hi - wh.lo) * (ww.hi - ww.lo);
  else
    divisor = (wd.hi_in - wd.lo_in) * (wh.hi_in - wh.lo_in) * (ww.hi_in - ww.lo_in);
  y[i] = sum / static_cast<float>(divisor);
}

}  // namespace

void avg_pool3d_f32(cudaStream_t stream, const Pool3dParams& p, const float* x, float* y) {
  if (p.n <= 0 || p.c <= 0 || p.out[0] <= 0 || p.out[1] <= 0 || p.out[2] <= 0) return;
  const int64_t total = p.n * p.c * p.out[0] * p.out[1] * p.out[2];
  avg_pool3d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(total, p, x, y);
  check_launch("avg_pool3d_kernel");
}

}  // namespace aotc::rt::cuda
