// covariance.cpp: aten::cov(self, *, correction=1, fweights=None, aweights=None) without
// weights and aten::corrcoef(self): the variables are the rows of a 2-d input (a 1-d input
// is one variable), the observations its columns; composed as torch composes them (mean,
// centring, mm, division by N - correction, or 0 when that is not positive, then size-1
// dims squeezed; corrcoef divides by the standard deviations both ways and clips to
// [-1, 1], a single variable giving c / c). Weighted observations are refused: torch checks
// their signs at run time, which a compiled model cannot.
#include "elementwise.h"

namespace aotc::ops {
namespace {

Operand T(int id) { return Operand::of_tensor(id); }

int covariance(LowerContext& ctx, int64_t correction) {
  const ir::Value& x = ctx.value(0);
  if (x.shape.size() > 2) ctx.fail("needs a 1-d or 2-d input, got " + ir::shape_str(x.shape));
  if (x.dtype == ir::DType::Bool) ctx.fail("needs a numeric input, got bool");
  int in = cast_to(ctx, ctx.tensor(0), ir::DType::Float32);
  if (x.shape.size() < 2) in = ctx.graph.add_alias(in, {1, ir::numel(x.shape)});
  const int64_t observations = ctx.graph.value(in).shape[1];
  const int avg =
      lower_as(ctx, "aten::mean", {T(in), Operand::of_ints({1}), Operand::of_bool(true), Operand::none()});
  const int centred = lower_as(ctx, "aten::sub", {T(in), T(avg)});
  const int c = lower_as(ctx, "aten::mm", {T(centred), T(lower_as(ctx, "aten::t", {T(centred)}))});
  const int64_t norm = observations - correction;
  const int scaled =
      lower_as(ctx, "aten::div", {T(c), Operand::of_double(norm > 0 ? static_cast<double>(norm) : 0.0)});
  return lower_as(ctx, "aten::squeeze", {T(scaled)});
}

void lower_cov(LowerContext& ctx) {
  if (!ctx.is_none(2) || !ctx.is_none(3))
    ctx.fail("fweights and aweights are not supported (torch checks them at run time)");
  ctx.set_tensor_output(0, covariance(ctx, ctx.is_none(1) ? 1 : ctx.int_arg(1)));
}

void lower_corrcoef(LowerContext& ctx) {
  const int c = covariance(ctx, 1);
  if (ctx.graph.value(c).shape.empty()) {  // one variable: 1, or NaN for a covariance of 0, inf or NaN
    ctx.set_tensor_output(0, lower_as(ctx, "aten::div", {T(c), T(c)}));
    return;
  }
  const int64_t n = ctx.graph.value(c).shape[0];
  const int diagonal =
      lower_as(ctx, "aten::diagonal", {T(c), Operand::of_int(0), Operand::of_int(0), Operand::of_int(1)});
  const int stddev = lower_as(ctx, "aten::sqrt", {T(diagonal)});
  int r = lower_as(ctx, "aten::div",
                   {T(c), T(lower_as(ctx, "aten::reshape", {T(stddev), Operand::of_ints({n, 1})}))});
  r = lower_as(ctx, "aten::div",
               {T(r), T(lower_as(ctx, "aten::reshape", {T(stddev), Operand::of_ints({1, n})}))});
  ctx.set_tensor_output(
      0, lower_as(ctx, "aten::clamp", {T(r), Operand::of_double(-1.0), Operand::of_double(1.0)}));
}

}  // namespace

void register_covariance(Registry& r) {
  r.add_lowering("aten::cov", lower_cov);
  r.add_lowering("aten::corrcoef", lower_corrcoef);
}

}  // namespace aotc::ops
