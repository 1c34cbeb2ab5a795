// layer_norm.cu - layer normalisation of each contiguous row (LayerNormParams, as the CPU
// kernel takes it), one block per row. Two reductions over the row, both in float32: the
// mean, then the centred sum of squares (not E[x^2] - E[x]^2, which cancels badly when the
// mean is large against the spread), each a warp shuffle tree and one pass through shared
// memory. The row is read three times; after the first it comes from L1/L2.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

// The sum of v over the block (blockDim.x a multiple of 32, at most 1024), for every thread.
__device__ float block_sum(float v, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads();  // shared may still be read by the previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void layer_norm_kernel(LayerNormParams p, const float* __restrict__ x,
                                  const float* __restrict__ gamma, const float* __restrict__ beta,
                                  float* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const int64_t n = p.cols;
  const float* xr = x + row * n;
  float* yr = y + row * n;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += xr[j];
  const float mu = block_sum(s, shared) / static_cast<float>(n);
  float sq = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float d = xr[j] - mu;
    sq += d * d;
  }
  const float var = block_sum(sq, shared) / static_cast<float>(n);
  const float r = rsqrtf(var + p.eps);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    float v = (xr[j] - mu) * r;
    if (gamma) v *= gamma[j];
    if (beta) v += beta[j];
    yr[j] = v;
  }
  if (threadIdx.x == 0) {
    if (mean) mean[row] = mu;
    if (rstd) rstd[row] = r;
  }
}

}  // namespace

void layer_norm_f32(cudaStream_t stream, const LayerNormParams& p, const float* x, const float* gamma,
                    const float* beta, float* y, float* mean, float* rstd) {
  if (p.rows <= 0 || p.cols <= 0) return;
  if (p.rows > 0x7fffffff) {
    note_error("layer_norm", "more rows than a grid holds");
    return;
  }
  // About 4 to 8 columns per thread; at least one warp, at most 1024 threads.
  int threads = 32;
  while (threads < 1024 && threads * 8 < p.cols) threads *= 2;
  layer_norm_kernel<<<static_cast<unsigned>(p.rows), threads, 0, stream>>>(p, x, gamma, beta, y, mean, rstd);
  check_launch("layer_norm_kernel");
}

}  // namespace aotc::rt::cuda
