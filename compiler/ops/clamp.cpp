// clamp / clip (Scalar and Tensor bounds), clamp_min, clamp_max, in-place forms.
// Number bounds -> one IR "unary" Clamp (fusable into a conv/GEMM epilogue when float32);
// tensor bounds -> "binary" Maximum then Minimum (NaN-propagating, as torch). The result
// dtype is torch's promotion of self with the bounds (an int tensor clamped by 0.5 is float).
#include <cmath>

#include "elementwise.h"

namespace aotc::ops {
namespace {

void clamp(LowerContext& ctx, const std::optional<ElemArg>& lo, const std::optional<ElemArg>& hi) {
  const ElemArg self = elem_arg(ctx, 0);
  std::vector<ElemArg> args = {self};
  if (lo) args.push_back(*lo);
  if (hi) args.push_back(*hi);
  const ir::DType t = result_type(args);
  int y = as_dtype(ctx, self, t);
  const bool numbers = (!lo || lo->is_number()) && (!hi || hi->is_number());
  if (numbers) {
    y = add_unary_op(ctx, rt::UnaryOp::Clamp, y, lo ? lo->number : -INFINITY, hi ? hi->number : INFINITY);
  } else {
    if (lo) y = add_binary_op(ctx, rt::BinaryOp::Maximum, y, as_dtype(ctx, *lo, t));
    if (hi) y = add_binary_op(ctx, rt::BinaryOp::Minimum, y, as_dtype(ctx, *hi, t));
  }
  set_elementwise_output(ctx, y);
}

std::optional<ElemArg> bound(const LowerContext& ctx, size_t i) {
  if (ctx.is_none(i)) return std::nullopt;
  return elem_arg(ctx, i);
}

void lower_clamp(LowerContext& ctx) {
  const auto lo = bound(ctx, 1), hi = bound(ctx, 2);
  if (!lo && !hi) ctx.fail("clamp needs at least one of min and max");
  clamp(ctx, lo, hi);
}

}  // namespace

void register_clamp(Registry& r) {
  register_with_inplace(r, "aten::clamp", lower_clamp);
  register_with_inplace(r, "aten::clip", lower_clamp);
  register_with_inplace(r, "aten::clamp_min",
                        [](LowerContext& c) { clamp(c, elem_arg(c, 1), std::nullopt); });
  register_with_inplace(r, "aten::clamp_max",
                        [](LowerContext& c) { clamp(c, std::nullopt, elem_arg(c, 1)); });
}

}  // namespace aotc::ops
