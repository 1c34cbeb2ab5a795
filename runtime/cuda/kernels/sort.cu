// sort.cu - the first k values of each line along the middle axis of outer x axis x inner in
// sorted order, with their int64 indices (torch.topk, sort, argsort, msort), in the CPU
// kernel's total order: a NaN larger than every number, equal values in index order. So
// each value's place is its rank, the count of the line's values that come before it: a
// block per line, a thread per value, the line read through shared memory in tiles of
// kTile values. That is axis^2 comparisons a line: fine for the lines models sort (scores,
// a few thousand values); a vocabulary of 50 000 takes about 2.5e9.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <type_traits>

namespace aotc::rt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTile = 2048;

// a < b in the sort's order of values: a NaN after every number, NaNs equal.
template <class T>
__device__ __forceinline__ bool value_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return false;
    if (b != b) return true;
  }
  return a < b;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    sort_lines_kernel(bool descending, int64_t axis, int64_t inner, int64_t k, const T* __restrict__ x,
                      T* __restrict__ values, int64_t* __restrict__ indices) {
  __shared__ T tile[kTile];
  const int64_t line = blockIdx.x / inner, lane = blockIdx.x % inner;
  const T* in = x + line * axis * inner + lane;
  const int64_t out = line * k * inner + lane;
  for (int64_t a0 = 0; a0 < axis; a0 += kThreads) {  // the same trip count for every thread
    const int64_t a = a0 + threadIdx.x;
    const bool mine = a < axis;
    const T v = mine ? in[a * inner] : T{};
    int64_t rank = 0;
    for (int64_t b0 = 0; b0 < axis; b0 += kTile) {
      const int n = static_cast<int>(min(static_cast<int64_t>(kTile), axis - b0));
      __syncthreads();
      for (int j = threadIdx.x; j < n; j += kThreads) tile[j] = in[(b0 + j) * inner];
      __syncthreads();
      if (!mine) continue;
      for (int j = 0; j < n; ++j) {
        const T b = tile[j];
        const bool first = descending ? value_less(v, b) : value_less(b, v);
        const bool tie = !value_less(v, b) && !value_less(b, v);
        rank += first || (tie && b0 + j < a);
      }
    }
    if (mine && rank < k) {
      if (values) values[out + rank * inner] = v;
      indices[out + rank * inner] = a;
    }
  }
}

template <class T>
void launch(cudaStream_t stream, bool descending, int64_t lines, int64_t axis, int64_t inner, int64_t k,
            const void* x, void* values, int64_t* indices) {
  sort_lines_kernel<T><<<static_cast<unsigned>(lines), kThreads, 0, stream>>>(
      descending, axis, inner, k, static_cast<const T*>(x), static_cast<T*>(values), indices);
  check_launch("sort_lines_kernel");
}

}  // namespace

void sort_lines(cudaStream_t stream, ElemType t, bool descending, int64_t outer, int64_t axis, int64_t inner,
                int64_t k, const void* x, void* values, int64_t* indices) {
  if (outer <= 0 || axis <= 0 || inner <= 0 || k <= 0) return;
  if (k > axis) k = axis;
  const int64_t lines = outer * inner;
  if (lines > 0x7fffffff) {
    note_error("sort_lines", "more lines than a grid holds");
    return;
  }
  switch (t) {
    case ElemType::F32:
      return launch<float>(stream, descending, lines, axis, inner, k, x, values, indices);
    case ElemType::I64:
      return launch<int64_t>(stream, descending, lines, axis, inner, k, x, values, indices);
    case ElemType::I32:
      return launch<int32_t>(stream, descending, lines, axis, inner, k, x, values, indices);
    case ElemType::Bool:
      return launch<bool>(stream, descending, lines, axis, inner, k, x, values, indices);
  }
  note_error("sort_lines", "unknown element type");
}

}  // namespace aotc::rt::cuda
