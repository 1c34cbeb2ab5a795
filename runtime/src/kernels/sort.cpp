// sort.cpp - the first k values of each line along the middle axis of outer x axis x inner,
// in sorted order, with their int64 indices along the axis (torch.topk, sort, argsort,
// msort). The order is total: a NaN counts as larger than every number (where torch puts
// it), and equal values (two NaNs, -0 and 0) keep the order of their indices, as torch's
// stable sort does, so the result does not depend on the algorithm (topk's ties, which
// torch leaves unspecified, come out in index order too). k below the axis takes a partial
// sort of the line's indices.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

// a < b in the sort's order of values: a NaN after every number, NaNs equal.
template <class T>
inline bool value_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return false;
    if (b != b) return true;
  }
  return a < b;
}

template <class T>
void sort_typed(ThreadPool& pool, bool descending, int64_t outer, int64_t axis, int64_t inner, int64_t k,
                const T* x, T* values, int64_t* indices) {
  pool.parallel_for(outer * inner, detail::min_chunk_for(axis * 8), [&](int64_t o0, int64_t o1) {
    std::vector<int64_t> order(static_cast<size_t>(axis));
    for (int64_t o = o0; o < o1; ++o) {
      const int64_t line = o / inner, lane = o % inner;
      const T* in = x + line * axis * inner + lane;
      const auto before = [&](int64_t i, int64_t j) {
        const T a = in[i * inner], b = in[j * inner];
        if (descending ? value_less(b, a) : value_less(a, b)) return true;
        if (descending ? value_less(a, b) : value_less(b, a)) return false;
        return i < j;
      };
      std::iota(order.begin(), order.end(), int64_t{0});
      if (k < axis)
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      else
        std::sort(order.begin(), order.end(), before);
      const int64_t out = line * k * inner + lane;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = order[static_cast<size_t>(j)];
        if (values) values[out + j * inner] = in[at * inner];
        indices[out + j * inner] = at;
      }
    }
  });
}

}  // namespace

void sort_lines(ThreadPool& pool, ElemType t, bool descending, int64_t outer, int64_t axis, int64_t inner,
                int64_t k, const void* x, void* values, int64_t* indices) {
  if (outer <= 0 || axis <= 0 || inner <= 0 || k <= 0) return;
  k = std::min(k, axis);
  switch (t) {
    case ElemType::F32:
      return sort_typed(pool, descending, outer, axis, inner, k, static_cast<const float*>(x),
                        static_cast<float*>(values), indices);
    case ElemType::I64:
      return sort_typed(pool, descending, outer, axis, inner, k, static_cast<const int64_t*>(x),
                        static_cast<int64_t*>(values), indices);
    case ElemType::I32:
      return sort_typed(pool, descending, outer, axis, inner, k, static_cast<const int32_t*>(x),
                        static_cast<int32_t*>(values), indices);
    case ElemType::Bool:
      return sort_typed(pool, descending, outer, axis, inner, k, static_cast<const bool*>(x),
                        static_cast<bool*>(values), indices);
  }
}

}  // namespace aotc::rt
