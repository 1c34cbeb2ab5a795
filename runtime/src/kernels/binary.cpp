// binary.cpp - y = a OP (alpha * b) with general broadcasting over strided inputs, for
// float32, int64, int32 and bool operands (both of one type; comparisons write bool).
// Dimensions are first simplified (size-1 dims dropped, mergeable neighbours merged),
// so the common cases end up as a few long rows with a contiguous, scalar or
// broadcast operand, each handled by its own vectorisable loop. y may alias a or b
// when that operand has the full output shape and the same element type.
#include <aotc/rt/kernels.h>
#include <aotc/rt/kernels/int_shift.h>
#include <aotc/rt/thread_pool.h>

#include <cmath>
#include <type_traits>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

// One row of count outputs; the stride of each input is 1 (contiguous), 0 (broadcast)
// or anything else.
template <class T, class R, class F>
void binary_row(F f, const T* a, int64_t sa, const T* b, int64_t sb, R* y, int64_t count) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < count; ++i) y[i] = f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const T bv = b[0];
    for (int64_t i = 0; i < count; ++i) y[i] = f(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const T av = a[0];
    for (int64_t i = 0; i < count; ++i) y[i] = f(av, b[i]);
  } else if (sa == 0 && sb == 0) {
    const R v = f(a[0], b[0]);
    for (int64_t i = 0; i < count; ++i) y[i] = v;
  } else {
    for (int64_t i = 0; i < count; ++i) y[i] = f(a[i * sa], b[i * sb]);
  }
}

// The simplified index space: dims[rank - 1] is the row.
struct Layout {
  int rank = 0;
  int64_t dims[8] = {};
  int64_t sa[8] = {};
  int64_t sb[8] = {};
};

// Drops size-1 dims and merges dim d into d + 1 where both inputs step through them as
// one dimension (the output is dense, so it always can). Returns false when empty.
bool simplify(const BinaryParams& p, Layout& l) {
  for (int d = 0; d < p.rank; ++d) {
    if (p.out_dims[d] <= 0) return false;
    if (p.out_dims[d] == 1) continue;
    if (l.rank > 0) {
      const int last = l.rank - 1;
      if (l.sa[last] == p.a_strides[d] * p.out_dims[d] && l.sb[last] == p.b_strides[d] * p.out_dims[d]) {
        l.dims[last] *= p.out_dims[d];
        l.sa[last] = p.a_strides[d];
        l.sb[last] = p.b_strides[d];
        continue;
      }
    }
    l.dims[l.rank] = p.out_dims[d];
    l.sa[l.rank] = p.a_strides[d];
    l.sb[l.rank] = p.b_strides[d];
    ++l.rank;
  }
  if (l.rank == 0) {  // a single element
    l.rank = 1;
    l.dims[0] = 1;
    l.sa[0] = 0;
    l.sb[0] = 0;
  }
  return true;
}

// Outputs [begin, end) of the dense output, row piece by row piece.
template <class T, class R, class F>
void binary_range(F f, const Layout& l, const T* a, const T* b, R* y, int64_t begin, int64_t end) {
  const int inner = l.rank - 1;
  int64_t idx[8];
  int64_t off_a = 0, off_b = 0, rem = begin;
  for (int d = inner; d >= 0; --d) {
    idx[d] = rem % l.dims[d];
    rem /= l.dims[d];
    off_a += idx[d] * l.sa[d];
    off_b += idx[d] * l.sb[d];
  }
  for (int64_t e = begin; e < end;) {
    const int64_t len = detail::min_i64(l.dims[inner] - idx[inner], end - e);
    binary_row(f, a + off_a, l.sa[inner], b + off_b, l.sb[inner], y + e, len);
    e += len;
    idx[inner] += len;
    off_a += len * l.sa[inner];
    off_b += len * l.sb[inner];
    // Carry into the outer dims.
    for (int d = inner; d > 0 && idx[d] == l.dims[d]; --d) {
      off_a += l.sa[d - 1] - l.dims[d] * l.sa[d];
      off_b += l.sb[d - 1] - l.dims[d] * l.sb[d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template <class T, class R, class F>
void binary_run(ThreadPool& pool, F f, const Layout& l, const void* a, const void* b, void* y) {
  int64_t total = 1;
  for (int d = 0; d < l.rank; ++d) total *= l.dims[d];
  const T* ta = static_cast<const T*>(a);
  const T* tb = static_cast<const T*>(b);
  R* ty = static_cast<R*>(y);
  pool.parallel_for(total, detail::kElementwiseMinChunk,
                    [&](int64_t begin, int64_t end) { binary_range<T, R>(f, l, ta, tb, ty, begin, end); });
}

// ---- integer semantics (no traps: torch raises on integer division by zero, we give 0)
template <class T>
T int_div_trunc(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));  // INT_MIN wraps
  return static_cast<T>(a / b);
}
template <class T>
T int_mod_trunc(T a, T b) {
  if (b == 0 || b == -1) return 0;
  return static_cast<T>(a % b);
}
template <class T>
T int_div_floor(T a, T b) {
  const T q = int_div_trunc(a, b);
  const T r = int_mod_trunc(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
}
template <class T>
T int_remainder(T a, T b) {
  const T r = int_mod_trunc(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
}
template <class T>
T int_pow(T base, T exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp % 2 == 0) ? 1 : -1;
    return 0;
  }
  using U = std::make_unsigned_t<T>;  // wraps on overflow, as torch's integer pow
  U result = 1, b = static_cast<U>(base);
  for (T e = exp; e > 0; e = static_cast<T>(e >> 1)) {
    if (e & 1) result *= b;
    b *= b;
  }
  return static_cast<T>(result);
}

// ---- float semantics, as ATen's CPU kernels
inline float float_floor_div(float a, float b) {
  if (b == 0.0f) return a / b;
  const float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) div -= 1.0f;
  if (div == 0.0f) return std::copysign(0.0f, a / b);
  float floordiv = std::floor(div);
  if (div - floordiv > 0.5f) floordiv += 1.0f;
  return floordiv;
}
inline float float_remainder(float a, float b) {
  float mod = std::fmod(a, b);
  if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) mod += b;
  return mod;
}

// Ops whose result has the operands' type T.
template <class T>
void run_arithmetic(ThreadPool& pool, const BinaryParams& p, const Layout& l, const void* a, const void* b,
                    void* y) {
  constexpr bool kFloat = std::is_same_v<T, float>;
  constexpr bool kBool = std::is_same_v<T, bool>;
  auto run = [&](auto f) { binary_run<T, T>(pool, f, l, a, b, y); };
  switch (p.op) {
    case BinaryOp::Add:
      if constexpr (kBool) {
        run([](T x, T v) { return static_cast<T>(x || v); });
      } else if (p.alpha == 1.0f) {
        run([](T x, T v) { return static_cast<T>(x + v); });
      } else {
        const T alpha = static_cast<T>(p.alpha);
        run([alpha](T x, T v) { return static_cast<T>(x + alpha * v); });
      }
      return;
    case BinaryOp::Sub:
      if constexpr (!kBool) {
        if (p.alpha == 1.0f) {
          run([](T x, T v) { return static_cast<T>(x - v); });
        } else {
          const T alpha = static_cast<T>(p.alpha);
          run([alpha](T x, T v) { return static_cast<T>(x - alpha * v); });
        }
      }
      return;
    case BinaryOp::Mul:
      if constexpr (kBool) {
        run([](T x, T v) { return static_cast<T>(x && v); });
      } else {
        run([](T x, T v) { return static_cast<T>(x * v); });
      }
      return;
    case BinaryOp::Div:
      if constexpr (kFloat) run([](T x, T v) { return x / v; });
      return;
    case BinaryOp::FloorDiv:
      if constexpr (kFloat) {
        run([](T x, T v) { return float_floor_div(x, v); });
      } else if constexpr (!kBool) {
        run([](T x, T v) { return int_div_floor(x, v); });
      }
      return;
    case BinaryOp::TruncDiv:
      if constexpr (kFloat) {
        run([](T x, T v) { return std::trunc(x / v); });
      } else if constexpr (!kBool) {
        run([](T x, T v) { return int_div_trunc(x, v); });
      }
      return;
    case BinaryOp::Remainder:
      if constexpr (kFloat) {
        run([](T x, T v) { return float_remainder(x, v); });
      } else if constexpr (!kBool) {
        run([](T x, T v) { return int_remainder(x, v); });
      }
      return;
    case BinaryOp::Fmod:
      if constexpr (kFloat) {
        run([](T x, T v) { return std::fmod(x, v); });
      } else if constexpr (!kBool) {
        run([](T x, T v) { return int_mod_trunc(x, v); });
      }
      return;
    case BinaryOp::Pow:
      if constexpr (kFloat) {
        run([](T x, T v) { return std::pow(x, v); });
      } else if constexpr (!kBool) {
        run([](T x, T v) { return int_pow(x, v); });
      }
      return;
    case BinaryOp::Minimum:
      if constexpr (kFloat) {
        run([](T x, T v) { return x != x ? x : (v != v ? v : (v < x ? v : x)); });
      } else {
        run([](T x, T v) { return v < x ? v : x; });
      }
      return;
    case BinaryOp::Maximum:
      if constexpr (kFloat) {
        run([](T x, T v) { return x != x ? x : (v != v ? v : (v > x ? v : x)); });
      } else {
        run([](T x, T v) { return v > x ? v : x; });
      }
      return;
    case BinaryOp::BitwiseAnd:
      if constexpr (!kFloat) run([](T x, T v) { return static_cast<T>(x & v); });
      return;
    case BinaryOp::BitwiseOr:
      if constexpr (!kFloat) run([](T x, T v) { return static_cast<T>(x | v); });
      return;
    case BinaryOp::BitwiseXor:
      if constexpr (!kFloat) run([](T x, T v) { return static_cast<T>(x ^ v); });
      return;
    case BinaryOp::LeftShift:
      if constexpr (!kFloat && !kBool) run([](T x, T v) { return shift_left(x, v); });
      return;
    case BinaryOp::RightShift:
      if constexpr (!kFloat && !kBool) run([](T x, T v) { return shift_right(x, v); });
      return;
    case BinaryOp::PRelu:
      if constexpr (kFloat) run([](T x, T v) { return x > 0.0f ? x : x * v; });
      return;
    case BinaryOp::Atan2:
      if constexpr (kFloat) run([](T x, T v) { return std::atan2(x, v); });
      return;
    default:
      return;
  }
}

// Ops whose result is bool.
template <class T>
void run_compare(ThreadPool& pool, const BinaryParams& p, const Layout& l, const void* a, const void* b,
                 void* y) {
  auto run = [&](auto f) { binary_run<T, bool>(pool, f, l, a, b, y); };
  switch (p.op) {
    case BinaryOp::Eq:
      return run([](T x, T v) { return x == v; });
    case BinaryOp::Ne:
      return run([](T x, T v) { return x != v; });
    case BinaryOp::Lt:
      return run([](T x, T v) { return x < v; });
    case BinaryOp::Le:
      return run([](T x, T v) { return x <= v; });
    case BinaryOp::Gt:
      return run([](T x, T v) { return x > v; });
    case BinaryOp::Ge:
      return run([](T x, T v) { return x >= v; });
    case BinaryOp::LogicalAnd:
      return run([](T x, T v) { return x != T(0) && v != T(0); });
    case BinaryOp::LogicalOr:
      return run([](T x, T v) { return x != T(0) || v != T(0); });
    case BinaryOp::LogicalXor:
      return run([](T x, T v) { return (x != T(0)) != (v != T(0)); });
    default:
      return;
  }
}

template <class T>
void run_typed(ThreadPool& pool, const BinaryParams& p, const Layout& l, const void* a, const void* b,
               void* y) {
  if (binary_op_gives_bool(p.op)) {
    run_compare<T>(pool, p, l, a, b, y);
  } else {
    run_arithmetic<T>(pool, p, l, a, b, y);
  }
}

}  // namespace

void binary(ThreadPool& pool, const BinaryParams& p, ElemType t, const void* a, const void* b, void* y) {
  Layout l;
  if (p.rank < 0 || p.rank > 8 || !simplify(p, l)) return;
  switch (t) {
    case ElemType::F32:
      return run_typed<float>(pool, p, l, a, b, y);
    case ElemType::I64:
      return run_typed<int64_t>(pool, p, l, a, b, y);
    case ElemType::I32:
      return run_typed<int32_t>(pool, p, l, a, b, y);
    case ElemType::Bool:
      return run_typed<bool>(pool, p, l, a, b, y);
  }
}

void binary_f32(ThreadPool& pool, const BinaryParams& p, const float* a, const float* b, float* y) {
  binary(pool, p, ElemType::F32, a, b, y);
}

}  // namespace aotc::rt
