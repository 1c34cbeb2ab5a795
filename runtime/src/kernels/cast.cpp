// cast.cpp - dtype conversion between float32, int64, int32 and bool, as torch converts:
// float -> integer truncates toward zero (out-of-range values are clamped here, where C++
// would be undefined), anything -> bool is "!= 0". y never aliases x (sizes may differ).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (v != v) return 0;
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<To>::max());
    const double d = static_cast<double>(v);
    if (d <= lo) return std::numeric_limits<To>::min();
    if (d >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
  }
}

template <class To, class From>
void cast_run(ThreadPool& pool, int64_t count, const void* x, void* y) {
  const From* src = static_cast<const From*>(x);
  To* dst = static_cast<To*>(y);
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dst[i] = convert<To>(src[i]);
  });
}

template <class From>
void cast_from(ThreadPool& pool, ElemType to, int64_t count, const void* x, void* y) {
  switch (to) {
    case ElemType::F32:
      return cast_run<float, From>(pool, count, x, y);
    case ElemType::I64:
      return cast_run<int64_t, From>(pool, count, x, y);
    case ElemType::I32:
      return cast_run<int32_t, From>(pool, count, x, y);
    case ElemType::Bool:
      return cast_run<bool, From>(pool, count, x, y);
  }
}

}  // namespace

void cast(ThreadPool& pool, ElemType from, ElemType to, int64_t count, const void* x, void* y) {
  if (count <= 0) return;
  if (from == to) {
    if (x != y) std::memcpy(y, x, static_cast<size_t>(count * elem_size(to)));
    return;
  }
  switch (from) {
    case ElemType::F32:
      return cast_from<float>(pool, to, count, x, y);
    case ElemType::I64:
      return cast_from<int64_t>(pool, to, count, x, y);
    case ElemType::I32:
      return cast_from<int32_t>(pool, to, count, x, y);
    case ElemType::Bool:
      return cast_from<bool>(pool, to, count, x, y);
  }
}

}  // namespace aotc::rt
