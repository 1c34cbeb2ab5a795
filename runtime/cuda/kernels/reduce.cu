// reduce.cu - sum / mean / max / min / prod over any set of dims of a dense float32 tensor
// (int64: reduce_i64.cu); max and min propagate NaN, as torch does. Neighbouring dims of the
// same role are merged first (reduce_layout_of). Each output is folded by one thread (at most
// 16 values), a warp (fewer than 4096), a block of 256 threads, or of 1024 where the outputs
// are too few to fill the GPU with blocks (a whole-tensor sum: one block); the lanes stride
// over the reduced index space and combine with shuffles, then across warps in order.
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

__device__ __forceinline__ float identity(ReduceOp op) {
  return op == ReduceOp::Max    ? -__builtin_inff()
         : op == ReduceOp::Min  ? __builtin_inff()
         : op == ReduceOp::Prod ? 1.0f
                                : 0.0f;
}

__device__ __forceinline__ float warp_combine(ReduceOp op, float acc) {
  for (int offset = 16; offset > 0; offset /= 2)
    acc = combine(op, acc, __shfl_down_sync(0xffffffffu, acc, offset));
  return acc;
}

// kLanes threads per output: 1, 32 (a warp), or 256 or 1024 (a block).
template <int kLanes>
__global__ void __launch_bounds__(kLanes > 256 ? kLanes : 256)
    reduce_kernel(ReduceOp op, ReduceLayout l, const float* __restrict__ x, float* __restrict__ y) {
  const int64_t gid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t out = kLanes >= 256 ? static_cast<int64_t>(blockIdx.x) : gid / kLanes;
  const int lane = kLanes == 1 ? 0 : static_cast<int>(gid % kLanes);
  if (out >= l.outputs) return;  // the same for the whole warp (and block)
  const int64_t base = kept_offset(l, out);
  float acc = identity(op);
  if (l.reduced_rank == 1) {
    for (int64_t j = lane; j < l.count; j += kLanes)
      acc = combine(op, acc, x[base + j * l.reduced_strides[0]]);
  } else {
    for (int64_t j = lane; j < l.count; j += kLanes) acc = combine(op, acc, x[reduced_offset(l, base, j)]);
  }
  if constexpr (kLanes >= 32) acc = warp_combine(op, acc);
  if constexpr (kLanes >= 256) {
    constexpr int kWarps = kLanes / 32;
    __shared__ float partial[kWarps];
    if (lane % 32 == 0) partial[lane / 32] = acc;
    __syncthreads();
    if (lane >= 32) return;
    acc = lane < kWarps ? partial[lane] : identity(op);
    acc = warp_combine(op, acc);
  }
  if (lane == 0) y[out] = op == ReduceOp::Mean ? acc / static_cast<float>(l.count) : acc;
}

}  // namespace

void reduce_f32(cudaStream_t stream, const ReduceParams& p, const float* x, float* y) {
  if (p.rank < 0 || p.rank > 8) return;
  const ReduceLayout l = reduce_layout_of(p);
  if (l.outputs <= 0) return;
  if (l.count <= 16) {
    reduce_kernel<1><<<blocks_for(l.outputs), kThreads, 0, stream>>>(p.op, l, x, y);
  } else if (l.count < 4096) {
    reduce_kernel<32><<<blocks_for(l.outputs * 32), kThreads, 0, stream>>>(p.op, l, x, y);
  } else if (l.outputs >= 256) {
    reduce_kernel<256><<<static_cast<unsigned>(l.outputs), 256, 0, stream>>>(p.op, l, x, y);
  } else {
    reduce_kernel<1024><<<static_cast<unsigned>(l.outputs), 1024, 0, stream>>>(p.op, l, x, y);
  }
  check_launch("reduce_kernel");
}

}  // namespace aotc::rt::cuda
