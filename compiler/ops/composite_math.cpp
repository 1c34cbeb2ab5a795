// Pointwise functions that torch has as single ops but aotc composes of its unary, binary
// and where IR ops (each one pass over the data; these are rare in models): frac, hypot,
// logit, sinc, heaviside, nan_to_num, xlogy, xlog1py, entr, ndtr, signbit, copysign,
// logaddexp(2), deg2rad, rad2deg, rrelu in evaluation, angle of real tensors, and their
// in-place forms.
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

// xlogy(x, y) = x log(y) and xlog1py(x, y) = x log1p(y) (torch.special.xlog1py): 0 where x
// is 0, NaN where y is NaN (torch's); either operand may be a Python number
// (xlogy.Scalar_Self, xlogy.Scalar_Other), integers computed in float32.
LowerFn x_times(rt::UnaryOp log) {
  return [log](LowerContext& ctx) {
    const int x = as_dtype(ctx, elem_arg(ctx, 0), ir::DType::Float32);
    const int y = as_dtype(ctx, elem_arg(ctx, 1), ir::DType::Float32);
    const int product = add_binary_op(ctx, rt::BinaryOp::Mul, x, add_unary_op(ctx, log, y));
    const int zero_x = add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Eq, x, number(ctx, 0.0)),
                                    number(ctx, 0.0), product);
    set_elementwise_output(ctx, add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Ne, y, y), y, zero_x));
  };
}

// entr(x) = -x log(x) for x > 0, 0 at 0, -inf below, NaN for NaN (torch.special.entr).
void lower_entr(LowerContext& ctx) {
  const int x = as_dtype(ctx, elem_arg(ctx, 0), ir::DType::Float32);
  const int positive =
      add_unary_op(ctx, rt::UnaryOp::Neg,
                   add_binary_op(ctx, rt::BinaryOp::Mul, x, add_unary_op(ctx, rt::UnaryOp::Log, x)));
  int y =
      add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Lt, x, number(ctx, 0.0)), number(ctx, -INFINITY), x);
  y = add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Eq, x, number(ctx, 0.0)), number(ctx, 0.0), y);
  set_elementwise_output(
      ctx, add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Gt, x, number(ctx, 0.0)), positive, y));
}

// ndtr(x) = erfc(-x / sqrt 2) / 2, the standard normal distribution function.
void lower_ndtr(LowerContext& ctx) {
  const int x = as_dtype(ctx, elem_arg(ctx, 0), ir::DType::Float32);
  const int erfc =
      add_unary_op(ctx, rt::UnaryOp::Erfc, add_unary_op(ctx, rt::UnaryOp::ScaleShift, x, -M_SQRT1_2, 0.0));
  set_elementwise_output(ctx, add_unary_op(ctx, rt::UnaryOp::ScaleShift, erfc, 0.5, 0.0));
}

// angle(x) of a real x: pi below 0, 0 otherwise (-0.0 too), NaN for NaN; float32.
void lower_angle(LowerContext& ctx) {
  const int x = as_dtype(ctx, elem_arg(ctx, 0), ir::DType::Float32);
  const int y = add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Lt, x, number(ctx, 0.0)),
                             number(ctx, M_PI), number(ctx, 0.0));
  set_elementwise_output(ctx, add_where_op(ctx, add_binary_op(ctx, rt::BinaryOp::Ne, x, x), x, y));
}

// Whether x's sign bit is set, as bool (-0.0 and negative NaNs included; integers: x < 0).
int sign_bit(LowerContext& ctx, int x) {
  const int bit = add_unary_op(ctx, rt::UnaryOp::Signbit, cast_to(ctx, x, ir::DType::Float32));
  return add_binary_op(ctx, rt::BinaryOp::Ne, bit, number(ctx, 0.0));
}

void lower_signbit(LowerContext& ctx) { ctx.set_tensor_output(0, sign_bit(ctx, ctx.tensor(0))); }

// copysign(a, b): |a| with b's sign bit (b a tensor or a number), in float32.
void lower_copysign(LowerContext& ctx) {
  const int a = add_unary_op(ctx, rt::UnaryOp::Abs, as_dtype(ctx, elem_arg(ctx, 0), ir::DType::Float32));
  const int b = as_dtype(ctx, elem_arg(ctx, 1), ir::DType::Float32);
  set_elementwise_output(ctx, add_where_op(ctx, sign_bit(ctx, b), add_unary_op(ctx, rt::UnaryOp::Neg, a), a));
}

// logaddexp(a, b) = max + log1p(exp(-|a - b|)) (base 2: max + log1p(exp2(-|a - b|)) / ln 2),
// torch's formula; a where a and b are the same infinity (where the formula gives NaN).
LowerFn log_add_exp(bool base2) {
  return [base2](LowerContext& ctx) {
    const int a = as_dtype(ctx, elem_arg(ctx, 0), ir::DType::Float32);
    const int b = as_dtype(ctx, elem_arg(ctx, 1), ir::DType::Float32);
    const int gap =
        add_unary_op(ctx, rt::UnaryOp::Neg,
                     add_unary_op(ctx, rt::UnaryOp::Abs, add_binary_op(ctx, rt::BinaryOp::Sub, a, b)));
    int tail = add_unary_op(ctx, rt::UnaryOp::Log1p,
                            add_unary_op(ctx, base2 ? rt::UnaryOp::Exp2 : rt::UnaryOp::Exp, gap));
    if (base2) tail = add_unary_op(ctx, rt::UnaryOp::ScaleShift, tail, 1.0 / M_LN2, 0.0);
    const int sum =
        add_binary_op(ctx, rt::BinaryOp::Add, add_binary_op(ctx, rt::BinaryOp::Maximum, a, b), tail);
    const int same_infinity = add_where_op(
        ctx,
        add_binary_op(ctx, rt::BinaryOp::Eq, add_unary_op(ctx, rt::UnaryOp::Abs, a), number(ctx, INFINITY)),
        add_binary_op(ctx, rt::BinaryOp::Eq, a, b), add_binary_op(ctx, rt::BinaryOp::Ne, a, a));
    set_elementwise_output(ctx, add_where_op(ctx, same_infinity, a, sum));
  };
}

// deg2rad / rad2deg: a product with the float32 constant, as torch's.
LowerFn scaled_by(double factor) {
  return [factor](LowerContext& ctx) {
    const int x = as_dtype(ctx, elem_arg(ctx, 0), ir::DType::Float32);
    set_elementwise_output(ctx, add_binary_op(ctx, rt::BinaryOp::Mul, x, number(ctx, factor)));
  };
}

// rrelu(x, lower, upper, training, generator) in evaluation: leaky_relu with the slope
// (lower + upper) / 2. Training draws random slopes: refused.
void lower_rrelu(LowerContext& ctx) {
  const double lower = ctx.num_inputs() > 1 && !ctx.is_none(1) ? ctx.double_arg(1) : 1.0 / 8;
  const double upper = ctx.num_inputs() > 2 && !ctx.is_none(2) ? ctx.double_arg(2) : 1.0 / 3;
  if (ctx.num_inputs() > 3 && !ctx.is_none(3) && ctx.bool_arg(3))
    ctx.fail("rrelu with training=True draws random slopes; export the model in eval mode");
  ctx.require_float32({0});
  set_elementwise_output(ctx, add_unary_op(ctx, rt::UnaryOp::LeakyRelu, ctx.tensor(0), (lower + upper) / 2));
}

// ldexp(self, other) = self * 2^other, torch's product with pow(2., other); float32.
void lower_ldexp(LowerContext& ctx) {
  const int x = as_dtype(ctx, elem_arg(ctx, 0), ir::DType::Float32);
  const int e = as_dtype(ctx, elem_arg(ctx, 1), ir::DType::Float32);
  set_elementwise_output(
      ctx, add_binary_op(ctx, rt::BinaryOp::Mul, x, add_unary_op(ctx, rt::UnaryOp::ScalarPow, e, 2.0)));
}

}  // namespace

void register_composite_math(Registry& r) {
  register_with_inplace(r, "aten::ldexp", lower_ldexp);
  register_with_inplace(r, "aten::frac", lower_frac);
  register_with_inplace(r, "aten::hypot", lower_hypot);
  register_with_inplace(r, "aten::logit", lower_logit);
  register_with_inplace(r, "aten::sinc", lower_sinc);
  register_with_inplace(r, "aten::heaviside", lower_heaviside);
  register_with_inplace(r, "aten::nan_to_num", lower_nan_to_num);
  register_with_inplace(r, "aten::xlogy", x_times(rt::UnaryOp::Log));
  r.add_lowering("aten::special_xlogy", x_times(rt::UnaryOp::Log));
  r.add_lowering("aten::special_xlog1py", x_times(rt::UnaryOp::Log1p));
  r.add_lowering("aten::special_entr", lower_entr);
  r.add_lowering("aten::special_ndtr", lower_ndtr);
  r.add_lowering("aten::signbit", lower_signbit);
  r.add_lowering("aten::angle", lower_angle);
  register_with_inplace(r, "aten::copysign", lower_copysign);
  r.add_lowering("aten::logaddexp", log_add_exp(false));
  r.add_lowering("aten::logaddexp2", log_add_exp(true));
  register_with_inplace(r, "aten::deg2rad", scaled_by(M_PI / 180.0));
  register_with_inplace(r, "aten::rad2deg", scaled_by(180.0 / M_PI));
  register_with_inplace(r, "aten::rrelu", lower_rrelu);
  r.add_lowering("aten::special_sinc", lower_sinc);
  r.add_lowering("aten::special_logit", lower_logit);
}

}  // namespace aotc::ops
