// pointwise.cuh - device functions for the pointwise kernels that aotc generates per model
// (compiler/ops/cuda/unary_cuda.cpp, binary_cuda.cpp): the generated kernels have their
// sizes and broadcast strides as compile-time constants and call these for the math.
// Each formula is the one of the CPU kernels (runtime/src/kernels/unary.cpp), so that both
// targets compute the same function.
#pragma once

#include <aotc/rt/kernels.h>
#include <aotc/rt/kernels/int_shift.h>
#include <aotc/rt/kernels/special_math.h>
#include <aotc/rt/cuda/lowp.cuh>

#include <type_traits>

namespace aotc::rt::cuda {

template <UnaryOp Op>
__device__ __forceinline__ float unary_apply(float x, float a, float b) {
  if constexpr (Op == UnaryOp::Identity) {
    return x;
  } else if constexpr (Op == UnaryOp::Relu) {
    return x < 0.0f ? 0.0f : x;  // NaN stays NaN, as in torch
  } else if constexpr (Op == UnaryOp::Clamp) {
    return x != x ? x : fminf(fmaxf(x, a), b);
  } else if constexpr (Op == UnaryOp::LeakyRelu) {
    return x >= 0.0f ? x : a * x;
  } else if constexpr (Op == UnaryOp::Sigmoid) {
    return 1.0f / (1.0f + expf(-x));
  } else if constexpr (Op == UnaryOp::Tanh) {
    return tanhf(x);
  } else if constexpr (Op == UnaryOp::GeluErf) {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  } else if constexpr (Op == UnaryOp::GeluTanh) {
    const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
  } else if constexpr (Op == UnaryOp::Silu) {
    return x / (1.0f + expf(-x));
  } else if constexpr (Op == UnaryOp::Hardswish) {
    return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
  } else if constexpr (Op == UnaryOp::Hardsigmoid) {
    return x != x ? x : fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;  // NaN stays NaN, as in torch
  } else if constexpr (Op == UnaryOp::Neg) {
    return -x;
  } else if constexpr (Op == UnaryOp::Abs) {
    return fabsf(x);
  } else if constexpr (Op == UnaryOp::Reciprocal) {
    return 1.0f / x;
  } else if constexpr (Op == UnaryOp::Sqrt) {
    return sqrtf(x);
  } else if constexpr (Op == UnaryOp::Rsqrt) {
    return 1.0f / sqrtf(x);  // (rsqrtf is an approximation; this is rounded like the CPU's)
  } else if constexpr (Op == UnaryOp::Exp) {
    return expf(x);
  } else if constexpr (Op == UnaryOp::Exp2) {
    return exp2f(x);
  } else if constexpr (Op == UnaryOp::Log) {
    return logf(x);
  } else if constexpr (Op == UnaryOp::Log2) {
    return log2f(x);
  } else if constexpr (Op == UnaryOp::Log10) {
    return log10f(x);
  } else if constexpr (Op == UnaryOp::Log1p) {
    return log1pf(x);
  } else if constexpr (Op == UnaryOp::Expm1) {
    return expm1f(x);
  } else if constexpr (Op == UnaryOp::Sin) {
    return sinf(x);
  } else if constexpr (Op == UnaryOp::Cos) {
    return cosf(x);
  } else if constexpr (Op == UnaryOp::Tan) {
    return tanf(x);
  } else if constexpr (Op == UnaryOp::Erf) {
    return erff(x);
  } else if constexpr (Op == UnaryOp::Floor) {
    return floorf(x);
  } else if constexpr (Op == UnaryOp::Ceil) {
    return ceilf(x);
  } else if constexpr (Op == UnaryOp::Round) {
    return rintf(x);  // half to even, as torch.round
  } else if constexpr (Op == UnaryOp::Trunc) {
    return truncf(x);
  } else if constexpr (Op == UnaryOp::Sign) {
    return static_cast<float>((0.0f < x) - (x < 0.0f));  // NaN gives 0, as torch.sign
  } else if constexpr (Op == UnaryOp::Square) {
    return x * x;
  } else if constexpr (Op == UnaryOp::Elu) {
    return x > 0.0f ? x : a * expm1f(b * x);
  } else if constexpr (Op == UnaryOp::Selu) {
    return x > 0.0f ? 1.0507009873554804934f * x
                    : 1.0507009873554804934f * 1.6732632423543772848f * expm1f(x);
  } else if constexpr (Op == UnaryOp::Softplus) {
    return x * a > b ? x : log1pf(expf(x * a)) / a;
  } else if constexpr (Op == UnaryOp::Mish) {
    return x * tanhf(log1pf(expf(x)));
  } else if constexpr (Op == UnaryOp::LogSigmoid) {
    return (x < 0.0f ? x : 0.0f) - log1pf(expf(-fabsf(x)));
  } else if constexpr (Op == UnaryOp::Softsign) {
    return x / (1.0f + fabsf(x));
  } else if constexpr (Op == UnaryOp::Tanhshrink) {
    return x - tanhf(x);
  } else if constexpr (Op == UnaryOp::Hardshrink) {
    return (x >= -a && x <= a) ? 0.0f : x;
  } else if constexpr (Op == UnaryOp::Softshrink) {
    return x > a ? x - a : (x < -a ? x + a : 0.0f);
  } else if constexpr (Op == UnaryOp::Threshold) {
    return x > a ? x : b;
  } else if constexpr (Op == UnaryOp::PowScalar) {
    return a == 2.0f ? x * x : (a == 0.5f ? sqrtf(x) : powf(x, a));
  } else if constexpr (Op == UnaryOp::ScalarPow) {
    return powf(a, x);
  } else if constexpr (Op == UnaryOp::ScaleShift) {
    return a * x + b;
  } else if constexpr (Op == UnaryOp::ZeroNonFinite) {
    return isfinite(x) ? x : 0.0f;
  } else if constexpr (Op == UnaryOp::Asin) {
    return asinf(x);
  } else if constexpr (Op == UnaryOp::Acos) {
    return acosf(x);
  } else if constexpr (Op == UnaryOp::Atan) {
    return atanf(x);
  } else if constexpr (Op == UnaryOp::Sinh) {
    return sinhf(x);
  } else if constexpr (Op == UnaryOp::Cosh) {
    return coshf(x);
  } else if constexpr (Op == UnaryOp::Erfc) {
    return erfcf(x);
  } else if constexpr (Op == UnaryOp::Lgamma) {
    return static_cast<float>(lgamma(static_cast<double>(x)));  // in double, as the CPU's
  } else if constexpr (Op == UnaryOp::Digamma) {
    return static_cast<float>(special::digamma(x));
  } else if constexpr (Op == UnaryOp::Erfinv) {
    return static_cast<float>(special::erfinv(x));
  } else if constexpr (Op == UnaryOp::Ndtri) {
    return static_cast<float>(special::ndtri(x));
  } else {
    // (BitwiseNot is for integer and bool tensors: unary_apply_int.)
    static_assert(Op == UnaryOp::Signbit, "unknown unary op");
    return signbit(x) ? 1.0f : 0.0f;
  }
}

template <BinaryOp Op>
__device__ __forceinline__ float binary_apply(float a, float b, float alpha) {
  if constexpr (Op == BinaryOp::Add) {
    return a + alpha * b;
  } else if constexpr (Op == BinaryOp::Sub) {
    return a - alpha * b;
  } else if constexpr (Op == BinaryOp::Mul) {
    return a * b;
  } else if constexpr (Op == BinaryOp::Div) {
    return a / b;
  } else if constexpr (Op == BinaryOp::FloorDiv) {  // ATen's float floor division
    if (b == 0.0f) return a / b;
    const float mod = fmodf(a, b);
    float div = (a - mod) / b;
    if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) div -= 1.0f;
    if (div == 0.0f) return copysignf(0.0f, a / b);
    float floordiv = floorf(div);
    if (div - floordiv > 0.5f) floordiv += 1.0f;
    return floordiv;
  } else if constexpr (Op == BinaryOp::TruncDiv) {
    return truncf(a / b);
  } else if constexpr (Op == BinaryOp::Remainder) {  // the result has b's sign
    float mod = fmodf(a, b);
    if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) mod += b;
    return mod;
  } else if constexpr (Op == BinaryOp::Fmod) {
    return fmodf(a, b);
  } else if constexpr (Op == BinaryOp::Pow) {
    return powf(a, b);
  } else if constexpr (Op == BinaryOp::Minimum) {  // NaN-propagating
    return a != a ? a : (b != b ? b : (b < a ? b : a));
  } else if constexpr (Op == BinaryOp::Maximum) {
    return a != a ? a : (b != b ? b : (b > a ? b : a));
  } else if constexpr (Op == BinaryOp::PRelu) {
    return a > 0.0f ? a : a * b;
  } else {
    // (The bitwise ops are for integer and bool tensors, binary_apply_int; comparisons and
    // logical ops go through compare_apply.)
    static_assert(Op == BinaryOp::Atan2, "unknown binary op");
    return atan2f(a, b);
  }
}

// The comparisons and logical ops (operands of any one dtype): a bool result.
template <BinaryOp Op, class T>
__device__ __forceinline__ bool compare_apply(T a, T b) {
  if constexpr (Op == BinaryOp::Eq) {
    return a == b;
  } else if constexpr (Op == BinaryOp::Ne) {
    return a != b;
  } else if constexpr (Op == BinaryOp::Lt) {
    return a < b;
  } else if constexpr (Op == BinaryOp::Le) {
    return a <= b;
  } else if constexpr (Op == BinaryOp::Gt) {
    return a > b;
  } else if constexpr (Op == BinaryOp::Ge) {
    return a >= b;
  } else if constexpr (Op == BinaryOp::LogicalAnd) {
    return a != T(0) && b != T(0);
  } else if constexpr (Op == BinaryOp::LogicalOr) {
    return a != T(0) || b != T(0);
  } else {
    static_assert(Op == BinaryOp::LogicalXor, "unknown comparison");
    return (a != T(0)) != (b != T(0));
  }
}

// One element converted as the CPU's rt::cast converts it (runtime/src/kernels/cast.cpp):
// to bool "!= 0"; float to integer truncated toward zero, NaN to 0, out-of-range clamped.
template <class To, class From>
__device__ __forceinline__ To cast_apply(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    constexpr To lo =
        sizeof(To) == 8 ? static_cast<To>(-9223372036854775807LL - 1) : static_cast<To>(-2147483647 - 1);
    constexpr To hi = sizeof(To) == 8 ? static_cast<To>(9223372036854775807LL) : static_cast<To>(2147483647);
    if (v != v) return To(0);
    const double d = static_cast<double>(v);
    if (d <= static_cast<double>(lo)) return lo;
    if (d >= static_cast<double>(hi)) return hi;
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
  }
}

// ---- integer and bool operands: the CPU's rt::binary and rt::unary (runtime/src/kernels/
// binary.cpp, unary.cpp) per element. Integer arithmetic wraps (it runs on the unsigned
// type: no undefined behaviour), division and remainder by zero give 0, INT_MIN / -1 wraps,
// FloorDiv and Remainder follow Python's signs. Only the (op, type) pairs the CPU computes
// compile; the CUDA generators' dtype checks (binary_cuda.cpp, unary_cuda.cpp) accept the same.
namespace detail {

template <class T>
__device__ __forceinline__ T int_div_trunc(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
  return static_cast<T>(a / b);
}
template <class T>
__device__ __forceinline__ T int_mod_trunc(T a, T b) {
  if (b == 0 || b == -1) return 0;
  return static_cast<T>(a % b);
}
template <class T>
__device__ __forceinline__ T int_pow(T base, T exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp % 2 == 0) ? 1 : -1;
    return 0;
  }
  using U = std::make_unsigned_t<T>;
  U result = 1, b = static_cast<U>(base);
  for (T e = exp; e > 0; e = static_cast<T>(e >> 1)) {
    if (e & 1) result *= b;
    b *= b;
  }
  return static_cast<T>(result);
}

}  // namespace detail

// a OP (alpha * b) for int64 / int32 (alpha: the CPU's static_cast<T>(float alpha)) and bool.
template <BinaryOp Op, class T>
__device__ __forceinline__ T binary_apply_int(T a, T b, T alpha) {
  if constexpr (std::is_same_v<T, bool>) {
    (void)alpha;
    if constexpr (Op == BinaryOp::Add) {
      return a || b;
    } else if constexpr (Op == BinaryOp::Mul) {
      return a && b;
    } else if constexpr (Op == BinaryOp::Minimum) {
      return a && b;
    } else if constexpr (Op == BinaryOp::Maximum) {
      return a || b;
    } else if constexpr (Op == BinaryOp::BitwiseAnd) {
      return a && b;
    } else if constexpr (Op == BinaryOp::BitwiseOr) {
      return a || b;
    } else {
      static_assert(Op == BinaryOp::BitwiseXor, "no such binary op on bool");
      return a != b;
    }
  } else {
    static_assert(std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t>, "int64, int32 or bool");
    using U = std::make_unsigned_t<T>;
    if constexpr (Op == BinaryOp::Add) {
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(alpha) * static_cast<U>(b));
    } else if constexpr (Op == BinaryOp::Sub) {
      return static_cast<T>(static_cast<U>(a) - static_cast<U>(alpha) * static_cast<U>(b));
    } else if constexpr (Op == BinaryOp::Mul) {
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else if constexpr (Op == BinaryOp::FloorDiv) {
      const T q = detail::int_div_trunc(a, b), r = detail::int_mod_trunc(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
    } else if constexpr (Op == BinaryOp::TruncDiv) {
      return detail::int_div_trunc(a, b);
    } else if constexpr (Op == BinaryOp::Remainder) {  // the result has b's sign
      const T r = detail::int_mod_trunc(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
    } else if constexpr (Op == BinaryOp::Fmod) {  // a's sign
      return detail::int_mod_trunc(a, b);
    } else if constexpr (Op == BinaryOp::Pow) {
      return detail::int_pow(a, b);
    } else if constexpr (Op == BinaryOp::Minimum) {
      return b < a ? b : a;
    } else if constexpr (Op == BinaryOp::Maximum) {
      return b > a ? b : a;
    } else if constexpr (Op == BinaryOp::BitwiseAnd) {
      return static_cast<T>(a & b);
    } else if constexpr (Op == BinaryOp::BitwiseOr) {
      return static_cast<T>(a | b);
    } else if constexpr (Op == BinaryOp::LeftShift) {
      return shift_left(a, b);
    } else if constexpr (Op == BinaryOp::RightShift) {
      return shift_right(a, b);
    } else {
      static_assert(Op == BinaryOp::BitwiseXor, "no such binary op on integers");
      return static_cast<T>(a ^ b);
    }
  }
}

// The unary ops of integer and bool tensors; lo and hi are Clamp's bounds already rounded
// into T as the CPU rounds them (the generator does it). Floor, ceil, round and trunc of an
// integer are the integer itself.
template <UnaryOp Op, class T>
__device__ __forceinline__ T unary_apply_int(T x, T lo, T hi) {
  if constexpr (Op == UnaryOp::Clamp) {
    return x < lo ? lo : (x > hi ? hi : x);
  } else if constexpr (Op == UnaryOp::Identity || Op == UnaryOp::Floor || Op == UnaryOp::Ceil ||
                       Op == UnaryOp::Round || Op == UnaryOp::Trunc) {
    return x;
  } else if constexpr (std::is_same_v<T, bool>) {  // relu, sign and square of a bool are itself
    static_assert(
        Op == UnaryOp::Relu || Op == UnaryOp::Sign || Op == UnaryOp::Square || Op == UnaryOp::BitwiseNot,
        "no such unary op on bool");
    return Op == UnaryOp::BitwiseNot ? !x : x;
  } else {
    static_assert(std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t>, "int64, int32 or bool");
    using U = std::make_unsigned_t<T>;
    if constexpr (Op == UnaryOp::Relu) {
      return x < 0 ? T(0) : x;
    } else if constexpr (Op == UnaryOp::Neg) {  // INT_MIN wraps, as torch
      return static_cast<T>(0 - static_cast<U>(x));
    } else if constexpr (Op == UnaryOp::Abs) {
      return x < 0 ? static_cast<T>(0 - static_cast<U>(x)) : x;
    } else if constexpr (Op == UnaryOp::Sign) {
      return static_cast<T>((T(0) < x) - (x < T(0)));
    } else if constexpr (Op == UnaryOp::Square) {
      return static_cast<T>(static_cast<U>(x) * static_cast<U>(x));
    } else {
      static_assert(Op == UnaryOp::BitwiseNot, "no such unary op on integers");
      return static_cast<T>(~x);
    }
  }
}

// min and max that return a NaN where either operand is one (fminf and fmaxf return the
// other operand): one instruction each from sm_80.
__device__ __forceinline__ float min_keep_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return a != a || b != b ? a + b : fminf(a, b);
#endif
}
__device__ __forceinline__ float max_keep_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return a != a || b != b ? a + b : fmaxf(a, b);
#endif
}

// The clamp epilogue fused into a pointwise op: NaN passes through, as torch's relu and
// hardtanh let it.
__device__ __forceinline__ float clamp_apply(float x, float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return min_keep_nan(max_keep_nan(x, lo), hi);  // two instructions where test and select take four
#else
  return x != x ? x : fminf(fmaxf(x, lo), hi);
#endif
}

// 2^x and 1/x on the multi-function unit, one instruction each (the non-flushing forms add
// range fixups around it).
__device__ __forceinline__ float exp2_approx_ftz(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ float rcp_approx_ftz(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// GELU (erf form) for values then rounded to 16 bits, in under half the instructions of
// the erff form: x * Phi(x) with Phi(x) = erfc(z) / 2 below zero and 1 - erfc(z) / 2 above,
// z = |x| / sqrt(2), and erfc(z) = t exp(P(t) - z^2), t = 1 / (1 + z / 2) (the form of
// Numerical Recipes' erfcc, whose fit has degree 9). Here P is a degree-5 least-squares
// fit of ln(erfc(z) / t) + z^2 over z in [0, 9.5], reweighted toward its largest error:
// erfc's relative error stays below 7.8e-6, 1/30 of fp16's rounding step, and negative
// values keep that relative accuracy (no cancellation). P's coefficients are pre-multiplied
// by log2(e) for exp2, the halving folded into its constant. Against float64 GELU over
// [-12, 12]: within 8.7e-6 relative wherever |GELU(x)| > 1e-6, 1.3e-6 absolute below; an
// fp16 result is one rounding step from the correctly rounded one for 0.15% of values.
// Infinities and NaN come out as the erff form gives them.
__device__ __forceinline__ float gelu_erf_fast(float x) {
  const float t = rcp_approx_ftz(fmaf(fabsf(x), 0.35355339f, 1.0f));
  float p = 3.300533891e-01f;
  p = fmaf(p, t, -1.023072481e+00f);
  p = fmaf(p, t, 6.844515800e-01f);
  p = fmaf(p, t, 3.671448529e-01f);
  p = fmaf(p, t, 1.468665242e+00f);
  p = fmaf(p, t, -2.827231646e+00f);
  const float half_erfc = t * exp2_approx_ftz(fmaf(x * -0.72134752f, x, p));
  return x * (x >= 0.0f ? 1.0f - half_erfc : half_erfc);
}

// SiLU for values then rounded to 16 bits: x / (1 + 2^(-x log2 e)) on the multi-function
// unit's exp2 and reciprocal (relative error about 1e-6 where unary_apply's expf and IEEE
// division take about 30 instructions). x = -inf gives NaN, as the exact form does; a large
// negative x gives -0.
__device__ __forceinline__ float silu_fast(float x) {
  return x * rcp_approx_ftz(1.0f + exp2_approx_ftz(x * -1.4426950409f));
}

// A GEMM epilogue's activation (GemmParams::activation): the unary ops' own formulas.
template <GemmActivation A>
__device__ __forceinline__ float activation_apply(float x) {
  if constexpr (A == GemmActivation::GeluErf) return unary_apply<UnaryOp::GeluErf>(x, 0.0f, 0.0f);
  if constexpr (A == GemmActivation::GeluTanh) return unary_apply<UnaryOp::GeluTanh>(x, 0.0f, 0.0f);
  if constexpr (A == GemmActivation::Silu) return unary_apply<UnaryOp::Silu>(x, 0.0f, 0.0f);
  return x;
}

// The activation chosen at run time, for code where its cost is small beside the rest (a
// GEMM's epilogue). The compiler if-converts this uniform branch, computing both GELUs and
// selecting: a pass over C that applies it then runs more than twice the instructions of
// one formula, so such passes are templated on the activation (with_activation) instead.
__device__ __forceinline__ float activation_apply(GemmActivation activation, float x) {
  if (activation == GemmActivation::GeluErf) return activation_apply<GemmActivation::GeluErf>(x);
  if (activation == GemmActivation::GeluTanh) return activation_apply<GemmActivation::GeluTanh>(x);
  if (activation == GemmActivation::Silu) return activation_apply<GemmActivation::Silu>(x);
  return x;
}

// Calls f(std::integral_constant<GemmActivation, A>{}) with A the runtime activation, so that
// a launcher picks the kernel instantiated for it.
template <class F>
void with_activation(GemmActivation activation, F&& f) {
  switch (activation) {
    case GemmActivation::GeluErf:
      f(std::integral_constant<GemmActivation, GemmActivation::GeluErf>{});
      return;
    case GemmActivation::GeluTanh:
      f(std::integral_constant<GemmActivation, GemmActivation::GeluTanh>{});
      return;
    case GemmActivation::Silu:
      f(std::integral_constant<GemmActivation, GemmActivation::Silu>{});
      return;
    case GemmActivation::None:
      break;
  }
  f(std::integral_constant<GemmActivation, GemmActivation::None>{});
}

}  // namespace aotc::rt::cuda
