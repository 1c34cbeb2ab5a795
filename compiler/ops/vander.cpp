// vander.cpp: aten::vander(x, N=None, increasing=False) and aten::linalg_vander(x, *, N=None):
// the powers x^0 .. x^(N-1) of each value (N defaults to the number of values), composed as
// torch composes them: a column of ones beside the cumulative product of x repeated, so each
// power is the product of the one before and x, in x's dtype, integers in int64; vander's
// columns from the highest power unless increasing, linalg.vander's from x^0 along a new
// last dim of a tensor of any rank.
#include "elementwise.h"

namespace aotc::ops {
namespace {

Operand T(int id) { return Operand::of_tensor(id); }

// [*x.shape, n]: x^0 .. x^(n-1) along the new last dim (n >= 1).
int powers(LowerContext& ctx, int x, int64_t n) {
  const ir::Value& v = ctx.graph.value(x);
  const ir::DType t = is_float(v.dtype) ? ir::DType::Float32 : ir::DType::Int64;
  const int column = lower_as(ctx, "aten::unsqueeze", {T(cast_to(ctx, x, t)), Operand::of_int(-1)});
  ir::Shape shape = ctx.graph.value(column).shape;
  shape.back() = 1;
  const int ones =
      lower_as(ctx, "aten::expand",
               {T(constant_scalar(ctx.graph, t, 1.0)), Operand::of_ints(shape), Operand::of_bool(false)});
  if (n == 1) return lower_as(ctx, "aten::clone", {T(ones), Operand::none()});
  shape.back() = n - 1;
  const int repeated =
      lower_as(ctx, "aten::expand", {T(column), Operand::of_ints(shape), Operand::of_bool(false)});
  const int products = lower_as(ctx, "aten::cumprod", {T(repeated), Operand::of_int(-1), Operand::none()});
  return lower_as(ctx, "aten::cat", {Operand::of_tensors({ones, products}), Operand::of_int(-1)});
}

void lower_vander(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  if (x.shape.size() != 1) ctx.fail("x must have one dim, got " + ir::shape_str(x.shape));
  if (x.dtype == ir::DType::Bool) ctx.fail("x must be a number tensor, got bool");
  const int64_t n = ctx.num_inputs() > 1 && !ctx.is_none(1) ? ctx.int_arg(1) : x.shape[0];
  if (n < 1) ctx.fail("N must be at least 1, got " + std::to_string(n));
  const int result = powers(ctx, ctx.tensor(0), n);
  const bool increasing = ctx.num_inputs() > 2 && ctx.bool_arg(2);
  ctx.set_tensor_output(
      0, increasing ? result : lower_as(ctx, "aten::flip", {T(result), Operand::of_ints({1})}));
}

void lower_linalg_vander(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  if (x.shape.empty()) ctx.fail("x must have at least one dim");
  if (x.dtype == ir::DType::Bool) ctx.fail("x must be a number tensor, got bool");
  const int64_t n = ctx.num_inputs() > 1 && !ctx.is_none(1) ? ctx.int_arg(1) : x.shape.back();
  if (n < 2) ctx.fail("N must be greater than 1, got " + std::to_string(n));
  ctx.set_tensor_output(0, powers(ctx, ctx.tensor(0), n));
}

}  // namespace

void register_vander(Registry& r) {
  r.add_lowering("aten::vander", lower_vander);
  r.add_lowering("aten::linalg_vander", lower_linalg_vander);
}

}  // namespace aotc::ops
