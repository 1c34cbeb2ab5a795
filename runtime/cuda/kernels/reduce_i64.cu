// reduce_i64.cu - sum / max / min / prod over any set of dims of a dense int64 tensor, as the
// CPU's reduce_i64: sums and products wrap (computed on uint64: integer arithmetic is
// associative, so the order of the fold does not change the result), an empty reduction
// gives the op's identity. Neighbouring dims of the same role are merged first
// (reduce_layout_of). Each output
// is folded by one thread (at most 16 values), a warp (fewer than 4096) or a block of
// 256 threads, whose lanes stride over the reduced index space and combine with shuffles.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/index_nd.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

template <ReduceOp Op>
__device__ __forceinline__ int64_t identity() {
  if constexpr (Op == ReduceOp::Max) return INT64_MIN;
  if constexpr (Op == ReduceOp::Min) return INT64_MAX;
  if constexpr (Op == ReduceOp::Prod) return 1;
  return 0;
}

template <ReduceOp Op>
__device__ __forceinline__ int64_t combine(int64_t m, int64_t v) {
  if constexpr (Op == ReduceOp::Max) {
    return v > m ? v : m;
  } else if constexpr (Op == ReduceOp::Min) {
    return v < m ? v : m;
  } else if constexpr (Op == ReduceOp::Prod) {
    return static_cast<int64_t>(static_cast<uint64_t>(m) * static_cast<uint64_t>(v));
  } else {
    return static_cast<int64_t>(static_cast<uint64_t>(m) + static_cast<uint64_t>(v));
  }
}

template <ReduceOp Op>
__device__ __forceinline__ int64_t warp_combine(int64_t acc) {
  for (int offset = 16; offset > 0; offset /= 2)
    acc = combine<Op>(
        acc, static_cast<int64_t>(__shfl_down_sync(0xffffffffu, static_cast<long long>(acc), offset)));
  return acc;
}

// kLanes threads per output: 1, 32 (a warp) or 256 (a block).
template <ReduceOp Op, int kLanes>
__global__ void __launch_bounds__(256)
    reduce_i64_kernel(ReduceLayout l, const int64_t* __restrict__ x, int64_t* __restrict__ y) {
  const int64_t gid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t out = kLanes == 256 ? static_cast<int64_t>(blockIdx.x) : gid / kLanes;
  const int lane = kLanes == 1 ? 0 : static_cast<int>(gid % kLanes);
  if (out >= l.outputs) return;  // the same for the whole warp (and block)
  const int64_t base = kept_offset(l, out);
  int64_t acc = identity<Op>();
  if (l.reduced_rank == 1) {
    for (int64_t j = lane; j < l.count; j += kLanes)
      acc = combine<Op>(acc, x[base + j * l.reduced_strides[0]]);
  } else {
    for (int64_t j = lane; j < l.count; j += kLanes) acc = combine<Op>(acc, x[reduced_offset(l, base, j)]);
  }
  if constexpr (kLanes >= 32) acc = warp_combine<Op>(acc);
  if constexpr (kLanes == 256) {
    __shared__ int64_t partial[8];
    if (lane % 32 == 0) partial[lane / 32] = acc;
    __syncthreads();
    if (lane >= 32) return;
    acc = lane < 8 ? partial[lane] : identity<Op>();
    acc = warp_combine<Op>(acc);
  }
  if (lane == 0) y[out] = acc;
}

template <ReduceOp Op>
void launch(cudaStream_t stream, const ReduceLayout& l, const int64_t* x, int64_t* y) {
  if (l.count <= 16) {
    reduce_i64_kernel<Op, 1><<<blocks_for(l.outputs), kThreads, 0, stream>>>(l, x, y);
  } else if (l.count < 4096) {
    reduce_i64_kernel<Op, 32><<<blocks_for(l.outputs * 32), kThreads, 0, stream>>>(l, x, y);
  } else {
    reduce_i64_kernel<Op, 256><<<static_cast<unsigned>(l.outputs), 256, 0, stream>>>(l, x, y);
  }
  check_launch("reduce_i64_kernel");
}

}  // namespace

void reduce_i64(cudaStream_t stream, const ReduceParams& p, const int64_t* x, int64_t* y) {
  if (p.rank < 0 || p.rank > 8) return;
  if (p.op == ReduceOp::Mean) {  // float only (the compiler never asks for it)
    note_error("reduce_i64", "the mean of an int64 tensor is not supported");
    return;
  }
  const ReduceLayout l = reduce_layout_of(p);
  if (l.outputs <= 0) return;
  switch (p.op) {
    case ReduceOp::Max:
      return launch<ReduceOp::Max>(stream, l, x, y);
    case ReduceOp::Min:
      return launch<ReduceOp::Min>(stream, l, x, y);
    case ReduceOp::Prod:
      return launch<ReduceOp::Prod>(stream, l, x, y);
    default:
      return launch<ReduceOp::Sum>(stream, l, x, y);
  }
}

}  // namespace aotc::rt::cuda
