// Pointwise functions that torch has as single ops but aotc composes of its unary, binary
// and where IR ops (each one pass over the data; these are rare in models): frac, hypot,
// logit, sinc, heaviside, nan_to_num, xlogy, and their in-place forms.
#include <cfloat>
#include <cmath>

#include "elementwise.h"

namespace aotc::ops {
namespace {

int number(LowerContext& ctx, double v) { return constant_scalar(ctx.graph, ir::DType::Float32, v); }

// frac(x) = x - trunc(x) (NaN for infinities, as torch).
void lower_frac(LowerContext& ctx) {
  ctx.require_float32({0});
  const int x = ctx.tensor(0);
  set_elementwise_output(ctx,
                         add_binary_op(ctx, rt::BinaryOp::Sub, x, add_unary_op(ctx, rt::UnaryOp::Trunc, x)));
}

// hypot(a, b) = sqrt(a^2 + b^2) without overflow or underflow in the squares: hi * sqrt(1 +
// (lo / hi)^2) with hi, lo the larger and smaller magnitude; hi itself where lo is 0 (both
// 0 included) or hi is infinite.
void lower_hypot(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  const int a = add_unary_op(ctx, rt::UnaryOp::Abs, ctx.tensor(0));
  const int b = add_unary_op(ctx, rt::UnaryOp::Abs, ctx.tensor(1));
  const int hi = add_binary_op(ctx, rt::BinaryOp::Maximum, a, b);
  const int lo = add_binary_op(ctx, rt::BinaryOp::Minimum, a, b);
  const int q = add_unary_op(ctx, rt::UnaryOp::Square, add_binary_op(ctx, rt::BinaryOp::Div, lo, hi));
  const int scaled = add_binary_op(
      ctx, rt::BinaryOp::Mul, hi,
      add_unary_op(ctx, rt::UnaryOp::Sqrt, add_binary_op(ctx, rt::BinaryOp::Add, q, number(ctx, 1.0))));
  // (Two selections rather than one on (lo == 0 or hi == inf): the CUDA target's binary
  // kernels take float32 operands only.)
  const int finite =
      add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Eq, lo, number(ctx, 0.0)), hi, scaled);
  set_elementwise_output(
      ctx, add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Eq, hi, number(ctx, INFINITY)), hi, finite));
}

// logit(x, eps=None) = log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps is given.
void lower_logit(LowerContext& ctx) {
  ctx.require_float32({0});
  int z = ctx.tensor(0);
  if (!ctx.is_none(1)) {
    const double eps = ctx.double_arg(1);
    z = add_unary_op(ctx, rt::UnaryOp::Clamp, z, eps, 1.0 - eps);
  }
  const int odds =
      add_binary_op(ctx, rt::BinaryOp::Div, z, add_binary_op(ctx, rt::BinaryOp::Sub, number(ctx, 1.0), z));
  set_elementwise_output(ctx, add_unary_op(ctx, rt::UnaryOp::Log, odds));
}

// sinc(x) = sin(pi x) / (pi x), 1 at 0.
void lower_sinc(LowerContext& ctx) {
  ctx.require_float32({0});
  const int x = ctx.tensor(0);
  const int px = add_binary_op(ctx, rt::BinaryOp::Mul, x, number(ctx, M_PI));
  const int ratio = add_binary_op(ctx, rt::BinaryOp::Div, add_unary_op(ctx, rt::UnaryOp::Sin, px), px);
  set_elementwise_output(ctx, add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Eq, x, number(ctx, 0.0)),
                                           number(ctx, 1.0), ratio));
}

// heaviside(x, values) = values where x == 0, else 1 where x > 0, else 0 (NaN included).
void lower_heaviside(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  const int x = ctx.tensor(0);
  // (Selections, not a cast of the comparison's bool: the CUDA target has no cast.)
  const int step = add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Gt, x, number(ctx, 0.0)),
                                number(ctx, 1.0), number(ctx, 0.0));
  set_elementwise_output(
      ctx, add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Eq, x, number(ctx, 0.0)), ctx.tensor(1), step));
}

// nan_to_num(x, nan=None, posinf=None, neginf=None): NaN -> nan (0), +inf -> posinf (the
// largest float32), -inf -> neginf (the lowest).
void lower_nan_to_num(LowerContext& ctx) {
  ctx.require_float32({0});
  const int x = ctx.tensor(0);
  const double nan = ctx.is_none(1) ? 0.0 : ctx.double_arg(1);
  const double posinf = ctx.is_none(2) ? FLT_MAX : ctx.double_arg(2);
  const double neginf = ctx.is_none(3) ? -FLT_MAX : ctx.double_arg(3);
  int y = add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Eq, x, number(ctx, -INFINITY)),
                       number(ctx, neginf), x);
  y = add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Eq, x, number(ctx, INFINITY)), number(ctx, posinf),
                   y);
  y = add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Ne, x, x), number(ctx, nan), y);
  set_elementwise_output(ctx, y);
}

// xlogy(x, y) = x log(y), 0 where x is 0, NaN where y is NaN (torch's); either operand may
// be a Python number (xlogy.Scalar_Self, xlogy.Scalar_Other), integers computed in float32.
void lower_xlogy(LowerContext& ctx) {
  const int x = as_dtype(ctx, elem_arg(ctx, 0), ir::DType::Float32);
  const int y = as_dtype(ctx, elem_arg(ctx, 1), ir::DType::Float32);
  const int product = add_binary_op(ctx, rt::BinaryOp::Mul, x, add_unary_op(ctx, rt::UnaryOp::Log, y));
  const int zero_x =
      add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Eq, x, number(ctx, 0.0)), number(ctx, 0.0), product);
  set_elementwise_output(ctx, add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Ne, y, y), y, zero_x));
}

}  // namespace

void register_composite_math(Registry& r) {
  register_with_inplace(r, "aten::frac", lower_frac);
  register_with_inplace(r, "aten::hypot", lower_hypot);
  register_with_inplace(r, "aten::logit", lower_logit);
  register_with_inplace(r, "aten::sinc", lower_sinc);
  register_with_inplace(r, "aten::heaviside", lower_heaviside);
  register_with_inplace(r, "aten::nan_to_num", lower_nan_to_num);
  register_with_inplace(r, "aten::xlogy", lower_xlogy);
  r.add_lowering("aten::special_xlogy", lower_xlogy);
}

}  // namespace aotc::ops
