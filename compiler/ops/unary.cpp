// Activations -> IR "unary" -> unary_f32: relu, relu6, hardtanh, clamp, leaky_relu,
// sigmoid, tanh, gelu, silu, hardswish, hardsigmoid, and their in-place forms.
#include <aotc/rt/kernels.h>

#include "op_helpers.h"

namespace aotc::ops {
namespace {

using rt::UnaryOp;

void add_unary(LowerContext& ctx, UnaryOp kind, double a = 0, double b = 0) {
  ctx.require_float32({0});
  const int out = ctx.new_value(ir::DType::Float32, ctx.value(0).shape);
  ir::Op& op = ctx.add_op("unary", {ctx.tensor(0)}, {out});
  op.attrs = {{"op", static_cast<int64_t>(kind)}, {"a", a}, {"b", b}};
  ctx.set_tensor_output(0, out);
}

double optional_number(const LowerContext& ctx, size_t i, double fallback) {
  return ctx.is_none(i) ? fallback : ctx.double_arg(i);
}

void lower_gelu(LowerContext& ctx) {
  std::string approximate = "none";
  if (!ctx.is_none(1)) {
    if (ctx.arg(1).kind != Operand::Kind::String) ctx.fail("approximate must be a string");
    approximate = ctx.arg(1).s;
  }
  if (approximate == "none") return add_unary(ctx, UnaryOp::GeluErf);
  if (approximate == "tanh") return add_unary(ctx, UnaryOp::GeluTanh);
  ctx.fail("unknown gelu approximation '" + approximate + "'");
}

void lower_clamp(LowerContext& ctx) {
  if ((!ctx.is_none(1) && ctx.arg(1).is_tensor()) || (!ctx.is_none(2) && ctx.arg(2).is_tensor()))
    ctx.fail("clamp with tensor bounds is not supported yet");
  add_unary(ctx, UnaryOp::Clamp, optional_number(ctx, 1, -INFINITY), optional_number(ctx, 2, INFINITY));
}

std::string emit_unary(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, "",
                     "aotc::rt::unary_f32(pool, static_cast<aotc::rt::UnaryOp>(" +
                         std::to_string(op.i("op")) + "), " + EmitContext::f32(op.f("a")) + ", " +
                         EmitContext::f32(op.f("b")) + ", " +
                         std::to_string(ir::numel(e.graph.value(op.outputs[0]).shape)) + ", " +
                         e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
}

// Registers name and name_ (the in-place form) with the same lowering.
void both(Registry& r, const std::string& name, LowerFn fn) {
  r.add_lowering(name, fn);
  r.add_lowering(name + "_", fn);
}

}  // namespace

void register_unary(Registry& r) {
  both(r, "aten::relu", [](LowerContext& c) { add_unary(c, UnaryOp::Relu); });
  both(r, "aten::relu6", [](LowerContext& c) { add_unary(c, UnaryOp::Clamp, 0.0, 6.0); });
  both(r, "aten::hardtanh", [](LowerContext& c) {
    add_unary(c, UnaryOp::Clamp, optional_number(c, 1, -1.0), optional_number(c, 2, 1.0));
  });
  both(r, "aten::leaky_relu",
       [](LowerContext& c) { add_unary(c, UnaryOp::LeakyRelu, optional_number(c, 1, 0.01)); });
  both(r, "aten::sigmoid", [](LowerContext& c) { add_unary(c, UnaryOp::Sigmoid); });
  both(r, "aten::tanh", [](LowerContext& c) { add_unary(c, UnaryOp::Tanh); });
  both(r, "aten::gelu", lower_gelu);
  both(r, "aten::silu", [](LowerContext& c) { add_unary(c, UnaryOp::Silu); });
  both(r, "aten::hardswish", [](LowerContext& c) { add_unary(c, UnaryOp::Hardswish); });
  both(r, "aten::hardsigmoid", [](LowerContext& c) { add_unary(c, UnaryOp::Hardsigmoid); });
  both(r, "aten::clamp", lower_clamp);
  r.add_ir_op("unary", emit_unary);
}

}  // namespace aotc::ops
