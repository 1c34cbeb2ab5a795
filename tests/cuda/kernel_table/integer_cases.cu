// Integer and bool arithmetic: the device functions of aotc/rt/cuda/pointwise.cuh that the
// generated unary and binary kernels call (binary_apply_int, compare_apply, unary_apply_int),
// instantiated here over every (op, dtype) pair the CUDA generators accept, against the CPU's
// rt::binary and rt::unary on the same operands (0 divisors, INT_MIN / -1, negative operands
// of the divisions and remainders, exponents past the type's width, the types' limits); the
// library kernel reduce_i64 against the CPU's (every op and mask, odd and empty shapes, each
// of its thread-per-output, warp and block forms, sums and products that wrap); and
// reduce_f32's product.
#include <aotc/rt/cuda/pointwise.cuh>

#include <cmath>
#include <limits>

#include "kernel_table.h"

namespace aotc::test {
namespace {

using rt::BinaryOp;
using rt::ElemType;
using rt::UnaryOp;

// A device element type's host storage (bool as bytes 0 / 1: std::vector<bool> has no data()).
template <class T>
struct Elem;
template <>
struct Elem<int64_t> {
  using Host = int64_t;
  static constexpr ElemType type = ElemType::I64;
  static constexpr const char* name = "int64";
};
template <>
struct Elem<int32_t> {
  using Host = int32_t;
  static constexpr ElemType type = ElemType::I32;
  static constexpr const char* name = "int32";
};
template <>
struct Elem<bool> {
  using Host = uint8_t;
  static constexpr ElemType type = ElemType::Bool;
  static constexpr const char* name = "bool";
};

template <BinaryOp Op, class T>
__global__ void binary_int_kernel(int64_t n, const T* a, const T* b, T alpha, T* y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  if (i < n) y[i] = rt::cuda::binary_apply_int<Op, T>(a[i], b[i], alpha);
}

template <BinaryOp Op, class T>
__global__ void compare_kernel(int64_t n, const T* a, const T* b, bool* y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  if (i < n) y[i] = rt::cuda::compare_apply<Op>(a[i], b[i]);
}

template <UnaryOp Op, class T>
__global__ void unary_int_kernel(int64_t n, const T* x, T lo, T hi, T* y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  if (i < n) y[i] = rt::cuda::unary_apply_int<Op, T>(x[i], lo, hi);
}

unsigned blocks(size_t n) { return static_cast<unsigned>((n + 255) / 256); }

// Operand pairs: every pair of the type's special values, small operands (the signs of the
// divisions), and values of the whole range.
template <class T>
struct Operands {
  std::vector<typename Elem<T>::Host> a, b;
};

template <class T>
Operands<T> operands(KernelTable& t) {
  using H = typename Elem<T>::Host;
  Operands<T> o;
  if constexpr (std::is_same_v<T, bool>) {
    for (int i = 0; i < 4; ++i) o.a.push_back(static_cast<H>(i & 1)), o.b.push_back(static_cast<H>(i >> 1));
    for (int64_t v : t.ints(61, 0, 3))
      o.a.push_back(static_cast<H>(v & 1)), o.b.push_back(static_cast<H>(v >> 1));
    return o;
  } else {
    constexpr T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    std::vector<T> special = {0, 1, -1, 2, -2, 3, -3, 7, -7, 30, 31, 32, 62, 63, 64};
    for (const T v : {lo, hi, static_cast<T>(lo + 1), static_cast<T>(hi / 3), static_cast<T>(lo / 5)})
      special.push_back(v);
    for (T x : special)
      for (T y : special) o.a.push_back(x), o.b.push_back(y);
    const std::vector<int64_t> small_a = t.ints(1001, -1000, 1000), small_b = t.ints(1001, -20, 20);
    const std::vector<int64_t> wide_a = t.ints(203, lo, hi), wide_b = t.ints(203, lo, hi);
    for (size_t i = 0; i < small_a.size(); ++i)
      o.a.push_back(static_cast<T>(small_a[i])), o.b.push_back(static_cast<T>(small_b[i]));
    for (size_t i = 0; i < wide_a.size(); ++i)
      o.a.push_back(static_cast<T>(wide_a[i])), o.b.push_back(static_cast<T>(wide_b[i]));
    return o;
  }
}

const char* binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "add";
    case BinaryOp::Sub:
      return "sub";
    case BinaryOp::Mul:
      return "mul";
    case BinaryOp::FloorDiv:
      return "floor_div";
    case BinaryOp::TruncDiv:
      return "trunc_div";
    case BinaryOp::Remainder:
      return "remainder";
    case BinaryOp::Fmod:
      return "fmod";
    case BinaryOp::Pow:
      return "pow";
    case BinaryOp::Minimum:
      return "minimum";
    case BinaryOp::Maximum:
      return "maximum";
    case BinaryOp::BitwiseAnd:
      return "bitwise_and";
    case BinaryOp::BitwiseOr:
      return "bitwise_or";
    case BinaryOp::BitwiseXor:
      return "bitwise_xor";
    case BinaryOp::LeftShift:
      return "left_shift";
    case BinaryOp::RightShift:
      return "right_shift";
    case BinaryOp::Eq:
      return "eq";
    case BinaryOp::Ne:
      return "ne";
    case BinaryOp::Lt:
      return "lt";
    case BinaryOp::Le:
      return "le";
    case BinaryOp::Gt:
      return "gt";
    case BinaryOp::Ge:
      return "ge";
    case BinaryOp::LogicalAnd:
      return "logical_and";
    case BinaryOp::LogicalOr:
      return "logical_or";
    case BinaryOp::LogicalXor:
      return "logical_xor";
    default:
      return "?";
  }
}

const char* unary_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Identity:
      return "identity";
    case UnaryOp::Relu:
      return "relu";
    case UnaryOp::Clamp:
      return "clamp";
    case UnaryOp::Neg:
      return "neg";
    case UnaryOp::Abs:
      return "abs";
    case UnaryOp::Sign:
      return "sign";
    case UnaryOp::Square:
      return "square";
    case UnaryOp::Floor:
      return "floor";
    case UnaryOp::Ceil:
      return "ceil";
    case UnaryOp::Round:
      return "round";
    case UnaryOp::Trunc:
      return "trunc";
    case UnaryOp::BitwiseNot:
      return "bitwise_not";
    default:
      return "?";
  }
}

rt::BinaryParams dense_params(BinaryOp op, float alpha, size_t n) {
  rt::BinaryParams p;
  p.op = op;
  p.alpha = alpha;
  p.rank = 1;
  p.out_dims[0] = static_cast<int64_t>(n);
  p.a_strides[0] = 1;
  p.b_strides[0] = 1;
  return p;
}

// The CPU's static_cast<T>(float alpha) (binary.cpp), for the alphas used here (in range).
template <BinaryOp Op, class T>
void binary_case(KernelTable& t, const Operands<T>& o, float alpha) {
  using H = typename Elem<T>::Host;
  const size_t n = o.a.size();
  std::vector<H> cpu(n);
  rt::binary(t.pool(), dense_params(Op, alpha, n), Elem<T>::type, o.a.data(), o.b.data(), cpu.data());
  T* y = reinterpret_cast<T*>(t.device<H>(n));
  binary_int_kernel<Op, T><<<blocks(n), 256, 0, t.stream()>>>(
      static_cast<int64_t>(n), reinterpret_cast<const T*>(t.upload(o.a)),
      reinterpret_cast<const T*>(t.upload(o.b)), static_cast<T>(alpha), y);
  std::string what = std::string(Elem<T>::name) + ", " + std::to_string(n) + " pairs";
  if (alpha != 1.0f) what += ", alpha " + std::to_string(static_cast<int>(alpha));
  t.expect_equal(std::string("binary (") + binary_name(Op) + ")", what, cpu,
                 t.download(reinterpret_cast<const H*>(y), n));
}

template <BinaryOp Op, class T>
void compare_case(KernelTable& t, const Operands<T>& o) {
  const size_t n = o.a.size();
  std::vector<uint8_t> cpu(n);
  rt::binary(t.pool(), dense_params(Op, 1.0f, n), Elem<T>::type, o.a.data(), o.b.data(), cpu.data());
  bool* y = reinterpret_cast<bool*>(t.device<uint8_t>(n));
  compare_kernel<Op, T><<<blocks(n), 256, 0, t.stream()>>>(static_cast<int64_t>(n),
                                                           reinterpret_cast<const T*>(t.upload(o.a)),
                                                           reinterpret_cast<const T*>(t.upload(o.b)), y);
  t.expect_equal(std::string("binary (") + binary_name(Op) + ")",
                 std::string(Elem<T>::name) + ", " + std::to_string(n) + " pairs", cpu,
                 t.download(reinterpret_cast<const uint8_t*>(y), n));
}

template <class T, BinaryOp... Ops>
void binary_cases(KernelTable& t, const Operands<T>& o) {
  (binary_case<Ops, T>(t, o, 1.0f), ...);
}

template <class T, BinaryOp... Ops>
void compare_cases(KernelTable& t, const Operands<T>& o) {
  (compare_case<Ops, T>(t, o), ...);
}

// The CPU's bound_to (unary.cpp), which the generator applies to clamp bounds at compile time.
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

template <UnaryOp Op, class T>
void unary_case(KernelTable& t, const std::vector<typename Elem<T>::Host>& x, double a, double b) {
  using H = typename Elem<T>::Host;
  const size_t n = x.size();
  std::vector<H> cpu(n);
  rt::unary(t.pool(), Op, Elem<T>::type, a, b, static_cast<int64_t>(n), x.data(), cpu.data());
  T* y = reinterpret_cast<T*>(t.device<H>(n));
  unary_int_kernel<Op, T><<<blocks(n), 256, 0, t.stream()>>>(
      static_cast<int64_t>(n), reinterpret_cast<const T*>(t.upload(x)), bound_to<T>(a), bound_to<T>(b), y);
  std::string what = std::string(Elem<T>::name) + ", " + std::to_string(n) + " values";
  if (Op == UnaryOp::Clamp) what += ", [" + std::to_string(a) + ", " + std::to_string(b) + "]";
  t.expect_equal(std::string("unary (") + unary_name(Op) + ")", what, cpu,
                 t.download(reinterpret_cast<const H*>(y), n));
}

template <class T, UnaryOp... Ops>
void unary_cases(KernelTable& t, const std::vector<typename Elem<T>::Host>& x) {
  (unary_case<Ops, T>(t, x, 0.0, 0.0), ...);
}

template <class T>
void pointwise_cases(KernelTable& t) {
  const Operands<T> o = operands<T>(t);
  compare_cases<T, BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge,
                BinaryOp::LogicalAnd, BinaryOp::LogicalOr, BinaryOp::LogicalXor>(t, o);
  const double inf = std::numeric_limits<double>::infinity();
  if constexpr (std::is_same_v<T, bool>) {
    binary_cases<T, BinaryOp::Add, BinaryOp::Mul, BinaryOp::Minimum, BinaryOp::Maximum, BinaryOp::BitwiseAnd,
                 BinaryOp::BitwiseOr, BinaryOp::BitwiseXor>(t, o);
    binary_case<BinaryOp::Add, T>(t, o, 3.0f);  // (alpha is ignored: "or")
    unary_cases<T, UnaryOp::Identity, UnaryOp::Relu, UnaryOp::Sign, UnaryOp::Square, UnaryOp::Floor,
                UnaryOp::Ceil, UnaryOp::Round, UnaryOp::Trunc, UnaryOp::BitwiseNot>(t, o.a);
    for (const auto& [a, b] : std::vector<std::pair<double, double>>{{0, 1}, {1, 1}, {0, 0}, {-inf, inf}})
      unary_case<UnaryOp::Clamp, T>(t, o.a, a, b);
  } else {
    binary_cases<T, BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::FloorDiv, BinaryOp::TruncDiv,
                 BinaryOp::Remainder, BinaryOp::Fmod, BinaryOp::Pow, BinaryOp::Minimum, BinaryOp::Maximum,
                 BinaryOp::BitwiseAnd, BinaryOp::BitwiseOr, BinaryOp::BitwiseXor, BinaryOp::LeftShift,
                 BinaryOp::RightShift>(t, o);
    for (const float alpha : {3.0f, -2.0f}) {
      binary_case<BinaryOp::Add, T>(t, o, alpha);
      binary_case<BinaryOp::Sub, T>(t, o, alpha);
    }
    unary_cases<T, UnaryOp::Identity, UnaryOp::Relu, UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Sign,
                UnaryOp::Square, UnaryOp::Floor, UnaryOp::Ceil, UnaryOp::Round, UnaryOp::Trunc,
                UnaryOp::BitwiseNot>(t, o.a);
    for (const auto& [a, b] : std::vector<std::pair<double, double>>{
             {-3, 5}, {-inf, 7}, {2, inf}, {-1e30, 1e30}, {0, 6}, {NAN, 4}, {-5, NAN}, {9, -9}})
      unary_case<UnaryOp::Clamp, T>(t, o.a, a, b);
  }
}

// reduce_i64 over shape with the dims of mask reduced.
void reduce_i64_case(KernelTable& t, rt::ReduceOp op, const std::vector<int64_t>& shape, int mask,
                     const std::vector<int64_t>& x) {
  rt::ReduceParams p;
  p.op = op;
  p.rank = static_cast<int32_t>(shape.size());
  size_t out = 1;
  std::string what;
  for (size_t d = 0; d < shape.size(); ++d) {
    p.dims[d] = shape[d];
    p.reduce_mask[d] = (mask >> d) & 1;
    if (!p.reduce_mask[d]) out *= static_cast<size_t>(shape[d]);
    what += (d ? "x" : "") + std::to_string(shape[d]);
  }
  std::vector<int64_t> cpu(out, -1);
  rt::reduce_i64(t.pool(), p, x.data(), cpu.data());
  int64_t* y = t.device<int64_t>(out);
  rt::cuda::reduce_i64(t.stream(), p, t.upload(x), y);
  const char* names[] = {"reduce (sum, int64)", "reduce (mean, int64)", "reduce (max, int64)",
                         "reduce (min, int64)", "reduce (prod, int64)"};
  t.expect_equal(names[static_cast<int>(op)], what + " mask " + std::to_string(mask), cpu,
                 t.download(y, out));
}

void reduce_cases(KernelTable& t) {
  constexpr int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  struct Shape {
    std::vector<int64_t> dims;
    std::vector<int> masks;
  };
  const std::vector<Shape> shapes = {
      {{5, 37, 3}, {0, 1, 2, 3, 4, 5, 6, 7}},          // warp and thread per output, every mask
      {{7, 1, 1, 13}, {1, 2, 6, 9, 15}},               // size-1 dims between reduced ones
      {{2, 4099}, {1, 2, 3}},                          // a block per output
      {{3, 1, 5003}, {4, 5, 7}},                       // 5003 > 4096
      {{1, 100003}, {2, 3}},                           // a full reduction, one block
      {{11, 16, 2}, {2, 6}},                           // exactly 16 and 32 per output
      {{2, 0, 3}, {2, 1, 5}},                          // empty: the identity, or no output at all
      {{3, 2, 5, 2, 7}, {0b10101, 0b01010, 0b11011}},  // alternating roles
  };
  for (const rt::ReduceOp op : {rt::ReduceOp::Sum, rt::ReduceOp::Max, rt::ReduceOp::Min, rt::ReduceOp::Prod})
    for (const Shape& s : shapes) {
      size_t n = 1;
      for (int64_t d : s.dims) n *= static_cast<size_t>(d);
      for (int mask : s.masks) {
        // Sums wrap over the whole range; products mostly of small factors (some wrap too).
        std::vector<int64_t> x = op == rt::ReduceOp::Prod ? t.ints(n, -3, 3) : t.ints(n, lo, hi);
        if (op == rt::ReduceOp::Prod)
          for (size_t i = 0; i < n; i += 97) x[i] = t.ints(1, lo, hi)[0];
        if (n > 2) x[n / 2] = lo, x[n / 3] = hi;
        reduce_i64_case(t, op, s.dims, mask, x);
      }
    }
  // Small sums that do not wrap, as count_nonzero's.
  reduce_i64_case(t, rt::ReduceOp::Sum, {6, 9, 17}, 5, t.ints(6 * 9 * 17, 0, 1));

  // reduce_f32's product, over factors near 1.
  for (int mask = 1; mask < 8; ++mask) {
    rt::ReduceParams p;
    p.op = rt::ReduceOp::Prod;
    p.rank = 3;
    p.dims[0] = 5, p.dims[1] = 37, p.dims[2] = 3;
    size_t out = 1;
    for (int d = 0; d < 3; ++d) {
      p.reduce_mask[d] = (mask >> d) & 1;
      if (!p.reduce_mask[d]) out *= static_cast<size_t>(p.dims[d]);
    }
    std::vector<float> x = t.floats(5 * 37 * 3, false, 0.05f);
    for (float& v : x) v += 1.0f;
    std::vector<float> cpu(out);
    rt::reduce_f32(t.pool(), p, x.data(), cpu.data());
    float* y = t.device<float>(out);
    rt::cuda::reduce_f32(t.stream(), p, t.upload(x), y);
    // (Up to 555 roundings of 2^-24 each, in another order than the CPU's.)
    t.expect_close("reduce (prod)", "5x37x3 mask " + std::to_string(mask), cpu, t.download(y, out), 1e-4);
  }
}

}  // namespace

void integer_cases(KernelTable& t) {
  pointwise_cases<int64_t>(t);
  pointwise_cases<int32_t>(t);
  pointwise_cases<bool>(t);
  reduce_cases(t);
}

}  // namespace aotc::test
