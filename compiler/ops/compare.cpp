// Comparisons and logic, producing bool -> IR "binary" (Eq..LogicalXor) and "unary"
// (BitwiseNot): eq, ne, lt, le, gt, ge (Tensor and Scalar, and their aliases), logical_and
// / or / xor / not, bitwise_and / or / xor / not (and the &, |, ^, ~ operators) on bool and
// integer tensors, bitwise_left_shift / right_shift (and <<, >>) on integer tensors, isnan,
// isinf, isfinite. In-place forms write the result in self's dtype.
#include "elementwise.h"

#include <cmath>

namespace aotc::ops {
namespace {

using rt::BinaryOp;

// Both operands in their promoted dtype, then the op (bool result, or the promoted dtype
// for the bitwise ops).
int compare(LowerContext& ctx, BinaryOp op, const ElemArg& a, const ElemArg& b) {
  const ir::DType t = result_type({a, b});
  return add_binary_op(ctx, op, as_dtype(ctx, a, t), as_dtype(ctx, b, t));
}

LowerFn comparison(BinaryOp op) {
  return [op](LowerContext& ctx) {
    set_elementwise_output(ctx, compare(ctx, op, elem_arg(ctx, 0), elem_arg(ctx, 1)));
  };
}

// bitwise_and / or / xor and the __and__ / __or__ / __xor__ operators: integers and bool.
LowerFn bitwise(BinaryOp op) {
  return [op](LowerContext& ctx) {
    const ElemArg a = elem_arg(ctx, 0), b = elem_arg(ctx, 1);
    if (is_float(result_type({a, b}))) ctx.fail("bitwise operations need integer or bool tensors");
    set_elementwise_output(ctx, compare(ctx, op, a, b));
  };
}

// bitwise_left_shift / bitwise_right_shift and the << / >> operators: integers.
LowerFn shift(BinaryOp op) {
  return [op](LowerContext& ctx) {
    const ElemArg a = elem_arg(ctx, 0), b = elem_arg(ctx, 1);
    const ir::DType t = result_type({a, b});
    if (t != ir::DType::Int64 && t != ir::DType::Int32)
      ctx.fail(std::string("shifts need int64 or int32 tensors, got ") + ir::dtype_name(t));
    set_elementwise_output(ctx, compare(ctx, op, a, b));
  };
}

void lower_logical_not(LowerContext& ctx) {
  const ElemArg x = elem_arg(ctx, 0);
  set_elementwise_output(ctx,
                         add_binary_op(ctx, BinaryOp::Eq, x.tensor, constant_scalar(ctx.graph, x.dtype, 0)));
}

void lower_bitwise_not(LowerContext& ctx) {
  const ir::DType t = ctx.value(0).dtype;
  if (is_float(t)) ctx.fail("bitwise_not needs an integer or bool tensor");
  set_elementwise_output(ctx, add_unary_op(ctx, rt::UnaryOp::BitwiseNot, ctx.tensor(0)));
}

// isnan: x != x. isinf: |x| == inf. isfinite: |x| < inf (false for NaN). Integer tensors
// are never NaN or infinite.
void lower_isnan(LowerContext& ctx) {
  const int x = ctx.tensor(0);
  ctx.set_tensor_output(0, add_binary_op(ctx, BinaryOp::Ne, x, x));
}
LowerFn infinity_test(BinaryOp op) {
  return [op](LowerContext& ctx) {
    const int x = ctx.tensor(0);
    if (!is_float(ctx.value(0).dtype))  // all false (isinf) or all true (isfinite)
      return ctx.set_tensor_output(
          0, add_binary_op(ctx, op == BinaryOp::Eq ? BinaryOp::Ne : BinaryOp::Eq, x, x));
    const int abs = add_unary_op(ctx, rt::UnaryOp::Abs, x);
    ctx.set_tensor_output(
        0, add_binary_op(ctx, op, abs, constant_scalar(ctx.graph, ir::DType::Float32, INFINITY)));
  };
}

}  // namespace

void register_compare(Registry& r) {
  const std::pair<const char*, BinaryOp> comparisons[] = {{"eq", BinaryOp::Eq},
                                                          {"ne", BinaryOp::Ne},
                                                          {"not_equal", BinaryOp::Ne},
                                                          {"lt", BinaryOp::Lt},
                                                          {"less", BinaryOp::Lt},
                                                          {"le", BinaryOp::Le},
                                                          {"less_equal", BinaryOp::Le},
                                                          {"gt", BinaryOp::Gt},
                                                          {"greater", BinaryOp::Gt},
                                                          {"ge", BinaryOp::Ge},
                                                          {"greater_equal", BinaryOp::Ge},
                                                          {"logical_and", BinaryOp::LogicalAnd},
                                                          {"logical_or", BinaryOp::LogicalOr},
                                                          {"logical_xor", BinaryOp::LogicalXor}};
  for (const auto& [name, op] : comparisons)
    register_with_inplace(r, std::string("aten::") + name, comparison(op));
  const std::pair<const char*, BinaryOp> bitwise_ops[] = {{"bitwise_and", BinaryOp::BitwiseAnd},
                                                          {"bitwise_or", BinaryOp::BitwiseOr},
                                                          {"bitwise_xor", BinaryOp::BitwiseXor}};
  for (const auto& [name, op] : bitwise_ops)
    register_with_inplace(r, std::string("aten::") + name, bitwise(op));
  // Python's &, |, ^ on tensors; their names end in '_' but they are not in-place.
  r.add_lowering("aten::__and__", bitwise(BinaryOp::BitwiseAnd));
  r.add_lowering("aten::__or__", bitwise(BinaryOp::BitwiseOr));
  r.add_lowering("aten::__xor__", bitwise(BinaryOp::BitwiseXor));
  r.add_lowering("aten::__iand__", bitwise(BinaryOp::BitwiseAnd));
  r.add_lowering("aten::__ior__", bitwise(BinaryOp::BitwiseOr));
  r.add_lowering("aten::__ixor__", bitwise(BinaryOp::BitwiseXor));
  register_with_inplace(r, "aten::bitwise_left_shift", shift(BinaryOp::LeftShift));
  register_with_inplace(r, "aten::bitwise_right_shift", shift(BinaryOp::RightShift));
  r.add_lowering("aten::__lshift__", shift(BinaryOp::LeftShift));
  r.add_lowering("aten::__rshift__", shift(BinaryOp::RightShift));
  r.add_lowering("aten::__ilshift__", shift(BinaryOp::LeftShift));
  r.add_lowering("aten::__irshift__", shift(BinaryOp::RightShift));
  register_with_inplace(r, "aten::logical_not", lower_logical_not);
  register_with_inplace(r, "aten::bitwise_not", lower_bitwise_not);
  r.add_lowering("aten::isnan", lower_isnan);
  r.add_lowering("aten::isinf", infinity_test(BinaryOp::Eq));
  r.add_lowering("aten::isfinite", infinity_test(BinaryOp::Lt));
}

}  // namespace aotc::ops
