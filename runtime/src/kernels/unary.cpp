// unary.cpp - elementwise activations and math functions. sigmoid/silu use the
// vectorised exp of kernel_util.h; tanh, erf, log, log1p, sin, cos and rsqrt go through
// Eigen's vectorised forms (5-20x faster than libm, within 2e-7 relative and with libm's
// results for 0, inf and NaN); exp, sqrt and expm1 stay with the C library because
// Eigen's give 3e-39 for exp(-inf) and NaN for sqrt(inf).
// unary() covers the few ops that integer and bool tensors have. y may alias x.
#include <aotc/rt/kernels.h>
#include <aotc/rt/kernels/special_math.h>
#include <aotc/rt/thread_pool.h>

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <unsupported/Eigen/SpecialFunctions>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

#if AOTC_KERNELS_AVX2
// 1 + exp(-x), the denominator of sigmoid and silu.
inline __m256 one_plus_exp_neg(__m256 x) {
  const __m256 neg = _mm256_xor_ps(x, _mm256_set1_ps(-0.0f));
  return _mm256_add_ps(_mm256_set1_ps(1.0f), detail::exp_f32x8(neg));
}
#endif

#if AOTC_KERNELS_AVX2
__attribute__((target("avx512f"))) inline __m512 one_plus_exp_neg16(__m512 x) {
  return _mm512_add_ps(_mm512_set1_ps(1.0f), detail::exp_f32x16(_mm512_sub_ps(_mm512_setzero_ps(), x)));
}
#endif

// Activations built on exp: a scalar form, an 8-lane form where AVX2 is there and a
// 16-lane one for AVX-512 (the same values: they differ only where exp is subnormal, which
// 1 + exp(-x) does not see). The 16-lane form about doubles silu's rate where AVX-512 is
// there, and silu is a large share of efficientnet_b0's time (bench/results_cpu.md).
struct SigmoidOp {
  static float scalar(float v) { return 1.0f / (1.0f + detail::exp_f32(-v)); }
#if AOTC_KERNELS_AVX2
  static __m256 vec(__m256 v) { return _mm256_div_ps(_mm256_set1_ps(1.0f), one_plus_exp_neg(v)); }
  __attribute__((target("avx512f"))) static __m512 vec16(__m512 v) {
    return _mm512_div_ps(_mm512_set1_ps(1.0f), one_plus_exp_neg16(v));
  }
#endif
};
struct SiluOp {
  static float scalar(float v) { return v / (1.0f + detail::exp_f32(-v)); }
#if AOTC_KERNELS_AVX2
  static __m256 vec(__m256 v) { return _mm256_div_ps(v, one_plus_exp_neg(v)); }
  __attribute__((target("avx512f"))) static __m512 vec16(__m512 v) {
    return _mm512_div_ps(v, one_plus_exp_neg16(v));
  }
#endif
};

#if AOTC_KERNELS_AVX2
template <class Op>
__attribute__((target("avx512f"))) int64_t map_exp_op16(const float* x, float* y, int64_t count) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) _mm512_storeu_ps(y + i, Op::vec16(_mm512_loadu_ps(x + i)));
  return i;
}
#endif

template <class Op>
void map_exp_op(const float* x, float* y, int64_t count) {
  int64_t i = 0;
#if AOTC_KERNELS_AVX2
  if (detail::use_avx512()) i = map_exp_op16<Op>(x, y, count);
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(y + i, Op::vec(_mm256_loadu_ps(x + i)));
#endif
  for (; i < count; ++i) y[i] = Op::scalar(x[i]);
}

void unary_range(UnaryOp op, float a, float b, int64_t count, const float* x, float* y) {
  const ConstArrayMap xa(x, count);
  ArrayMap ya(y, count);
  switch (op) {
    case UnaryOp::Identity:
      if (x != y) std::memmove(y, x, static_cast<size_t>(count) * sizeof(float));
      break;
    case UnaryOp::Relu:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];  // NaN stays NaN
      break;
    case UnaryOp::Clamp:
      for (int64_t i = 0; i < count; ++i) y[i] = detail::clamp_value(x[i], a, b);
      break;
    case UnaryOp::LeakyRelu:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] >= 0.0f ? x[i] : a * x[i];
      break;
    case UnaryOp::Sigmoid:
      map_exp_op<SigmoidOp>(x, y, count);
      break;
    case UnaryOp::Tanh:
      ya = xa.tanh();
      break;
    case UnaryOp::GeluErf:
      detail::gelu_erf_f32(x, y, count);
      break;
    case UnaryOp::GeluTanh:
      detail::gelu_tanh_f32(x, y, count);
      break;
    case UnaryOp::Silu:
      map_exp_op<SiluOp>(x, y, count);
      break;
    case UnaryOp::Hardswish:
      for (int64_t i = 0; i < count; ++i) {
        const float r = detail::clamp_value(x[i] + 3.0f, 0.0f, 6.0f);
        y[i] = x[i] * r / 6.0f;
      }
      break;
    case UnaryOp::Hardsigmoid:
      for (int64_t i = 0; i < count; ++i) y[i] = detail::clamp_value(x[i] + 3.0f, 0.0f, 6.0f) / 6.0f;
      break;
    case UnaryOp::Neg:
      for (int64_t i = 0; i < count; ++i) y[i] = -x[i];
      break;
    case UnaryOp::Abs:
      for (int64_t i = 0; i < count; ++i) y[i] = std::fabs(x[i]);
      break;
    case UnaryOp::Reciprocal:
      for (int64_t i = 0; i < count; ++i) y[i] = 1.0f / x[i];
      break;
    case UnaryOp::Sqrt:
      for (int64_t i = 0; i < count; ++i) y[i] = std::sqrt(x[i]);
      break;
    case UnaryOp::Rsqrt:  // Eigen's vectorised forms where they keep libm's specials (0, inf, NaN)
      ya = xa.rsqrt();
      break;
    case UnaryOp::Exp:
      for (int64_t i = 0; i < count; ++i) y[i] = std::exp(x[i]);
      break;
    case UnaryOp::Exp2:
      for (int64_t i = 0; i < count; ++i) y[i] = std::exp2(x[i]);
      break;
    case UnaryOp::Log:
      ya = xa.log();
      break;
    case UnaryOp::Log2:
      for (int64_t i = 0; i < count; ++i) y[i] = std::log2(x[i]);
      break;
    case UnaryOp::Log10:
      for (int64_t i = 0; i < count; ++i) y[i] = std::log10(x[i]);
      break;
    case UnaryOp::Log1p:
      ya = xa.log1p();
      break;
    case UnaryOp::Expm1:
      for (int64_t i = 0; i < count; ++i) y[i] = std::expm1(x[i]);
      break;
    case UnaryOp::Sin:
      ya = xa.sin();
      break;
    case UnaryOp::Cos:
      ya = xa.cos();
      break;
    case UnaryOp::Tan:
      for (int64_t i = 0; i < count; ++i) y[i] = std::tan(x[i]);
      break;
    case UnaryOp::Erf:  // Eigen's vectorised erf (see GeluErf), which clamps NaN to +-1: NaN is put back
      for (int64_t i0 = 0; i0 < count; i0 += 256) {
        const int64_t n = detail::min_i64(256, count - i0);
        float buf[256];
        Eigen::Map<Eigen::ArrayXf>(buf, n) = ConstArrayMap(x + i0, n).erf();
        for (int64_t j = 0; j < n; ++j) y[i0 + j] = x[i0 + j] != x[i0 + j] ? x[i0 + j] : buf[j];
      }
      break;
    case UnaryOp::Floor:
      for (int64_t i = 0; i < count; ++i) y[i] = std::floor(x[i]);
      break;
    case UnaryOp::Ceil:
      for (int64_t i = 0; i < count; ++i) y[i] = std::ceil(x[i]);
      break;
    case UnaryOp::Round:
      for (int64_t i = 0; i < count; ++i) y[i] = std::nearbyint(x[i]);  // default mode: half to even
      break;
    case UnaryOp::Trunc:
      for (int64_t i = 0; i < count; ++i) y[i] = std::trunc(x[i]);
      break;
    case UnaryOp::Sign:  // NaN gives 0, as torch.sign
      for (int64_t i = 0; i < count; ++i) y[i] = static_cast<float>((0.0f < x[i]) - (x[i] < 0.0f));
      break;
    case UnaryOp::Square:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] * x[i];
      break;
    case UnaryOp::Elu:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] > 0.0f ? x[i] : a * std::expm1(b * x[i]);
      break;
    case UnaryOp::Selu: {
      constexpr float kAlpha = 1.6732632423543772848170429916717f;
      constexpr float kScale = 1.0507009873554804934193349852946f;
      for (int64_t i = 0; i < count; ++i)
        y[i] = x[i] > 0.0f ? kScale * x[i] : kScale * kAlpha * std::expm1(x[i]);
      break;
    }
    case UnaryOp::Softplus:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] * a > b ? x[i] : std::log1p(std::exp(x[i] * a)) / a;
      break;
    case UnaryOp::Mish:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] * std::tanh(std::log1p(std::exp(x[i])));
      break;
    case UnaryOp::LogSigmoid:
      for (int64_t i = 0; i < count; ++i)
        y[i] = (x[i] < 0.0f ? x[i] : 0.0f) - std::log1p(std::exp(-std::fabs(x[i])));
      break;
    case UnaryOp::Softsign:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] / (1.0f + std::fabs(x[i]));
      break;
    case UnaryOp::Tanhshrink:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] - std::tanh(x[i]);
      break;
    case UnaryOp::Hardshrink:
      for (int64_t i = 0; i < count; ++i) y[i] = (x[i] >= -a && x[i] <= a) ? 0.0f : x[i];
      break;
    case UnaryOp::Softshrink:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] > a ? x[i] - a : (x[i] < -a ? x[i] + a : 0.0f);
      break;
    case UnaryOp::Threshold:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] > a ? x[i] : b;
      break;
    case UnaryOp::PowScalar:
      if (a == 2.0f) {
        for (int64_t i = 0; i < count; ++i) y[i] = x[i] * x[i];
      } else if (a == 0.5f) {
        for (int64_t i = 0; i < count; ++i) y[i] = std::sqrt(x[i]);
      } else {
        for (int64_t i = 0; i < count; ++i) y[i] = std::pow(x[i], a);
      }
      break;
    case UnaryOp::ScalarPow:
      for (int64_t i = 0; i < count; ++i) y[i] = std::pow(a, x[i]);
      break;
    case UnaryOp::ScaleShift:
      for (int64_t i = 0; i < count; ++i) y[i] = a * x[i] + b;
      break;
    case UnaryOp::ZeroNonFinite:
      for (int64_t i = 0; i < count; ++i) y[i] = std::isfinite(x[i]) ? x[i] : 0.0f;
      break;
    case UnaryOp::Asin:
      for (int64_t i = 0; i < count; ++i) y[i] = std::asin(x[i]);
      break;
    case UnaryOp::Acos:
      for (int64_t i = 0; i < count; ++i) y[i] = std::acos(x[i]);
      break;
    case UnaryOp::Atan:
      for (int64_t i = 0; i < count; ++i) y[i] = std::atan(x[i]);
      break;
    case UnaryOp::Sinh:
      for (int64_t i = 0; i < count; ++i) y[i] = std::sinh(x[i]);
      break;
    case UnaryOp::Cosh:
      for (int64_t i = 0; i < count; ++i) y[i] = std::cosh(x[i]);
      break;
    case UnaryOp::Erfc:
      for (int64_t i = 0; i < count; ++i) y[i] = std::erfc(x[i]);
      break;
    case UnaryOp::Lgamma:
      for (int64_t i = 0; i < count; ++i) y[i] = static_cast<float>(std::lgamma(static_cast<double>(x[i])));
      break;
    case UnaryOp::Digamma:
      for (int64_t i = 0; i < count; ++i) y[i] = static_cast<float>(special::digamma(x[i]));
      break;
    case UnaryOp::Erfinv:
      for (int64_t i = 0; i < count; ++i) y[i] = static_cast<float>(special::erfinv(x[i]));
      break;
    case UnaryOp::Ndtri:
      for (int64_t i = 0; i < count; ++i) y[i] = static_cast<float>(special::ndtri(x[i]));
      break;
    case UnaryOp::Signbit:
      for (int64_t i = 0; i < count; ++i) y[i] = std::signbit(x[i]) ? 1.0f : 0.0f;
      break;
    case UnaryOp::BitwiseNot:  // not a float op; the compiler never emits it for float32
      for (int64_t i = 0; i < count; ++i) y[i] = x[i];
      break;
  }
}

// The integer / bool ops; the compiler routes everything else through float32.
template <class T>
void unary_int_range(UnaryOp op, T lo, T hi, int64_t count, const T* x, T* y) {
  switch (op) {
    case UnaryOp::Relu:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] < T(0) ? T(0) : x[i];
      break;
    case UnaryOp::Clamp:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]);
      break;
    case UnaryOp::Neg:
      if constexpr (!std::is_same_v<T, bool>)  // wraps at INT_MIN, as torch
        for (int64_t i = 0; i < count; ++i)
          y[i] = static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(x[i]));
      break;
    case UnaryOp::Abs:
      if constexpr (!std::is_same_v<T, bool>)
        for (int64_t i = 0; i < count; ++i)
          y[i] = x[i] < 0 ? static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(x[i])) : x[i];
      break;
    case UnaryOp::Sign:
      for (int64_t i = 0; i < count; ++i) y[i] = static_cast<T>((T(0) < x[i]) - (x[i] < T(0)));
      break;
    case UnaryOp::Square:
      if constexpr (std::is_same_v<T, bool>) {
        for (int64_t i = 0; i < count; ++i) y[i] = x[i];
      } else {
        for (int64_t i = 0; i < count; ++i)
          y[i] = static_cast<T>(static_cast<std::make_unsigned_t<T>>(x[i]) *
                                static_cast<std::make_unsigned_t<T>>(x[i]));
      }
      break;
    case UnaryOp::BitwiseNot:
      if constexpr (std::is_same_v<T, bool>) {
        for (int64_t i = 0; i < count; ++i) y[i] = !x[i];
      } else {
        for (int64_t i = 0; i < count; ++i) y[i] = static_cast<T>(~x[i]);
      }
      break;
    default:  // Identity, and the rounding ops (floor, ceil, round, trunc) of an integer
      if (x != y) std::memmove(y, x, static_cast<size_t>(count) * sizeof(T));
      break;
  }
}

// Clamps a double bound into T's range before converting (no UB on huge bounds).
template <class T>
T bound_to(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else {
    const double lo = static_cast<double>(std::numeric_limits<T>::min());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (!(v > lo)) return std::numeric_limits<T>::min();
    if (!(v < hi)) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

template <class T>
void unary_int_run(ThreadPool& pool, UnaryOp op, double a, double b, int64_t count, const void* x, void* y) {
  const T* tx = static_cast<const T*>(x);
  T* ty = static_cast<T*>(y);
  const T lo = bound_to<T>(a), hi = bound_to<T>(b);
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t begin, int64_t end) {
    unary_int_range<T>(op, lo, hi, end - begin, tx + begin, ty + begin);
  });
}

}  // namespace

void unary(ThreadPool& pool, UnaryOp op, ElemType t, double a, double b, int64_t count, const void* x,
           void* y) {
  if (count <= 0) return;
  switch (t) {
    case ElemType::F32:
      return unary_f32(pool, op, static_cast<float>(a), static_cast<float>(b), count,
                       static_cast<const float*>(x), static_cast<float*>(y));
    case ElemType::I64:
      return unary_int_run<int64_t>(pool, op, a, b, count, x, y);
    case ElemType::I32:
      return unary_int_run<int32_t>(pool, op, a, b, count, x, y);
    case ElemType::Bool:
      return unary_int_run<bool>(pool, op, a, b, count, x, y);
  }
}

void unary_f32(ThreadPool& pool, UnaryOp op, float a, float b, int64_t count, const float* x, float* y) {
  if (count <= 0) return;
  if (op == UnaryOp::Identity && x == y) return;
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t begin, int64_t end) {
    unary_range(op, a, b, end - begin, x + begin, y + begin);
  });
}

}  // namespace aotc::rt

namespace aotc::rt::detail {
void silu_f32(const float* x, float* y, int64_t count) { map_exp_op<SiluOp>(x, y, count); }

// Eigen's vectorised erf (a 13/8-degree rational fit, within 3.4e-7 of erf in float over the
// whole line) is about 28x faster than std::erf on AVX2. On the Zen 4 benchmark machine one
// thread does 2.4 G floats/s in cache: the arithmetic, not memory, bounds it.
void gelu_erf_f32(const float* x, float* y, int64_t count) {
  constexpr float kInvSqrt2 = 0.70710678118654752440f;
  const ConstArrayMap xa(x, count);
  ArrayMap(y, count) = 0.5f * xa * (1.0f + (xa * kInvSqrt2).erf());
}

void gelu_tanh_f32(const float* x, float* y, int64_t count) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  constexpr float kKappa = 0.044715f;
  const ConstArrayMap xa(x, count);
  ArrayMap(y, count) = 0.5f * xa * (1.0f + (kSqrt2OverPi * (xa + kKappa * xa.cube())).tanh());
}
}  // namespace aotc::rt::detail
