// kernels/pointwise.h - the pointwise kernels: unary, binary, cast and where, float32 and dtype-generic.
#pragma once

#include <cstdint>

namespace aotc::rt {

class ThreadPool;

// ---------------------------------------------------------------- pointwise
enum class UnaryOp : int32_t {
  Identity = 0,
  Relu = 1,
  Clamp = 2,      // min(max(x, a), b): relu6, hardtanh, clamp
  LeakyRelu = 3,  // x >= 0 ? x : a * x
  Sigmoid = 4,
  Tanh = 5,
  GeluErf = 6,       // 0.5 x (1 + erf(x / sqrt 2))
  GeluTanh = 7,      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  Silu = 8,          // x * sigmoid(x)
  Hardswish = 9,     // x * clamp(x + 3, 0, 6) / 6
  Hardsigmoid = 10,  // clamp(x + 3, 0, 6) / 6
  // Math and activations of the pointwise family. a and b as noted.
  Neg = 11,
  Abs = 12,
  Reciprocal = 13,
  Sqrt = 14,
  Rsqrt = 15,
  Exp = 16,
  Exp2 = 17,
  Log = 18,
  Log2 = 19,
  Log10 = 20,
  Log1p = 21,
  Expm1 = 22,
  Sin = 23,
  Cos = 24,
  Tan = 25,
  Erf = 26,
  Floor = 27,
  Ceil = 28,
  Round = 29,  // half to even, as torch.round
  Trunc = 30,
  Sign = 31,
  Square = 32,
  Elu = 33,            // x > 0 ? x : a * (exp(b * x) - 1)  (celu: b = 1 / a)
  Selu = 34,           // scale * elu(x, alpha) with torch's constants
  Softplus = 35,       // a = beta, b = threshold: x * beta > threshold ? x : log1p(exp(beta x)) / beta
  Mish = 36,           // x * tanh(softplus(x))
  LogSigmoid = 37,     // -softplus(-x)
  Softsign = 38,       // x / (1 + |x|)
  Tanhshrink = 39,     // x - tanh(x)
  Hardshrink = 40,     // |x| > a ? x : 0
  Softshrink = 41,     // x > a ? x - a : x < -a ? x + a : 0
  Threshold = 42,      // x > a ? x : b
  PowScalar = 43,      // x ^ a
  ScalarPow = 44,      // a ^ x
  ScaleShift = 45,     // a * x + b
  ZeroNonFinite = 46,  // x if finite, else 0 (logsumexp's shift)
  BitwiseNot = 47,     // integer and bool tensors only (unary, not unary_f32)
  Asin = 48,
  Acos = 49,
  Atan = 50,
  Sinh = 51,
  Cosh = 52,
  Erfc = 53,
  // kernels/special_math.h's (digamma, erfinv, ndtri) and lgamma: computed in double.
  Lgamma = 54,
  Digamma = 55,
  Erfinv = 56,
  Ndtri = 57,
  Signbit = 58,  // 1 where x's sign bit is set (-0 and negative NaNs included), else 0
};
void unary_f32(ThreadPool& pool, UnaryOp op, float a, float b, int64_t count, const float* x, float* y);

enum class BinaryOp : int32_t {
  Add = 0,
  Sub = 1,
  Mul = 2,
  Div = 3,  // true division (float32 only: the compiler casts integer operands to float)
  // Pointwise: the rest of the elementwise family, with torch's semantics per dtype.
  FloorDiv = 4,   // floor(a / b); integers: Python's //, 0 for b == 0 (torch raises)
  TruncDiv = 5,   // trunc(a / b); integers: C's /, 0 for b == 0
  Remainder = 6,  // Python's %: the result has b's sign
  Fmod = 7,       // C's fmod: the result has a's sign
  Pow = 8,
  Minimum = 9,  // NaN-propagating
  Maximum = 10,
  BitwiseAnd = 11,  // integer and bool only
  BitwiseOr = 12,
  BitwiseXor = 13,
  PRelu = 14,  // a > 0 ? a : a * b
  Atan2 = 15,
  LeftShift = 16,   // integers only (int_shift.h: torch's rules for shifts out of range)
  RightShift = 17,  // arithmetic
  // Comparisons and logic: the result is bool whatever the operands' dtype.
  Eq = 32,
  Ne = 33,
  Lt = 34,
  Le = 35,
  Gt = 36,
  Ge = 37,
  LogicalAnd = 38,
  LogicalOr = 39,
  LogicalXor = 40,
};
// True when op's result is bool (comparisons and logical ops).
inline bool binary_op_gives_bool(BinaryOp op) { return static_cast<int32_t>(op) >= 32; }

// y = a OP (alpha * b) with broadcasting: out_dims has rank entries; strides are in
// elements per dimension of the output index space (0 where that input broadcasts).
struct BinaryParams {
  BinaryOp op = BinaryOp::Add;
  float alpha = 1.0f;  // scales b (torch's add/sub alpha); 1 for mul/div
  int32_t rank = 0;
  int64_t out_dims[8] = {};
  int64_t a_strides[8] = {};
  int64_t b_strides[8] = {};
};
void binary_f32(ThreadPool& pool, const BinaryParams& p, const float* a, const float* b, float* y);

// ---------------------------------------------------------------- pointwise: dtypes
// The element types of the dtype-generic pointwise kernels below. One kernel per op family
// takes the dtype as an argument (and switches to a template instance once per call), rather
// than generated code per op: the runtime is compiled once and unit tested, generated code
// stays one call per op, and the float32 paths keep their hand-vectorised loops.
enum class ElemType : int32_t { F32 = 0, I64 = 1, I32 = 2, Bool = 3 };
inline int64_t elem_size(ElemType t) {
  return t == ElemType::F32 || t == ElemType::I32 ? 4 : t == ElemType::I64 ? 8 : 1;
}

// y = a OP (alpha * b) as binary_f32, for operands of any ElemType (both of type t). y has
// type t, or bool when binary_op_gives_bool(p.op). Integer ops never trap: division by
// zero gives 0 and INT_MIN / -1 wraps (torch raises or wraps there).
void binary(ThreadPool& pool, const BinaryParams& p, ElemType t, const void* a, const void* b, void* y);

// Unary ops on integer and bool tensors (x and y of type t): Identity, Relu, Neg, Abs,
// Sign, Square, Clamp (bounds a, b, rounded into t), BitwiseNot (logical not for bool).
void unary(ThreadPool& pool, UnaryOp op, ElemType t, double a, double b, int64_t count, const void* x,
           void* y);

// y[i] = x[i] converted as torch converts (float -> int truncates, -> bool is != 0).
void cast(ThreadPool& pool, ElemType from, ElemType to, int64_t count, const void* x, void* y);

// y = cond ? a : b with broadcasting (strides in elements of the output index space, as
// BinaryParams), for elements of elem_size bytes (1, 4 or 8).
struct WhereParams {
  int32_t rank = 0;
  int64_t out_dims[8] = {};
  int64_t cond_strides[8] = {};
  int64_t a_strides[8] = {};
  int64_t b_strides[8] = {};
};
void where(ThreadPool& pool, const WhereParams& p, int64_t elem_size, const bool* cond, const void* a,
           const void* b, void* y);

}  // namespace aotc::rt
