// Arithmetic with broadcasting and torch's type promotion -> IR "binary" -> binary_f32 /
// rt::binary: add, sub (alpha), rsub, mul, div (rounding_mode None, 'trunc', 'floor'),
// true_divide, floor_divide, remainder, fmod, pow (tensor^scalar, scalar^tensor,
// tensor^tensor), minimum, maximum, atan2, square, addcmul, addcdiv, lerp; in-place forms too.
// Python numbers become 0-d constants of the computation dtype.
#include "elementwise.h"

namespace aotc::ops {
namespace {

using rt::BinaryOp;

// The result of a OP b computed in result_type(a, b), or in float32 when float_only and the
// promoted type is integral (true division).
int promoted_binary(LowerContext& ctx, BinaryOp op, const ElemArg& a, const ElemArg& b, double alpha = 1.0,
                    bool float_only = false) {
  ir::DType t = result_type({a, b});
  if (float_only && !is_float(t)) t = ir::DType::Float32;
  if (t == ir::DType::Bool && (op == BinaryOp::Sub || op == BinaryOp::FloorDiv || op == BinaryOp::TruncDiv ||
                               op == BinaryOp::Remainder || op == BinaryOp::Fmod || op == BinaryOp::Pow))
    ctx.fail("this operation on two bool operands is not supported (torch rejects it too)");
  if (!is_float(t) && (op == BinaryOp::Atan2)) t = ir::DType::Float32;
  if (alpha != 1.0 && !is_float(t) && alpha != static_cast<double>(static_cast<int64_t>(alpha)))
    ctx.fail("for integer tensors alpha must be an integer, got " + std::to_string(alpha));
  return add_binary_op(ctx, op, as_dtype(ctx, a, t), as_dtype(ctx, b, t), alpha);
}

double alpha_arg(const LowerContext& ctx, size_t i) {
  return ctx.num_inputs() > i && !ctx.is_none(i) ? ctx.double_arg(i) : 1.0;
}

// add/sub(self, other, alpha=1), Tensor and Scalar overloads.
LowerFn add_or_sub(BinaryOp op) {
  return [op](LowerContext& ctx) {
    set_elementwise_output(ctx,
                           promoted_binary(ctx, op, elem_arg(ctx, 0), elem_arg(ctx, 1), alpha_arg(ctx, 2)));
  };
}

// rsub(self, other, alpha=1) = other - alpha * self
void lower_rsub(LowerContext& ctx) {
  ctx.set_tensor_output(
      0, promoted_binary(ctx, BinaryOp::Sub, elem_arg(ctx, 1), elem_arg(ctx, 0), alpha_arg(ctx, 2)));
}

LowerFn simple(BinaryOp op) {
  return [op](LowerContext& ctx) {
    set_elementwise_output(ctx, promoted_binary(ctx, op, elem_arg(ctx, 0), elem_arg(ctx, 1)));
  };
}

// div(self, other, rounding_mode=None): true division in float; 'trunc' and 'floor' keep
// integer dtypes.
void lower_div(LowerContext& ctx) {
  std::string mode;
  if (ctx.num_inputs() > 2 && !ctx.is_none(2)) {
    if (ctx.arg(2).kind != Operand::Kind::String) ctx.fail("rounding_mode must be a string");
    mode = ctx.arg(2).s;
  }
  const ElemArg a = elem_arg(ctx, 0), b = elem_arg(ctx, 1);
  int out;
  if (mode.empty()) {
    out = promoted_binary(ctx, BinaryOp::Div, a, b, 1.0, true);
  } else if (mode == "trunc") {
    out = promoted_binary(ctx, BinaryOp::TruncDiv, a, b);
  } else if (mode == "floor") {
    out = promoted_binary(ctx, BinaryOp::FloorDiv, a, b);
  } else {
    ctx.fail("unknown rounding_mode '" + mode + "'");
  }
  set_elementwise_output(ctx, out);
}

void lower_true_divide(LowerContext& ctx) {
  set_elementwise_output(ctx,
                         promoted_binary(ctx, BinaryOp::Div, elem_arg(ctx, 0), elem_arg(ctx, 1), 1.0, true));
}

// pow(Tensor, Tensor), pow(Tensor, Scalar), pow(Scalar, Tensor).
void lower_pow(LowerContext& ctx) {
  const ElemArg base = elem_arg(ctx, 0), exponent = elem_arg(ctx, 1);
  const ir::DType t = result_type({base, exponent});
  int out;
  if (t == ir::DType::Float32 && exponent.is_number()) {
    out = add_unary_op(ctx, rt::UnaryOp::PowScalar, as_dtype(ctx, base, t), exponent.number);
  } else if (t == ir::DType::Float32 && base.is_number()) {
    out = add_unary_op(ctx, rt::UnaryOp::ScalarPow, as_dtype(ctx, exponent, t), base.number);
  } else {
    if (is_integral(t) && exponent.is_number() && exponent.number < 0)
      ctx.fail("integers to negative integer powers are not allowed");
    out = promoted_binary(ctx, BinaryOp::Pow, base, exponent);
  }
  set_elementwise_output(ctx, out);
}

// square(self) = self * self; bool squares to int64 as torch's pow(self, 2).
void lower_square(LowerContext& ctx) {
  int x = ctx.tensor(0);
  if (ctx.value(0).dtype == ir::DType::Bool) x = cast_to(ctx, x, ir::DType::Int64);
  set_elementwise_output(ctx, add_binary_op(ctx, BinaryOp::Mul, x, x));
}

// addcmul / addcdiv(self, tensor1, tensor2, value=1) = self + value * (t1 OP t2)
LowerFn addc(BinaryOp op) {
  return [op](LowerContext& ctx) {
    const ElemArg self = elem_arg(ctx, 0), t1 = elem_arg(ctx, 1), t2 = elem_arg(ctx, 2);
    const ElemArg value = ctx.num_inputs() > 3 ? elem_arg(ctx, 3) : ElemArg{-1, 1.0, ir::DType::Int64, false};
    const ir::DType t = result_type({self, t1, t2, value});
    if (op == BinaryOp::Div && !is_float(t)) ctx.fail("integer division with addcdiv is not supported");
    const int prod = add_binary_op(ctx, op, as_dtype(ctx, t1, t), as_dtype(ctx, t2, t));
    set_elementwise_output(ctx,
                           add_binary_op(ctx, BinaryOp::Add, as_dtype(ctx, self, t), prod, value.number));
  };
}

// lerp(self, end, weight) = self + weight * (end - self)
void lower_lerp(LowerContext& ctx) {
  const ElemArg self = elem_arg(ctx, 0), end = elem_arg(ctx, 1), weight = elem_arg(ctx, 2);
  const ir::DType t = result_type({self, end});
  if (t != ir::DType::Float32) ctx.fail("lerp needs float32 tensors");
  const int s = as_dtype(ctx, self, t);
  const int diff = add_binary_op(ctx, BinaryOp::Sub, as_dtype(ctx, end, t), s);
  int out;
  if (weight.is_number()) {
    out = add_binary_op(ctx, BinaryOp::Add, s, diff, weight.number);
  } else {
    out = add_binary_op(ctx, BinaryOp::Add, s,
                        add_binary_op(ctx, BinaryOp::Mul, as_dtype(ctx, weight, t), diff));
  }
  set_elementwise_output(ctx, out);
}

std::string emit_binary(const EmitContext& e, const ir::Op& op) {
  const ir::Shape& out = e.graph.value(op.outputs[0]).shape;
  const ir::DType t = e.graph.value(op.inputs[0]).dtype;
  ParamsCode p("aotc::rt::BinaryParams");
  p.raw("op", "static_cast<aotc::rt::BinaryOp>(" + std::to_string(op.i("op")) + ")")
      .set_f32("alpha", op.f("alpha"))
      .set("rank", static_cast<int64_t>(out.size()))
      .set_array("out_dims", out)
      .set_array("a_strides", broadcast_strides(e.graph.value(op.inputs[0]).shape, out))
      .set_array("b_strides", broadcast_strides(e.graph.value(op.inputs[1]).shape, out));
  const std::string args =
      e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " + e.out(op.outputs[0]) + ");";
  if (t == ir::DType::Float32 && e.graph.value(op.outputs[0]).dtype == ir::DType::Float32)
    return kernel_call(op, p.str(), "aotc::rt::binary_f32(pool, p, " + args);
  return kernel_call(op, p.str(), "aotc::rt::binary(pool, p, " + elem_type_code(t) + ", " + args);
}

}  // namespace

void register_binary(Registry& r) {
  register_with_inplace(r, "aten::add", add_or_sub(BinaryOp::Add));
  register_with_inplace(r, "aten::sub", add_or_sub(BinaryOp::Sub));
  register_with_inplace(r, "aten::subtract", add_or_sub(BinaryOp::Sub));
  register_with_inplace(r, "aten::mul", simple(BinaryOp::Mul));
  register_with_inplace(r, "aten::multiply", simple(BinaryOp::Mul));
  register_with_inplace(r, "aten::div", lower_div);
  register_with_inplace(r, "aten::divide", lower_div);
  register_with_inplace(r, "aten::true_divide", lower_true_divide);
  register_with_inplace(r, "aten::floor_divide", simple(BinaryOp::FloorDiv));
  register_with_inplace(r, "aten::remainder", simple(BinaryOp::Remainder));
  register_with_inplace(r, "aten::fmod", simple(BinaryOp::Fmod));
  register_with_inplace(r, "aten::pow", lower_pow);
  register_with_inplace(r, "aten::atan2", simple(BinaryOp::Atan2));
  r.add_lowering("aten::minimum", simple(BinaryOp::Minimum));
  r.add_lowering("aten::maximum", simple(BinaryOp::Maximum));
  register_with_inplace(r, "aten::square", lower_square);
  register_with_inplace(r, "aten::addcmul", addc(BinaryOp::Mul));
  register_with_inplace(r, "aten::addcdiv", addc(BinaryOp::Div));
  register_with_inplace(r, "aten::lerp", lower_lerp);
  r.add_lowering("aten::rsub", lower_rsub);
  r.add_ir_op(ir::kind::binary, emit_binary);
}

}  // namespace aotc::ops
