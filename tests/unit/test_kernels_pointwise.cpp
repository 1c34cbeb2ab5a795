// The dtype-generic pointwise kernels against naive references:
// rt::binary (every op, every dtype, broadcasting), the new unary_f32 ops and
// rt::unary, rt::cast, rt::where, reduce_i64 / Prod, arg_reduce, sort_lines, cumsum.
// Integer and bool results must match exactly; float results within kTolerance. Outputs
// are followed by sentinel bytes that must survive.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <type_traits>

#include "kernel_reference.h"

namespace {

using aotc::rt::BinaryOp;
using aotc::rt::ElemType;
using aotc::rt::ThreadPool;
using aotc::rt::UnaryOp;
using namespace aotc::test;
using Shape = std::vector<int64_t>;

int64_t count_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Dense strides of s seen through out (0 along broadcast dims).
std::vector<int64_t> strides_in(const Shape& s, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const size_t lead = out.size() - s.size();
  int64_t dense = 1;
  for (size_t d = s.size(); d-- > 0;) {
    st[lead + d] = s[d] == 1 ? 0 : dense;
    dense *= s[d];
  }
  return st;
}

// Offset of output element e in an operand with strides st.
int64_t offset_of(int64_t e, const Shape& out, const std::vector<int64_t>& st) {
  int64_t off = 0;
  for (size_t d = out.size(); d-- > 0;) {
    off += (e % out[d]) * st[d];
    e /= out[d];
  }
  return off;
}

// A typed buffer with 64 sentinel bytes after its count elements.
template <class T>
struct Buffer {
  explicit Buffer(size_t n) : count(n), bytes(n * sizeof(T) + 64, 0xab) {}
  T* data() { return reinterpret_cast<T*>(bytes.data()); }
  T at(size_t i) const {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    return v;
  }
  bool guard_ok() const {
    for (size_t i = count * sizeof(T); i < bytes.size(); ++i)
      if (bytes[i] != 0xab) return false;
    return true;
  }
  size_t count;
  std::vector<unsigned char> bytes;
};

template <class T>
std::vector<T> random_values(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(gen));
  return v;
}

// ---- naive references, written independently of the kernels' helpers
template <class T>
T ref_floor_div(T a, T b) {
  if (b == 0) return 0;
  T q = static_cast<T>(a / b);
  if ((a % b != 0) && ((a < 0) != (b < 0))) q = static_cast<T>(q - 1);
  return q;
}
template <class T>
T ref_remainder(T a, T b) {
  if (b == 0) return 0;
  T r = static_cast<T>(a % b);
  if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
  return r;
}
template <class T>
T ref_int_pow(T a, T e) {
  if (e < 0) return a == 1 ? 1 : a == -1 ? ((e % 2) ? -1 : 1) : 0;
  T r = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(e); ++i) r = static_cast<T>(r * a);
  return r;
}

template <class T>
double ref_int_binary(BinaryOp op, T a, T b);

// bool operands: the int result of 0/1 operands, as bool.
template <>
double ref_int_binary<bool>(BinaryOp op, bool a, bool b) {
  return ref_int_binary<int>(op, a, b) != 0 ? 1.0 : 0.0;
}

template <class T>
double ref_int_binary(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::Add:
      return static_cast<double>(static_cast<T>(a + b));
    case BinaryOp::Sub:
      return static_cast<double>(static_cast<T>(a - b));
    case BinaryOp::Mul:
      return static_cast<double>(static_cast<T>(a * b));
    case BinaryOp::FloorDiv:
      return static_cast<double>(ref_floor_div(a, b));
    case BinaryOp::TruncDiv:
      return b == 0 ? 0.0 : static_cast<double>(a / b);
    case BinaryOp::Remainder:
      return static_cast<double>(ref_remainder(a, b));
    case BinaryOp::Fmod:
      return b == 0 ? 0.0 : static_cast<double>(a % b);
    case BinaryOp::Pow:
      return static_cast<double>(ref_int_pow(a, b));
    case BinaryOp::Minimum:
      return static_cast<double>(std::min(a, b));
    case BinaryOp::Maximum:
      return static_cast<double>(std::max(a, b));
    case BinaryOp::BitwiseAnd:
      return static_cast<double>(a & b);
    case BinaryOp::BitwiseOr:
      return static_cast<double>(a | b);
    case BinaryOp::BitwiseXor:
      return static_cast<double>(a ^ b);
    case BinaryOp::LeftShift: {  // torch: 0 past the width; a negative a shifts its bits
      const int bits = static_cast<int>(sizeof(T) * 8);
      if (b < 0 || b >= bits) return 0.0;
      return static_cast<double>(static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(a)) << b));
    }
    case BinaryOp::RightShift: {  // the sign past the width
      const int bits = static_cast<int>(sizeof(T) * 8);
      return static_cast<double>(a >> (b < 0 || b >= bits - 1 ? bits - 1 : b));
    }
    case BinaryOp::Eq:
      return a == b;
    case BinaryOp::Ne:
      return a != b;
    case BinaryOp::Lt:
      return a < b;
    case BinaryOp::Le:
      return a <= b;
    case BinaryOp::Gt:
      return a > b;
    case BinaryOp::Ge:
      return a >= b;
    case BinaryOp::LogicalAnd:
      return a != 0 && b != 0;
    case BinaryOp::LogicalOr:
      return a != 0 || b != 0;
    case BinaryOp::LogicalXor:
      return (a != 0) != (b != 0);
    default:
      return 0;
  }
}

double ref_float_binary(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::Add:
      return a + b;
    case BinaryOp::Sub:
      return a - b;
    case BinaryOp::Mul:
      return a * b;
    case BinaryOp::Div:
      return a / b;
    case BinaryOp::FloorDiv:
      return std::floor(a / b);
    case BinaryOp::TruncDiv:
      return std::trunc(a / b);
    case BinaryOp::Remainder:
      return a - b * std::floor(a / b);
    case BinaryOp::Fmod:
      return std::fmod(a, b);
    case BinaryOp::Pow:
      return std::pow(a, b);
    case BinaryOp::Minimum:
      return std::min(a, b);
    case BinaryOp::Maximum:
      return std::max(a, b);
    case BinaryOp::PRelu:
      return a > 0 ? a : a * b;
    case BinaryOp::Atan2:
      return std::atan2(a, b);
    case BinaryOp::Eq:
      return a == b;
    case BinaryOp::Ne:
      return a != b;
    case BinaryOp::Lt:
      return a < b;
    case BinaryOp::Le:
      return a <= b;
    case BinaryOp::Gt:
      return a > b;
    case BinaryOp::Ge:
      return a >= b;
    case BinaryOp::LogicalAnd:
      return a != 0 && b != 0;
    case BinaryOp::LogicalOr:
      return a != 0 || b != 0;
    case BinaryOp::LogicalXor:
      return (a != 0) != (b != 0);
    default:
      return 0;
  }
}

aotc::rt::BinaryParams params_for(BinaryOp op, const Shape& a, const Shape& b, Shape& out) {
  out.assign(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    out[i] = std::max(da, db);
  }
  aotc::rt::BinaryParams p;
  p.op = op;
  p.rank = static_cast<int32_t>(out.size());
  const auto sa = strides_in(a, out), sb = strides_in(b, out);
  for (size_t d = 0; d < out.size(); ++d) {
    p.out_dims[d] = out[d];
    p.a_strides[d] = sa[d];
    p.b_strides[d] = sb[d];
  }
  return p;
}

struct ShapePair {
  Shape a, b;
};
const ShapePair kShapes[] = {{{3, 5, 7}, {3, 5, 7}}, {{4, 1, 9}, {1, 6, 1}}, {{33}, {}},
                             {{}, {2, 17}},          {{70001}, {70001}},     {{2, 3, 1, 5}, {3, 4, 1}}};

template <class T>
void check_int_binary(ThreadPool& pool, BinaryOp op, ElemType t, int lo, int hi) {
  using S = std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>;  // no std::vector<bool>
  uint32_t seed = 100 + static_cast<uint32_t>(op);
  for (const ShapePair& s : kShapes) {
    Shape out;
    const auto p = params_for(op, s.a, s.b, out);
    const auto a = random_values<S>(static_cast<size_t>(count_of(s.a)), ++seed, lo, hi);
    const auto b = random_values<S>(static_cast<size_t>(count_of(s.b)), ++seed, op == BinaryOp::Pow ? -2 : lo,
                                    op == BinaryOp::Pow ? 5 : hi);
    const size_t n = static_cast<size_t>(count_of(out));
    const bool to_bool = aotc::rt::binary_op_gives_bool(op);
    Buffer<T> y(to_bool ? 0 : n);
    Buffer<bool> yb(to_bool ? n : 0);
    aotc::rt::binary(pool, p, t, a.data(), b.data(), to_bool ? static_cast<void*>(yb.data()) : y.data());
    const auto sa = strides_in(s.a, out), sb = strides_in(s.b, out);
    size_t bad = 0;
    for (size_t e = 0; e < n; ++e) {
      const T va = static_cast<T>(a[static_cast<size_t>(offset_of(static_cast<int64_t>(e), out, sa))]);
      const T vb = static_cast<T>(b[static_cast<size_t>(offset_of(static_cast<int64_t>(e), out, sb))]);
      const double want = ref_int_binary<T>(op, va, vb);
      const double got = to_bool ? static_cast<double>(yb.at(e)) : static_cast<double>(y.at(e));
      bad += got != want;
    }
    INFO("op " << int(op) << " dtype " << int(t) << " shape a " << s.a.size() << " threads " << pool.size());
    CHECK(bad == 0);
    CHECK(y.guard_ok());
    CHECK(yb.guard_ok());
  }
}

}  // namespace

TEST_CASE("binary: integer ops, every dtype, broadcasting, exact") {
  const BinaryOp ops[] = {
      BinaryOp::Add,        BinaryOp::Sub,        BinaryOp::Mul,        BinaryOp::FloorDiv,
      BinaryOp::TruncDiv,   BinaryOp::Remainder,  BinaryOp::Fmod,       BinaryOp::Pow,
      BinaryOp::Minimum,    BinaryOp::Maximum,    BinaryOp::BitwiseAnd, BinaryOp::BitwiseOr,
      BinaryOp::BitwiseXor, BinaryOp::Eq,         BinaryOp::Ne,         BinaryOp::Lt,
      BinaryOp::Le,         BinaryOp::Gt,         BinaryOp::Ge,         BinaryOp::LogicalAnd,
      BinaryOp::LogicalOr,  BinaryOp::LogicalXor, BinaryOp::LeftShift,  BinaryOp::RightShift};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    for (BinaryOp op : ops) {
      check_int_binary<int64_t>(pool, op, ElemType::I64, -9, 9);  // includes division by 0
      check_int_binary<int32_t>(pool, op, ElemType::I32, -9, 9);
    }
    for (BinaryOp op : {BinaryOp::LeftShift, BinaryOp::RightShift}) {  // shifts past the width
      check_int_binary<int64_t>(pool, op, ElemType::I64, -70, 70);
      check_int_binary<int32_t>(pool, op, ElemType::I32, -40, 40);
    }
    const BinaryOp bool_ops[] = {BinaryOp::Eq,        BinaryOp::Ne,         BinaryOp::LogicalAnd,
                                 BinaryOp::LogicalOr, BinaryOp::LogicalXor, BinaryOp::BitwiseAnd,
                                 BinaryOp::BitwiseOr, BinaryOp::BitwiseXor, BinaryOp::Minimum,
                                 BinaryOp::Maximum,   BinaryOp::Lt,         BinaryOp::Ge};
    for (BinaryOp op : bool_ops) check_int_binary<bool>(pool, op, ElemType::Bool, 0, 1);
  }
}

TEST_CASE("binary: float32 ops and comparisons") {
  const BinaryOp ops[] = {BinaryOp::Add,        BinaryOp::Sub,       BinaryOp::Mul,       BinaryOp::Div,
                          BinaryOp::FloorDiv,   BinaryOp::TruncDiv,  BinaryOp::Remainder, BinaryOp::Fmod,
                          BinaryOp::Pow,        BinaryOp::Minimum,   BinaryOp::Maximum,   BinaryOp::PRelu,
                          BinaryOp::Atan2,      BinaryOp::Eq,        BinaryOp::Lt,        BinaryOp::Ge,
                          BinaryOp::LogicalAnd, BinaryOp::LogicalXor};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 7;
    for (BinaryOp op : ops)
      for (const ShapePair& s : kShapes) {
        Shape out;
        const auto p = params_for(op, s.a, s.b, out);
        // Quarter steps: exact in float, so comparisons and floor/trunc have no rounding doubt.
        auto a = random_values<float>(static_cast<size_t>(count_of(s.a)), ++seed, -12, 12);
        auto b = random_values<float>(static_cast<size_t>(count_of(s.b)), ++seed, 1, 8);
        for (float& v : a) v *= 0.25f;
        for (float& v : b) v *= (op == BinaryOp::Pow ? 0.25f : (seed % 2 ? 0.5f : -0.5f));
        if (op == BinaryOp::Pow)
          for (float& v : a) v = std::fabs(v) + 0.25f;
        const size_t n = static_cast<size_t>(count_of(out));
        const bool to_bool = aotc::rt::binary_op_gives_bool(op);
        Buffer<float> y(to_bool ? 0 : n);
        Buffer<bool> yb(to_bool ? n : 0);
        aotc::rt::binary(pool, p, ElemType::F32, a.data(), b.data(),
                         to_bool ? static_cast<void*>(yb.data()) : y.data());
        const auto sa = strides_in(s.a, out), sb = strides_in(s.b, out);
        std::vector<float> got(n);
        std::vector<double> want(n);
        for (size_t e = 0; e < n; ++e) {
          const double va = a[static_cast<size_t>(offset_of(static_cast<int64_t>(e), out, sa))];
          const double vb = b[static_cast<size_t>(offset_of(static_cast<int64_t>(e), out, sb))];
          want[e] = ref_float_binary(op, va, vb);
          got[e] = to_bool ? static_cast<float>(yb.at(e)) : y.at(e);
        }
        INFO("op " << int(op) << " threads " << threads);
        if (to_bool) {
          CHECK(std::equal(got.begin(), got.end(), want.begin(), [](float g, double w) { return g == w; }));
        } else {
          CHECK(rel_l2(got, want) <= kTolerance);
        }
        CHECK(y.guard_ok());
        CHECK(yb.guard_ok());
      }
  }
}

TEST_CASE("binary_f32: NaN propagation of minimum / maximum; alpha") {
  ThreadPool pool(1);
  Shape out;
  auto p = params_for(BinaryOp::Maximum, {3}, {3}, out);
  const float a[] = {1.0f, __builtin_nanf(""), 2.0f}, b[] = {__builtin_nanf(""), 0.0f, 3.0f};
  float y[3];
  aotc::rt::binary_f32(pool, p, a, b, y);
  CHECK(std::isnan(y[0]));
  CHECK(std::isnan(y[1]));
  CHECK(y[2] == 3.0f);
  p.op = BinaryOp::Sub;
  p.alpha = 2.0f;
  const int64_t ia[] = {5, 6, 7}, ib[] = {1, 2, 3};
  int64_t iy[3];
  aotc::rt::binary(pool, p, ElemType::I64, ia, ib, iy);
  CHECK(iy[0] == 3);
  CHECK(iy[2] == 1);
}

// The x in [-40, 40] with f(x) = y for an increasing f, by bisection in double.
template <class F>
double inverse_by_bisection(F f, double y) {
  double lo = -40.0, hi = 40.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (f(mid) < y ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

TEST_CASE("unary_f32: math functions and activations against double formulas") {
  struct Case {
    UnaryOp op;
    float a, b;
    std::function<double(double)> f;
    float lo, hi;
  };
  const double kSeluAlpha = 1.6732632423543772848170429916717, kSeluScale = 1.0507009873554804934193349852946;
  const Case cases[] = {
      {UnaryOp::Neg, 0, 0, [](double x) { return -x; }, -3, 3},
      {UnaryOp::Abs, 0, 0, [](double x) { return std::fabs(x); }, -3, 3},
      {UnaryOp::Reciprocal, 0, 0, [](double x) { return 1 / x; }, 0.5, 3},
      {UnaryOp::Sqrt, 0, 0, [](double x) { return std::sqrt(x); }, 0, 9},
      {UnaryOp::Rsqrt, 0, 0, [](double x) { return 1 / std::sqrt(x); }, 0.1f, 9},
      {UnaryOp::Exp, 0, 0, [](double x) { return std::exp(x); }, -5, 5},
      {UnaryOp::Exp2, 0, 0, [](double x) { return std::exp2(x); }, -5, 5},
      {UnaryOp::Log, 0, 0, [](double x) { return std::log(x); }, 0.1f, 9},
      {UnaryOp::Log2, 0, 0, [](double x) { return std::log2(x); }, 0.1f, 9},
      {UnaryOp::Log10, 0, 0, [](double x) { return std::log10(x); }, 0.1f, 9},
      {UnaryOp::Log1p, 0, 0, [](double x) { return std::log1p(x); }, -0.5, 9},
      {UnaryOp::Expm1, 0, 0, [](double x) { return std::expm1(x); }, -2, 2},
      {UnaryOp::Sin, 0, 0, [](double x) { return std::sin(x); }, -4, 4},
      {UnaryOp::Sin, 0, 0, [](double x) { return std::sin(x); }, -3000, 3000},
      {UnaryOp::Log, 0, 0, [](double x) { return std::log(x); }, 1e-20f, 1e20f},
      {UnaryOp::Cos, 0, 0, [](double x) { return std::cos(x); }, -4, 4},
      {UnaryOp::Tan, 0, 0, [](double x) { return std::tan(x); }, -1, 1},
      {UnaryOp::Erf, 0, 0, [](double x) { return std::erf(x); }, -3, 3},
      {UnaryOp::Floor, 0, 0, [](double x) { return std::floor(x); }, -9, 9},
      {UnaryOp::Ceil, 0, 0, [](double x) { return std::ceil(x); }, -9, 9},
      {UnaryOp::Round, 0, 0, [](double x) { return std::nearbyint(x); }, -9, 9},
      {UnaryOp::Trunc, 0, 0, [](double x) { return std::trunc(x); }, -9, 9},
      {UnaryOp::Sign, 0, 0, [](double x) { return static_cast<double>((0 < x) - (x < 0)); }, -3, 3},
      {UnaryOp::Square, 0, 0, [](double x) { return x * x; }, -3, 3},
      {UnaryOp::Elu, 0.7f, 1.0f, [](double x) { return x > 0 ? x : 0.7 * std::expm1(x); }, -4, 4},
      {UnaryOp::Elu, 1.3f, 1 / 1.3f, [](double x) { return x > 0 ? x : 1.3 * std::expm1(x / 1.3); }, -4, 4},
      {UnaryOp::Selu, 0, 0, [&](double x) { return kSeluScale * (x > 0 ? x : kSeluAlpha * std::expm1(x)); },
       -4, 4},
      {UnaryOp::Softplus, 2.0f, 1.0f,
       [](double x) { return x * 2 > 1 ? x : std::log1p(std::exp(2 * x)) / 2; }, -4, 4},
      {UnaryOp::Mish, 0, 0, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }, -5, 5},
      {UnaryOp::LogSigmoid, 0, 0, [](double x) { return -std::log1p(std::exp(-x)); }, -8, 8},
      {UnaryOp::Softsign, 0, 0, [](double x) { return x / (1 + std::fabs(x)); }, -4, 4},
      {UnaryOp::Tanhshrink, 0, 0, [](double x) { return x - std::tanh(x); }, -4, 4},
      {UnaryOp::Hardshrink, 0.5f, 0, [](double x) { return std::fabs(x) > 0.5 ? x : 0; }, -2, 2},
      {UnaryOp::Softshrink, 0.5f, 0, [](double x) { return x > 0.5    ? x - 0.5
                                                           : x < -0.5 ? x + 0.5
                                                                      : 0; }, -2,
       2},
      {UnaryOp::Threshold, 0.1f, -2, [](double x) { return x > 0.1f ? x : -2; }, -2, 2},
      {UnaryOp::PowScalar, 2.5f, 0, [](double x) { return std::pow(x, 2.5); }, 0, 3},
      {UnaryOp::PowScalar, 2.0f, 0, [](double x) { return x * x; }, -3, 3},
      {UnaryOp::ScalarPow, 1.7f, 0, [](double x) { return std::pow(1.7f, x); }, -3, 3},
      {UnaryOp::ScaleShift, 1.5f, -0.25f, [](double x) { return 1.5 * x - 0.25; }, -3, 3},
      {UnaryOp::Asin, 0, 0, [](double x) { return std::asin(x); }, -0.99f, 0.99f},
      {UnaryOp::Acos, 0, 0, [](double x) { return std::acos(x); }, -0.99f, 0.99f},
      {UnaryOp::Atan, 0, 0, [](double x) { return std::atan(x); }, -5, 5},
      {UnaryOp::Sinh, 0, 0, [](double x) { return std::sinh(x); }, -3, 3},
      {UnaryOp::Cosh, 0, 0, [](double x) { return std::cosh(x); }, -3, 3},
      {UnaryOp::Erfc, 0, 0, [](double x) { return std::erfc(x); }, -2, 3},
      {UnaryOp::Lgamma, 0, 0, [](double x) { return std::lgamma(x); }, -9.5f, 30},
      // digamma as the derivative of lgamma (central differences: 1e-9 relative here), and
      // erfinv and ndtri as the inverses of erf and the normal distribution by bisection:
      // references independent of special_math.h's series and Newton steps.
      {UnaryOp::Digamma, 0, 0, [](double x) { return (std::lgamma(x + 1e-6) - std::lgamma(x - 1e-6)) / 2e-6; },
       0.05f, 25},
      {UnaryOp::Erfinv, 0, 0, [](double y) { return inverse_by_bisection([](double x) { return std::erf(x); }, y); },
       -0.999f, 0.999f},
      {UnaryOp::Ndtri, 0, 0,
       [](double p) { return inverse_by_bisection([](double x) { return std::erfc(-x / std::sqrt(2.0)) / 2; }, p); },
       1e-6f, 0.999f},
      {UnaryOp::Signbit, 0, 0, [](double x) { return std::signbit(x) ? 1.0 : 0.0; }, -3, 3},
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 300;
    for (const Case& c : cases)
      for (size_t n : {size_t{1}, size_t{37}, size_t{40003}}) {
        const auto x = random_floats(n, ++seed, c.lo, c.hi);
        Guarded y(n);
        aotc::rt::unary_f32(pool, c.op, c.a, c.b, static_cast<int64_t>(n), x.data(), y.data());
        std::vector<double> want(n);
        for (size_t i = 0; i < n; ++i) want[i] = c.f(x[i]);
        INFO("op " << int(c.op) << " n " << n);
        CHECK(rel_l2(y.values(), want) <= kTolerance);
        CHECK(y.guards_intact());
      }
  }
  ThreadPool pool(1);
  const float special[] = {INFINITY, -INFINITY, __builtin_nanf(""), 2.0f};
  float out[4];
  aotc::rt::unary_f32(pool, UnaryOp::ZeroNonFinite, 0, 0, 4, special, out);
  CHECK(out[0] == 0.0f);
  CHECK(out[1] == 0.0f);
  CHECK(out[2] == 0.0f);
  CHECK(out[3] == 2.0f);
  aotc::rt::unary_f32(pool, UnaryOp::Log, 0, 0, 4, special, out);
  CHECK(out[0] == INFINITY);
  CHECK(std::isnan(out[1]));
  CHECK(std::isnan(out[2]));
  aotc::rt::unary_f32(pool, UnaryOp::Rsqrt, 0, 0, 4, special, out);
  CHECK(out[0] == 0.0f);
  aotc::rt::unary_f32(pool, UnaryOp::Sin, 0, 0, 4, special, out);
  CHECK(std::isnan(out[0]));
  CHECK(std::isnan(out[2]));
  aotc::rt::unary_f32(pool, UnaryOp::Exp, 0, 0, 4, special, out);
  CHECK(out[0] == INFINITY);
  CHECK(out[1] == 0.0f);
  aotc::rt::unary_f32(pool, UnaryOp::Sqrt, 0, 0, 4, special, out);
  CHECK(out[0] == INFINITY);
  aotc::rt::unary_f32(pool, UnaryOp::Erf, 0, 0, 4, special, out);  // NaN stays NaN, in place too
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == -1.0f);
  CHECK(std::isnan(out[2]));
  float inplace[4] = {__builtin_nanf(""), 0.5f, -0.5f, 0.0f};
  aotc::rt::unary_f32(pool, UnaryOp::Erf, 0, 0, 4, inplace, inplace);
  CHECK(std::isnan(inplace[0]));
  CHECK(std::fabs(inplace[1] - std::erf(0.5)) < 4e-7);
}

TEST_CASE("unary: integer and bool ops, exact") {
  ThreadPool pool(3);
  const auto x = random_values<int64_t>(50001, 9, -20, 20);
  const size_t n = x.size();
  struct Case {
    UnaryOp op;
    double a, b;
    std::function<int64_t(int64_t)> f;
  };
  const Case cases[] = {
      {UnaryOp::Neg, 0, 0, [](int64_t v) { return -v; }},
      {UnaryOp::Abs, 0, 0, [](int64_t v) { return v < 0 ? -v : v; }},
      {UnaryOp::Sign, 0, 0, [](int64_t v) { return int64_t((0 < v) - (v < 0)); }},
      {UnaryOp::Square, 0, 0, [](int64_t v) { return v * v; }},
      {UnaryOp::Relu, 0, 0, [](int64_t v) { return v < 0 ? 0 : v; }},
      {UnaryOp::Clamp, -3, 7.5, [](int64_t v) { return std::min<int64_t>(std::max<int64_t>(v, -3), 7); }},
      {UnaryOp::BitwiseNot, 0, 0, [](int64_t v) { return ~v; }},
      {UnaryOp::Floor, 0, 0, [](int64_t v) { return v; }}};
  for (const Case& c : cases) {
    Buffer<int64_t> y(n);
    Buffer<int32_t> y32(n);
    std::vector<int32_t> x32(x.begin(), x.end());
    aotc::rt::unary(pool, c.op, ElemType::I64, c.a, c.b, static_cast<int64_t>(n), x.data(), y.data());
    aotc::rt::unary(pool, c.op, ElemType::I32, c.a, c.b, static_cast<int64_t>(n), x32.data(), y32.data());
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i)
      bad += (y.at(i) != c.f(x[i])) + (y32.at(i) != static_cast<int32_t>(c.f(x[i])));
    INFO("op " << int(c.op));
    CHECK(bad == 0);
    CHECK(y.guard_ok());
    CHECK(y32.guard_ok());
  }
  const bool b[] = {true, false, true};
  bool nb[3];
  aotc::rt::unary(pool, UnaryOp::BitwiseNot, ElemType::Bool, 0, 0, 3, b, nb);
  CHECK(!nb[0]);
  CHECK(nb[1]);
}

TEST_CASE("cast: every pair of dtypes") {
  ThreadPool pool(3);
  const size_t n = 40009;
  auto f = random_floats(n, 5, -100.0f, 100.0f);
  f[0] = 0.0f;
  f[1] = -0.7f;
  f[2] = 3e10f;  // clamps to int32 max
  std::vector<int64_t> i64(n);
  std::vector<int32_t> i32(n);
  std::vector<unsigned char> bl(n);
  for (size_t i = 0; i < n; ++i) {
    i64[i] = static_cast<int64_t>(f[i] * 1000.0f);
    i32[i] = static_cast<int32_t>(i64[i] % 100000);
    bl[i] = f[i] > 0;
  }
  Buffer<int32_t> to32(n);
  aotc::rt::cast(pool, ElemType::F32, ElemType::I32, static_cast<int64_t>(n), f.data(), to32.data());
  CHECK(to32.at(1) == 0);
  CHECK(to32.at(2) == 2147483647);
  size_t bad = 0;
  for (size_t i = 3; i < n; ++i) bad += to32.at(i) != static_cast<int32_t>(std::trunc(f[i]));
  Buffer<bool> tob(n);
  aotc::rt::cast(pool, ElemType::F32, ElemType::Bool, static_cast<int64_t>(n), f.data(), tob.data());
  for (size_t i = 0; i < n; ++i) bad += tob.at(i) != (f[i] != 0.0f);
  Buffer<float> tof(n);
  aotc::rt::cast(pool, ElemType::I64, ElemType::F32, static_cast<int64_t>(n), i64.data(), tof.data());
  for (size_t i = 0; i < n; ++i) bad += tof.at(i) != static_cast<float>(i64[i]);
  Buffer<int64_t> to64(n);
  aotc::rt::cast(pool, ElemType::I32, ElemType::I64, static_cast<int64_t>(n), i32.data(), to64.data());
  for (size_t i = 0; i < n; ++i) bad += to64.at(i) != i32[i];
  Buffer<int64_t> b64(n);
  aotc::rt::cast(pool, ElemType::Bool, ElemType::I64, static_cast<int64_t>(n), bl.data(), b64.data());
  for (size_t i = 0; i < n; ++i) bad += b64.at(i) != bl[i];
  Buffer<int32_t> n32(n);
  aotc::rt::cast(pool, ElemType::I64, ElemType::I32, static_cast<int64_t>(n), i64.data(), n32.data());
  for (size_t i = 0; i < n; ++i) bad += n32.at(i) != static_cast<int32_t>(i64[i]);
  CHECK(bad == 0);
  CHECK(to32.guard_ok());
  CHECK(tob.guard_ok());
  CHECK(tof.guard_ok());
  CHECK(to64.guard_ok());
  CHECK(b64.guard_ok());
}

TEST_CASE("where: broadcasting of condition and both branches, 1/4/8-byte elements") {
  struct Case {
    Shape c, a, b;
  };
  const Case cases[] = {{{3, 5, 7}, {3, 5, 7}, {3, 5, 7}},
                        {{4, 1}, {1, 9}, {}},
                        {{1, 6, 1}, {2, 1, 5}, {5}},
                        {{60001}, {}, {60001}},
                        {{}, {2, 3}, {2, 3}}};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 40;
    for (const Case& k : cases) {
      Shape out = k.c;
      for (const Shape* s : {&k.a, &k.b}) {
        Shape o(std::max(out.size(), s->size()), 1);
        for (size_t i = 0; i < o.size(); ++i) {
          const int64_t d1 = i < o.size() - out.size() ? 1 : out[i - (o.size() - out.size())];
          const int64_t d2 = i < o.size() - s->size() ? 1 : (*s)[i - (o.size() - s->size())];
          o[i] = std::max(d1, d2);
        }
        out = o;
      }
      aotc::rt::WhereParams p;
      p.rank = static_cast<int32_t>(out.size());
      const auto sc = strides_in(k.c, out), sa = strides_in(k.a, out), sb = strides_in(k.b, out);
      for (size_t d = 0; d < out.size(); ++d) {
        p.out_dims[d] = out[d];
        p.cond_strides[d] = sc[d];
        p.a_strides[d] = sa[d];
        p.b_strides[d] = sb[d];
      }
      const auto cond_v = random_values<int>(static_cast<size_t>(count_of(k.c)), ++seed, 0, 1);
      std::vector<unsigned char> cond(cond_v.begin(), cond_v.end());
      const auto a = random_values<int64_t>(static_cast<size_t>(count_of(k.a)), ++seed, -1000, 1000);
      const auto b = random_values<int64_t>(static_cast<size_t>(count_of(k.b)), ++seed, -1000, 1000);
      const std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end());
      std::vector<unsigned char> ab(a.size()), bb(b.size());
      for (size_t i = 0; i < a.size(); ++i) ab[i] = a[i] > 0;
      for (size_t i = 0; i < b.size(); ++i) bb[i] = b[i] > 0;
      const size_t n = static_cast<size_t>(count_of(out));
      Buffer<int64_t> y8(n);
      Buffer<float> y4(n);
      Buffer<unsigned char> y1(n);
      const bool* c = reinterpret_cast<const bool*>(cond.data());
      aotc::rt::where(pool, p, 8, c, a.data(), b.data(), y8.data());
      aotc::rt::where(pool, p, 4, c, af.data(), bf.data(), y4.data());
      aotc::rt::where(pool, p, 1, c, ab.data(), bb.data(), y1.data());
      size_t bad = 0;
      for (size_t e = 0; e < n; ++e) {
        const int64_t i = static_cast<int64_t>(e);
        const bool take = cond[static_cast<size_t>(offset_of(i, out, sc))] != 0;
        const size_t ia = static_cast<size_t>(offset_of(i, out, sa)),
                     ib = static_cast<size_t>(offset_of(i, out, sb));
        bad += y8.at(e) != (take ? a[ia] : b[ib]);
        bad += y4.at(e) != (take ? af[ia] : bf[ib]);
        bad += y1.at(e) != (take ? ab[ia] : bb[ib]);
      }
      CHECK(bad == 0);
      CHECK(y8.guard_ok());
      CHECK(y4.guard_ok());
      CHECK(y1.guard_ok());
    }
  }
}

TEST_CASE("reduce_i64 and Prod: several dims, exact") {
  struct Case {
    Shape dims;
    std::vector<bool> mask;
  };
  const Case cases[] = {{{3, 5, 7}, {true, false, true}},
                        {{4, 9}, {false, true}},
                        {{6, 5}, {true, false}},
                        {{70001}, {true}},
                        {{2, 3, 4, 5}, {false, true, true, false}}};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 70;
    for (const Case& c : cases)
      for (auto op : {aotc::rt::ReduceOp::Sum, aotc::rt::ReduceOp::Max, aotc::rt::ReduceOp::Min,
                      aotc::rt::ReduceOp::Prod}) {
        aotc::rt::ReduceParams p;
        p.op = op;
        p.rank = static_cast<int32_t>(c.dims.size());
        Shape out;
        for (size_t d = 0; d < c.dims.size(); ++d) {
          p.dims[d] = c.dims[d];
          p.reduce_mask[d] = c.mask[d];
          if (!c.mask[d]) out.push_back(c.dims[d]);
        }
        const bool prod = op == aotc::rt::ReduceOp::Prod;
        const auto x = random_values<int64_t>(static_cast<size_t>(count_of(c.dims)), ++seed, prod ? -2 : -50,
                                              prod ? 2 : 50);
        const size_t n = static_cast<size_t>(count_of(out));
        std::vector<int64_t> want(n, op == aotc::rt::ReduceOp::Max   ? INT64_MIN
                                     : op == aotc::rt::ReduceOp::Min ? INT64_MAX
                                     : prod                          ? 1
                                                                     : 0);
        std::vector<float> xf(x.begin(), x.end());
        std::vector<double> wantf(n, prod ? 1.0 : 0.0);
        for (size_t e = 0; e < x.size(); ++e) {
          int64_t rem = static_cast<int64_t>(e), o = 0, scale = 1;
          for (size_t d = c.dims.size(); d-- > 0;) {
            const int64_t i = rem % c.dims[d];
            rem /= c.dims[d];
            if (!c.mask[d]) {
              o += i * scale;
              scale *= c.dims[d];
            }
          }
          int64_t& w = want[static_cast<size_t>(o)];
          w = op == aotc::rt::ReduceOp::Sum   ? w + x[e]
              : op == aotc::rt::ReduceOp::Max ? std::max(w, x[e])
              : op == aotc::rt::ReduceOp::Min
                  ? std::min(w, x[e])
                  : static_cast<int64_t>(static_cast<uint64_t>(w) * static_cast<uint64_t>(x[e]));
          if (prod) wantf[static_cast<size_t>(o)] *= static_cast<double>(x[e]);
        }
        Buffer<int64_t> y(n);
        aotc::rt::reduce_i64(pool, p, x.data(), y.data());
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) bad += y.at(i) != want[i];
        INFO("op " << int(op) << " rank " << c.dims.size());
        CHECK(bad == 0);
        CHECK(y.guard_ok());
        if (prod && c.dims.size() < 4 && count_of(c.dims) < 1000) {  // small products stay exact in float
          Guarded yf(n);
          aotc::rt::reduce_f32(pool, p, xf.data(), yf.data());
          CHECK(rel_l2(yf.values(), wantf) <= kTolerance);
          CHECK(yf.guards_intact());
        }
      }
  }
}

TEST_CASE("arg_reduce: first index of max / min, NaN wins, every dtype") {
  ThreadPool pool(3);
  for (const Shape& s : {Shape{3, 5, 7}, Shape{1, 40001, 1}, Shape{6, 1, 4}, Shape{5, 3, 1}}) {
    const int64_t outer = s[0], axis = s[1], inner = s[2];
    const size_t n = static_cast<size_t>(outer * inner);
    auto xi = random_values<int64_t>(static_cast<size_t>(count_of(s)), 11, -5, 5);  // many ties
    std::vector<float> xf(xi.begin(), xi.end());
    if (xf.size() > 40) xf[37] = __builtin_nanf("");
    for (bool is_max : {true, false}) {
      Buffer<float> vf(n);
      Buffer<int64_t> idx_f(n), vi(n), idx_i(n);
      aotc::rt::arg_reduce(pool, ElemType::F32, is_max, outer, axis, inner, xf.data(), vf.data(),
                           idx_f.data());
      aotc::rt::arg_reduce(pool, ElemType::I64, is_max, outer, axis, inner, xi.data(), vi.data(),
                           idx_i.data());
      size_t bad = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          int64_t bf = 0, bi = 0;
          for (int64_t a = 1; a < axis; ++a) {
            const size_t at = static_cast<size_t>((o * axis + a) * inner + j);
            const float v = xf[at], m = xf[static_cast<size_t>((o * axis + bf) * inner + j)];
            if (!std::isnan(m) && (std::isnan(v) || (is_max ? v > m : v < m))) bf = a;
            const int64_t w = xi[at], mi = xi[static_cast<size_t>((o * axis + bi) * inner + j)];
            if (is_max ? w > mi : w < mi) bi = a;
          }
          const size_t out = static_cast<size_t>(o * inner + j);
          bad += idx_f.at(out) != bf;
          bad += idx_i.at(out) != bi;
          bad += vi.at(out) != xi[static_cast<size_t>((o * axis + bi) * inner + j)];
          const float want_v = xf[static_cast<size_t>((o * axis + bf) * inner + j)];
          bad += !(vf.at(out) == want_v || (std::isnan(vf.at(out)) && std::isnan(want_v)));
        }
      CHECK(bad == 0);
      CHECK(vf.guard_ok());
      CHECK(idx_f.guard_ok());
    }
  }
}

// The reference: the line's (value, index) pairs stably sorted by value, NaN as the
// largest, then the first k.
template <class T>
std::vector<int64_t> sorted_line(const std::vector<T>& x, int64_t line, int64_t axis, int64_t inner,
                                 int64_t lane, bool descending) {
  std::vector<int64_t> order(static_cast<size_t>(axis));
  for (int64_t a = 0; a < axis; ++a) order[static_cast<size_t>(a)] = a;
  const auto at = [&](int64_t a) { return x[static_cast<size_t>((line * axis + a) * inner + lane)]; };
  const auto less = [](T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a)) return false;
      if (std::isnan(b)) return true;
    }
    return a < b;
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
    return descending ? less(at(j), at(i)) : less(at(i), at(j));
  });
  return order;
}

TEST_CASE("sort_lines: the first k in stable order, NaN largest, every dtype, with and without values") {
  ThreadPool pool(3);
  for (const Shape& s : {Shape{3, 9, 4}, Shape{1, 5001, 1}, Shape{6, 1, 2}, Shape{4, 37, 1}}) {
    const int64_t outer = s[0], axis = s[1], inner = s[2];
    auto xi = random_values<int64_t>(static_cast<size_t>(count_of(s)), 31, -4, 4);  // many ties
    std::vector<float> xf(xi.begin(), xi.end());
    for (size_t i = 3; i < xf.size(); i += 11) xf[i] = __builtin_nanf("");
    for (size_t i = 5; i < xf.size(); i += 13) xf[i] = -0.0f;
    for (const int64_t k : {axis, (axis + 1) / 2, int64_t{1}})
      for (const bool descending : {true, false}) {
        CAPTURE(axis);
        CAPTURE(k);
        CAPTURE(descending);
        const size_t n = static_cast<size_t>(outer * k * inner);
        Buffer<float> vf(n);
        Buffer<int64_t> idx_f(n), vi(n), idx_i(n), idx_only(n);
        aotc::rt::sort_lines(pool, ElemType::F32, descending, outer, axis, inner, k, xf.data(), vf.data(),
                             idx_f.data());
        aotc::rt::sort_lines(pool, ElemType::I64, descending, outer, axis, inner, k, xi.data(), vi.data(),
                             idx_i.data());
        aotc::rt::sort_lines(pool, ElemType::I64, descending, outer, axis, inner, k, xi.data(), nullptr,
                             idx_only.data());
        size_t bad = 0;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < inner; ++j) {
            const std::vector<int64_t> want_f = sorted_line(xf, o, axis, inner, j, descending);
            const std::vector<int64_t> want_i = sorted_line(xi, o, axis, inner, j, descending);
            for (int64_t r = 0; r < k; ++r) {
              const size_t out = static_cast<size_t>((o * k + r) * inner + j);
              const size_t from_f =
                  static_cast<size_t>((o * axis + want_f[static_cast<size_t>(r)]) * inner + j);
              const size_t from_i =
                  static_cast<size_t>((o * axis + want_i[static_cast<size_t>(r)]) * inner + j);
              bad += idx_f.at(out) != want_f[static_cast<size_t>(r)];
              const float got = vf.at(out);
              bad += std::memcmp(&got, &xf[from_f], sizeof(float)) != 0;  // -0 stays -0
              bad += idx_i.at(out) != want_i[static_cast<size_t>(r)];
              bad += idx_only.at(out) != want_i[static_cast<size_t>(r)];
              bad += vi.at(out) != xi[from_i];
            }
          }
        CHECK(bad == 0);
        CHECK(vf.guard_ok());
        CHECK(idx_f.guard_ok());
        CHECK(vi.guard_ok());
        CHECK(idx_only.guard_ok());
      }
  }
}

TEST_CASE("cumsum: float32 and int64 along any axis") {
  ThreadPool pool(3);
  for (const Shape& s : {Shape{3, 5, 7}, Shape{1, 30001, 1}, Shape{4, 1, 9}, Shape{2, 6, 300}}) {
    const size_t total = static_cast<size_t>(count_of(s));
    const auto xi = random_values<int64_t>(total, 21, -9, 9);
    const auto xf = random_floats(total, 22);
    Buffer<int64_t> yi(total);
    Guarded yf(total);
    aotc::rt::cumsum(pool, ElemType::I64, s[0], s[1], s[2], xi.data(), yi.data());
    aotc::rt::cumsum(pool, ElemType::F32, s[0], s[1], s[2], xf.data(), yf.data());
    std::vector<int64_t> wi(total);
    std::vector<double> wf(total);
    for (int64_t o = 0; o < s[0]; ++o)
      for (int64_t j = 0; j < s[2]; ++j) {
        int64_t acc = 0;
        double accf = 0;
        for (int64_t a = 0; a < s[1]; ++a) {
          const size_t at = static_cast<size_t>((o * s[1] + a) * s[2] + j);
          acc += xi[at];
          accf += xf[at];
          wi[at] = acc;
          wf[at] = accf;
        }
      }
    size_t bad = 0;
    for (size_t i = 0; i < total; ++i) bad += yi.at(i) != wi[i];
    CHECK(bad == 0);
    CHECK(rel_l2(yf.values(), wf) <= kTolerance);
    CHECK(yi.guard_ok());
    CHECK(yf.guards_intact());
  }
}
