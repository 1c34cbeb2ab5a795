// avg_pool2d.cu - one thread per output element, with torch's divisor rules (those of
// the CPU kernel): count_include_pad counts padded cells inside the padded input, never the
// cells a ceil_mode window sticks out beyond it; divisor_override replaces both.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

__global__ void avg_pool2d_kernel(int64_t total, Pool2dParams p, const float* __restrict__ x,
                                  float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t ow = i % p.w_out;
  const int64_t oh = (i / p.w_out) % p.h_out;
  const int64_t plane = i / (p.w_out * p.h_out);
  const float* xp = x + plane * p.h_in * p.w_in;
  const int64_t ih0 = oh * p.stride_h - p.pad_h, iw0 = ow * p.stride_w - p.pad_w;
  const int64_t ih1 = min(ih0 + p.kernel_h, p.h_in + p.pad_h), iw1 = min(iw0 + p.kernel_w, p.w_in + p.pad_w);
  const int64_t ih0c = max(ih0, int64_t{0}), iw0c = max(iw0, int64_t{0});
  const int64_t ih1c = min(ih1, p.h_in), iw1c = min(iw1, p.w_in);
  if (ih0c >= ih1c || iw0c >= iw1c) {
    y[i] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int64_t ih = ih0c; ih < ih1c; ++ih)
    for (int64_t iw = iw0c; iw < iw1c; ++iw) sum += xp[ih * p.w_in + iw];
  int64_t divisor;
  if (p.divisor_override != 0)
    divisor = p.divisor_override;
  else if (p.count_include_pad)
    divisor = (ih1 - ih0) * (iw1 - iw0);
  else
    divisor = (ih1c - ih0c) * (iw1c - iw0c);
  y[i] = sum / static_cast<float>(divisor);
}

}  // namespace

void avg_pool2d_f32(cudaStream_t stream, const Pool2dParams& p, const float* x, float* y) {
  const int64_t total = p.n * p.c * p.h_out * p.w_out;
  if (total <= 0) return;
  avg_pool2d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(total, p, x, y);
  check_launch("avg_pool2d_kernel");
}

}  // namespace aotc::rt::cuda
