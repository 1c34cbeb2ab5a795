// im2col.cu - unfolds every image's receptive fields into columns so that an ungrouped
// convolution becomes one GEMM per image. One thread per element of the unfolded matrix,
// consecutive threads along the output row, so that writes are coalesced and reads
// nearly so.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

__global__ void im2col_kernel(int64_t total, Conv2dParams p, const float* __restrict__ x,
                              float* __restrict__ col) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t ow = i % p.w_out;
  const int64_t oh = (i / p.w_out) % p.h_out;
  const int64_t row = (i / (p.w_out * p.h_out)) % (p.c_in * p.kernel_h * p.kernel_w);
  const int64_t img = i / (p.w_out * p.h_out * p.c_in * p.kernel_h * p.kernel_w);
  const int64_t kw = row % p.kernel_w;
  const int64_t kh = (row / p.kernel_w) % p.kernel_h;
  const int64_t c = row / (p.kernel_w * p.kernel_h);
  const int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
  const int64_t iw = ow * p.stride_w - p.pad_w + kw * p.dilation_w;
  float v = 0.0f;
  if (ih >= 0 && ih < p.h_in && iw >= 0 && iw < p.w_in)
    v = x[((img * p.c_in + c) * p.h_in + ih) * p.w_in + iw];
  col[i] = v;
}

}  // namespace

void im2col_f32(cudaStream_t stream, const Conv2dParams& p, const float* x, float* col) {
  const int64_t total = p.n * p.c_in * p.kernel_h * p.kernel_w * p.h_out * p.w_out;
  if (total <= 0) return;
  im2col_kernel<<<blocks_for(total), kThreads, 0, stream>>>(total, p, x, col);
  check_launch("im2col_kernel");
}

}  // namespace aotc::rt::cuda
