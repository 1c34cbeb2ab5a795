// cumsum.cpp - inclusive prefix sum along the middle axis of outer x axis x inner, in
// float32 or int64 (torch sums integer and bool tensors into int64). Each (outer, inner
// block) is independent; a column block walks the axis adding one row at a time, which
// keeps the inner loop contiguous. y may alias x.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <type_traits>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

template <class T>
inline T add_wrapping(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
  } else {
    return a + b;
  }
}

template <class T>
void cumsum_run(ThreadPool& pool, int64_t outer, int64_t axis, int64_t inner, const T* x, T* y) {
  pool.parallel_for(outer, detail::min_chunk_for(axis * inner), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const T* xo = x + o * axis * inner;
      T* yo = y + o * axis * inner;
      for (int64_t j = 0; j < inner; ++j) yo[j] = xo[j];
      for (int64_t a = 1; a < axis; ++a) {
        const T* prev = yo + (a - 1) * inner;
        const T* xr = xo + a * inner;
        T* yr = yo + a * inner;
        for (int64_t j = 0; j < inner; ++j) yr[j] = add_wrapping(prev[j], xr[j]);
      }
    }
  });
}

}  // namespace

void cumsum(ThreadPool& pool, ElemType t, int64_t outer, int64_t axis, int64_t inner, const void* x,
            void* y) {
  if (outer <= 0 || axis <= 0 || inner <= 0) return;
  if (t == ElemType::F32) {
    cumsum_run(pool, outer, axis, inner, static_cast<const float*>(x), static_cast<float*>(y));
  } else if (t == ElemType::I64) {
    cumsum_run(pool, outer, axis, inner, static_cast<const int64_t*>(x), static_cast<int64_t*>(y));
  }
}

}  // namespace aotc::rt
