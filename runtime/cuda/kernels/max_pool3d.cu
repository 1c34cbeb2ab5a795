// max_pool3d.cu - one thread per output element over N x C x D x H x W (1-d and 2-d pooling
// with indices are 3-d with leading 1s), as the CPU kernel: padded cells never win, NaN
// propagates, the value and index are those of the first maximum in window order (d, h,
// w) or of the last NaN, and an output whose window has no cell keeps -inf and the index
// of the window's first tap.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/index_nd.cuh>

namespace aotc::rt::cuda {
namespace {

struct TapRange {
  int64_t lo, hi;
};
// The taps k in [0, taps) whose position start + k * step lies in [0, size) (kernel_util.h).
__device__ TapRange valid_taps(int64_t start, int64_t step, int64_t taps, int64_t size) {
  const int64_t lo = start < 0 ? min(taps, (-start + step - 1) / step) : 0;
  const int64_t hi = size - start <= 0 ? 0 : min(taps, (size - start + step - 1) / step);
  return {lo, hi < lo ? lo : hi};
}

__global__ void max_pool3d_kernel(int64_t total, Pool3dParams p, const float* __restrict__ x,
                                  float* __restrict__ y, int64_t* __restrict__ indices) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const OutElement3d o = out_element3d(i, p.out);
  const float* xp = x + o.plane * p.in[0] * p.in[1] * p.in[2];
  const int64_t id0 = o.d * p.stride[0] - p.pad[0], ih0 = o.h * p.stride[1] - p.pad[1];
  const int64_t iw0 = o.w * p.stride[2] - p.pad[2];
  const TapRange ds = valid_taps(id0, p.dilation[0], p.kernel[0], p.in[0]);
  const TapRange hs = valid_taps(ih0, p.dilation[1], p.kernel[1], p.in[1]);
  const TapRange ws = valid_taps(iw0, p.dilation[2], p.kernel[2], p.in[2]);
  float best = -__builtin_inff();
  int64_t best_index = ((id0 + ds.lo * p.dilation[0]) * p.in[1] + ih0 + hs.lo * p.dilation[1]) * p.in[2] +
                       iw0 + ws.lo * p.dilation[2];
  // No early exit at a NaN: a later NaN is the one torch reports.
  for (int64_t kd = ds.lo; kd < ds.hi; ++kd)
    for (int64_t kh = hs.lo; kh < hs.hi; ++kh) {
      const int64_t row = ((id0 + kd * p.dilation[0]) * p.in[1] + ih0 + kh * p.dilation[1]) * p.in[2] + iw0;
      for (int64_t kw = ws.lo; kw < ws.hi; ++kw) {
        const int64_t index = row + kw * p.dilation[2];
        const float v = xp[index];
        if (v > best || v != v) {
          best = v;
          best_index = index;
        }
      }
    }
  y[i] = best;
  if (indices) indices[i] = best_index;
}

}  // namespace

void max_pool3d_f32(cudaStream_t stream, const Pool3dParams& p, const float* x, float* y, int64_t* indices) {
  if (p.n <= 0 || p.c <= 0 || p.out[0] <= 0 || p.out[1] <= 0 || p.out[2] <= 0) return;
  const int64_t total = p.n * p.c * p.out[0] * p.out[1] * p.out[2];
  max_pool3d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(total, p, x, y, indices);
  check_launch("max_pool3d_kernel");
}

}  // namespace aotc::rt::cuda
