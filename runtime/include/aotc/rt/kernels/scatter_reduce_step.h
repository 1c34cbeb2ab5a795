// kernels/scatter_reduce_step.h - the arithmetic of scatter_reduce (ScatterReduceOp,
// data_movement.h), shared by the CPU kernel (runtime/src/kernels/scatter_reduce.cpp) and
// the CUDA one (runtime/cuda/kernels/scatter_reduce.cu): both start each reached element
// from the same value, fold its contributions in index order with the same operations and
// divide a mean the same way, so the two targets give the same bits.
#pragma once

#include <aotc/rt/kernels/data_movement.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define AOTC_SCATTER_STEP __host__ __device__ inline
#else
#define AOTC_SCATTER_STEP inline
#endif

namespace aotc::rt::scatter_reduce_step {

// The value a reached element starts from without include_self (torch's: 0, 1, the lowest
// and the largest value of the type).
template <class T>
AOTC_SCATTER_STEP T identity(ScatterReduceOp op) {
  if (op == ScatterReduceOp::Prod) return T(1);
  // (no std::numeric_limits: its functions are host-only for nvcc)
  if constexpr (std::is_floating_point_v<T>) {
    if (op == ScatterReduceOp::Amax) return -T(INFINITY);
    if (op == ScatterReduceOp::Amin) return T(INFINITY);
  } else {
    using U = std::make_unsigned_t<T>;
    const T most = static_cast<T>(static_cast<U>(~U(0)) >> 1);
    if (op == ScatterReduceOp::Amax) return static_cast<T>(-most - 1);
    if (op == ScatterReduceOp::Amin) return most;
  }
  return T(0);
}

// acc OP x. Integer sums and products wrap (in unsigned arithmetic: no undefined overflow);
// a NaN in either operand of Amax / Amin is kept (torch: a NaN source replaces the value,
// and a NaN value is never replaced).
template <class T>
AOTC_SCATTER_STEP T combine(ScatterReduceOp op, T acc, T x) {
  switch (op) {
    case ScatterReduceOp::Sum:
    case ScatterReduceOp::Mean:
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(acc) + static_cast<U>(x));
      } else {
        return acc + x;
      }
    case ScatterReduceOp::Prod:
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(acc) * static_cast<U>(x));
      } else {
        return acc * x;
      }
    case ScatterReduceOp::Amax:
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(x)) return x;
      return acc < x ? x : acc;
    case ScatterReduceOp::Amin:
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(x)) return x;
      return x < acc ? x : acc;
  }
  return acc;
}

// A mean's sum divided by its count (> 0): floored for integers, as torch's
// div(rounding_mode="floor").
template <class T>
AOTC_SCATTER_STEP T divide(T sum, int64_t count) {
  if constexpr (std::is_integral_v<T>) {
    const int64_t s = static_cast<int64_t>(sum);
    int64_t q = s / count;
    if ((s % count != 0) && (s < 0)) --q;
    return static_cast<T>(q);
  } else {
    return sum / static_cast<T>(count);
  }
}

}  // namespace aotc::rt::scatter_reduce_step
