// softmax.cu - softmax / log_softmax over the middle axis of an outer x axis x inner
// layout, numerically stable (subtracts the maximum). A warp per (outer, inner) row: the
// lanes stride along the axis and combine the maximum and the sum with shuffles.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

__global__ void softmax_kernel(int64_t rows, int64_t axis, int64_t inner, bool log,
                               const float* __restrict__ x, float* __restrict__ y) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // the same for the whole warp
  const int64_t base = (row / inner) * axis * inner + row % inner;
  float m = -__builtin_inff();
  for (int64_t a = lane; a < axis; a += 32) m = fmaxf(m, x[base + a * inner]);
  for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  float sum = 0.0f;
  for (int64_t a = lane; a < axis; a += 32) sum += expf(x[base + a * inner] - m);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (log) {
    const float log_sum = logf(sum);
    for (int64_t a = lane; a < axis; a += 32) y[base + a * inner] = x[base + a * inner] - m - log_sum;
  } else {
    const float inv = 1.0f / sum;
    for (int64_t a = lane; a < axis; a += 32) y[base + a * inner] = expf(x[base + a * inner] - m) * inv;
  }
}

}  // namespace

void softmax_f32(cudaStream_t stream, int64_t outer, int64_t axis, int64_t inner, bool log, const float* x,
                 float* y) {
  const int64_t rows = outer * inner;
  if (rows <= 0 || axis <= 0) return;
  softmax_kernel<<<blocks_for(rows * 32), kThreads, 0, stream>>>(rows, axis, inner, log, x, y);
  check_launch("softmax_kernel");
}

}  // namespace aotc::rt::cuda
