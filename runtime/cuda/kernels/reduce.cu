// reduce.cu - sum / mean / max / min / prod over any set of dims of a dense float32 tensor
// (int64: reduce_i64.cu). A warp per output element: its lanes stride over the reduced index
// space and combine with shuffles; max and min propagate NaN, as torch does.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/index_nd.cuh>

namespace aotc::rt::cuda {
namespace {

__device__ __forceinline__ float combine(ReduceOp op, float a, float b) {
  if (op == ReduceOp::Max) return (a != a || b > a) ? (a != a ? a : b) : (b != b ? b : a);
  if (op == ReduceOp::Min) return (a != a || b < a) ? (a != a ? a : b) : (b != b ? b : a);
  if (op == ReduceOp::Prod) return a * b;
  return a + b;
}

__global__ void reduce_kernel(ReduceOp op, ReduceLayout l, const float* __restrict__ x,
                              float* __restrict__ y) {
  const int64_t out = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (out >= l.outputs) return;  // the same for the whole warp
  const int64_t base = kept_offset(l, out);
  float acc = op == ReduceOp::Max    ? -__builtin_inff()
              : op == ReduceOp::Min  ? __builtin_inff()
              : op == ReduceOp::Prod ? 1.0f
                                     : 0.0f;
  for (int64_t j = lane; j < l.count; j += 32) acc = combine(op, acc, x[reduced_offset(l, base, j)]);
  for (int offset = 16; offset > 0; offset /= 2)
    acc = combine(op, acc, __shfl_down_sync(0xffffffffu, acc, offset));
  if (lane == 0) y[out] = op == ReduceOp::Mean ? acc / static_cast<float>(l.count) : acc;
}

}  // namespace

void reduce_f32(cudaStream_t stream, const ReduceParams& p, const float* x, float* y) {
  ReduceLayout l;
  int64_t stride = 1;
  int64_t strides[8] = {};
  for (int d = p.rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= p.dims[d];
  }
  for (int d = 0; d < p.rank; ++d) {
    if (p.reduce_mask[d]) {
      l.reduced_dims[l.reduced_rank] = p.dims[d];
      l.reduced_strides[l.reduced_rank++] = strides[d];
      l.count *= p.dims[d];
    } else {
      l.kept_dims[l.kept_rank] = p.dims[d];
      l.kept_strides[l.kept_rank++] = strides[d];
      l.outputs *= p.dims[d];
    }
  }
  if (l.outputs <= 0) return;
  reduce_kernel<<<blocks_for(l.outputs * 32), kThreads, 0, stream>>>(p.op, l, x, y);
  check_launch("reduce_kernel");
}

}  // namespace aotc::rt::cuda
