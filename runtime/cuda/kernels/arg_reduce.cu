// arg_reduce.cu - max / min over the middle axis of outer x axis x inner with the int64
// index of the winner (torch.max(x, dim), argmax, argmin), for float32, int64, int32 and
// bool, as the CPU kernel: ties keep the first index; a NaN wins over every number and the
// first NaN is kept, as in torch.
//
// Many outputs: one thread each, walking the axis in order (consecutive threads read
// consecutive inner positions). A long axis with few outputs, or with inner == 1 (rows of
// contiguous values, argmax of logits): a group of 32 or 256 threads per output, each
// thread walking every group-th value in order, then a tree over the group that prefers
// the better value and, between equals (or two NaNs), the smaller index: the same winner
// as the walk in order.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <type_traits>

namespace aotc::rt::cuda {
namespace {

// True when v replaces the current best m (the CPU kernel's rule).
template <class T, bool IsMax>
__device__ __forceinline__ bool better(T v, T m) {
  if constexpr (std::is_floating_point_v<T>) {
    if (m != m) return false;  // a NaN is never replaced
    if (v != v) return true;
  }
  return IsMax ? v > m : v < m;
}

template <class T, bool IsMax>
__global__ void arg_reduce_thread_kernel(int64_t outputs, int64_t axis, int64_t inner,
                                         const T* __restrict__ x, T* __restrict__ values,
                                         int64_t* __restrict__ indices) {
  const int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= outputs) return;
  const T* xo = x + (o / inner) * axis * inner + o % inner;
  T best = xo[0];
  int64_t at = 0;
  for (int64_t a = 1; a < axis; ++a) {
    const T v = xo[a * inner];
    if (better<T, IsMax>(v, best)) {
      best = v;
      at = a;
    }
  }
  if (values) values[o] = best;
  indices[o] = at;
}

template <class T, bool IsMax, int Group>
__global__ void __launch_bounds__(256)
    arg_reduce_group_kernel(int64_t outputs, int64_t axis, int64_t inner, const T* __restrict__ x,
                            T* __restrict__ values, int64_t* __restrict__ indices) {
  __shared__ T best_value[256];
  __shared__ int64_t best_index[256];
  const int lane = static_cast<int>(threadIdx.x) % Group;
  const int64_t o = static_cast<int64_t>(blockIdx.x) * (256 / Group) + threadIdx.x / Group;
  T best{};
  int64_t at = -1;  // -1: no value (lane >= axis, or o past the outputs)
  if (o < outputs) {
    const T* xo = x + (o / inner) * axis * inner + o % inner;
    for (int64_t a = lane; a < axis; a += Group) {
      const T v = xo[a * inner];
      if (at < 0 || better<T, IsMax>(v, best)) {
        best = v;
        at = a;
      }
    }
  }
  best_value[threadIdx.x] = best;
  best_index[threadIdx.x] = at;
  for (int half = Group / 2; half > 0; half /= 2) {
    __syncthreads();
    if (lane < half) {
      const T v = best_value[threadIdx.x + half];
      const int64_t a = best_index[threadIdx.x + half];
      if (a >= 0 && (at < 0 || better<T, IsMax>(v, best) || (!better<T, IsMax>(best, v) && a < at))) {
        best = v;
        at = a;
        best_value[threadIdx.x] = v;
        best_index[threadIdx.x] = a;
      }
    }
  }
  if (lane == 0 && o < outputs) {
    if (values) values[o] = best;
    indices[o] = at;
  }
}

template <class T, bool IsMax>
void launch(cudaStream_t stream, int64_t outer, int64_t axis, int64_t inner, const void* x, void* values,
            int64_t* indices) {
  const int64_t outputs = outer * inner;
  const auto* xs = static_cast<const T*>(x);
  auto* vs = static_cast<T*>(values);
  // A group per output where the walk of the axis would be long and the threads too few to
  // hide it (or its reads are contiguous anyway).
  const bool grouped = axis >= 64 && (inner == 1 || (axis >= 1024 && outputs < 16384));
  if (!grouped) {
    arg_reduce_thread_kernel<T, IsMax>
        <<<blocks_for(outputs), kThreads, 0, stream>>>(outputs, axis, inner, xs, vs, indices);
    check_launch("arg_reduce_thread_kernel");
  } else if (axis < 4096) {
    const auto blocks = static_cast<unsigned>((outputs + 7) / 8);
    arg_reduce_group_kernel<T, IsMax, 32><<<blocks, 256, 0, stream>>>(outputs, axis, inner, xs, vs, indices);
    check_launch("arg_reduce_group_kernel");
  } else {
    arg_reduce_group_kernel<T, IsMax, 256>
        <<<static_cast<unsigned>(outputs), 256, 0, stream>>>(outputs, axis, inner, xs, vs, indices);
    check_launch("arg_reduce_group_kernel");
  }
}

template <class T>
void launch_typed(cudaStream_t stream, bool is_max, int64_t outer, int64_t axis, int64_t inner, const void* x,
                  void* values, int64_t* indices) {
  if (is_max)
    launch<T, true>(stream, outer, axis, inner, x, values, indices);
  else
    launch<T, false>(stream, outer, axis, inner, x, values, indices);
}

}  // namespace

void arg_reduce(cudaStream_t stream, ElemType t, bool is_max, int64_t outer, int64_t axis, int64_t inner,
                const void* x, void* values, int64_t* indices) {
  if (outer <= 0 || axis <= 0 || inner <= 0) return;
  switch (t) {
    case ElemType::F32:
      return launch_typed<float>(stream, is_max, outer, axis, inner, x, values, indices);
    case ElemType::I64:
      return launch_typed<int64_t>(stream, is_max, outer, axis, inner, x, values, indices);
    case ElemType::I32:
      return launch_typed<int32_t>(stream, is_max, outer, axis, inner, x, values, indices);
    case ElemType::Bool:
      return launch_typed<bool>(stream, is_max, outer, axis, inner, x, values, indices);
  }
  note_error("arg_reduce", "unknown element type");
}

}  // namespace aotc::rt::cuda
