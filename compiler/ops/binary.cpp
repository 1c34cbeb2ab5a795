// add, sub, mul, div (and rsub, in-place and scalar forms) -> IR "binary" -> binary_f32,
// with torch's broadcasting. Python numbers become 0-d constants.
#include <aotc/rt/kernels.h>

#include "op_helpers.h"

namespace aotc::ops {
namespace {

using rt::BinaryOp;

// A tensor operand, or a 0-d constant for a Python number.
int operand_tensor(LowerContext& ctx, size_t i) {
  const Operand& o = ctx.arg(i);
  if (o.is_tensor()) return o.tensor;
  if (o.is_number()) return scalar_constant(ctx.graph, ctx.double_arg(i));
  ctx.fail("argument " + std::to_string(i) + " must be a tensor or a number, got " + o.describe());
}

void add_binary(LowerContext& ctx, BinaryOp kind, int a, int b, double alpha) {
  for (int id : {a, b})
    if (ctx.graph.value(id).dtype != ir::DType::Float32)
      ctx.fail(std::string("operands of dtype ") + ir::dtype_name(ctx.graph.value(id).dtype) +
               " are not supported yet (float32 only)");
  const ir::Shape out_shape = broadcast_shapes(ctx, ctx.graph.value(a).shape, ctx.graph.value(b).shape);
  const int out = ctx.new_value(ir::DType::Float32, out_shape);
  ir::Op& op = ctx.add_op("binary", {a, b}, {out});
  op.attrs = {{"op", static_cast<int64_t>(kind)}, {"alpha", alpha}};
  ctx.set_tensor_output(0, out);
}

// add/sub(self, other, alpha=1)
LowerFn add_or_sub(BinaryOp kind) {
  return [kind](LowerContext& ctx) {
    const double alpha = ctx.num_inputs() > 2 && !ctx.is_none(2) ? ctx.double_arg(2) : 1.0;
    add_binary(ctx, kind, operand_tensor(ctx, 0), operand_tensor(ctx, 1), alpha);
  };
}

LowerFn mul_or_div(BinaryOp kind) {
  return [kind](LowerContext& ctx) {
    if (kind == BinaryOp::Div && ctx.num_inputs() > 2 && !ctx.is_none(2))
      ctx.fail("division with rounding_mode='" + ctx.arg(2).s + "' is not supported yet");
    add_binary(ctx, kind, operand_tensor(ctx, 0), operand_tensor(ctx, 1), 1.0);
  };
}

// rsub(self, other, alpha) = other - alpha * self
void lower_rsub(LowerContext& ctx) {
  const int self = operand_tensor(ctx, 0), other = operand_tensor(ctx, 1);
  const double alpha = ctx.num_inputs() > 2 ? ctx.double_arg(2) : 1.0;
  add_binary(ctx, BinaryOp::Sub, other, self, alpha);
}

std::string emit_binary(const EmitContext& e, const ir::Op& op) {
  const ir::Shape& out = e.graph.value(op.outputs[0]).shape;
  ParamsCode p("aotc::rt::BinaryParams");
  p.raw("op", "static_cast<aotc::rt::BinaryOp>(" + std::to_string(op.i("op")) + ")")
      .set_f32("alpha", op.f("alpha"))
      .set("rank", static_cast<int64_t>(out.size()))
      .set_array("out_dims", out)
      .set_array("a_strides", broadcast_strides(e.graph.value(op.inputs[0]).shape, out))
      .set_array("b_strides", broadcast_strides(e.graph.value(op.inputs[1]).shape, out));
  return kernel_call(op, p.str(),
                     "aotc::rt::binary_f32(pool, p, " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) +
                         ", " + e.out(op.outputs[0]) + ");");
}

void with_inplace(Registry& r, const std::string& name, LowerFn fn) {
  r.add_lowering(name, fn);
  r.add_lowering(name + "_", fn);
}

}  // namespace

void register_binary(Registry& r) {
  with_inplace(r, "aten::add", add_or_sub(BinaryOp::Add));
  with_inplace(r, "aten::sub", add_or_sub(BinaryOp::Sub));
  with_inplace(r, "aten::mul", mul_or_div(BinaryOp::Mul));
  with_inplace(r, "aten::div", mul_or_div(BinaryOp::Div));
  r.add_lowering("aten::rsub", lower_rsub);
  r.add_ir_op("binary", emit_binary);
}

}  // namespace aotc::ops
