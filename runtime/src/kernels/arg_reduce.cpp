// arg_reduce.cpp - max / min over one axis with the index of the winner (torch.max(x, dim),
// argmax, argmin) on an outer x axis x inner layout. Ties keep the first index; a NaN
// wins over every number and the first NaN is kept, as in torch.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <type_traits>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

// True when v replaces the current best m.
template <class T, bool IsMax>
inline bool better(T v, T m) {
  if constexpr (std::is_floating_point_v<T>) {
    if (m != m) return false;  // a NaN is never replaced
    if (v != v) return true;
  }
  return IsMax ? v > m : v < m;
}

template <class T, bool IsMax>
void arg_run(ThreadPool& pool, int64_t outer, int64_t axis, int64_t inner, const T* x, T* values,
             int64_t* indices) {
  pool.parallel_for(outer * inner, detail::min_chunk_for(axis), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const int64_t base = (o / inner) * axis * inner + o % inner;
      T best = x[base];
      int64_t at = 0;
      for (int64_t a = 1; a < axis; ++a) {
        const T v = x[base + a * inner];
        if (better<T, IsMax>(v, best)) {
          best = v;
          at = a;
        }
      }
      if (values) values[o] = best;
      indices[o] = at;
    }
  });
}

template <class T>
void arg_typed(ThreadPool& pool, bool is_max, int64_t outer, int64_t axis, int64_t inner, const void* x,
               void* values, int64_t* indices) {
  if (is_max) {
    arg_run<T, true>(pool, outer, axis, inner, static_cast<const T*>(x), static_cast<T*>(values), indices);
  } else {
    arg_run<T, false>(pool, outer, axis, inner, static_cast<const T*>(x), static_cast<T*>(values), indices);
  }
}

}  // namespace

void arg_reduce(ThreadPool& pool, ElemType t, bool is_max, int64_t outer, int64_t axis, int64_t inner,
                const void* x, void* values, int64_t* indices) {
  if (outer <= 0 || axis <= 0 || inner <= 0) return;
  switch (t) {
    case ElemType::F32:
      return arg_typed<float>(pool, is_max, outer, axis, inner, x, values, indices);
    case ElemType::I64:
      return arg_typed<int64_t>(pool, is_max, outer, axis, inner, x, values, indices);
    case ElemType::I32:
      return arg_typed<int32_t>(pool, is_max, outer, axis, inner, x, values, indices);
    case ElemType::Bool:
      return arg_typed<bool>(pool, is_max, outer, axis, inner, x, values, indices);
  }
}

}  // namespace aotc::rt
