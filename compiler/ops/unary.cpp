// Activations -> IR "unary" -> unary_f32 (rt::unary for integer and bool tensors):
// relu, relu6, hardtanh, leaky_relu, sigmoid, tanh, gelu (erf and tanh), silu, hardswish,
// hardsigmoid, and their in-place forms. Integer inputs of the float-only activations are
// converted to float32 first, as torch promotes them.
#include "elementwise.h"

namespace aotc::ops {
namespace {

using rt::UnaryOp;

void add_unary(LowerContext& ctx, UnaryOp kind, double a = 0, double b = 0) { lower_unary(ctx, kind, a, b); }

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

std::string emit_unary(const EmitContext& e, const ir::Op& op) {
  const ir::DType t = e.graph.value(op.inputs[0]).dtype;
  const std::string count = std::to_string(ir::numel(e.graph.value(op.outputs[0]).shape));
  const std::string kind = "static_cast<aotc::rt::UnaryOp>(" + std::to_string(op.i("op")) + ")";
  const std::string data = e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");";
  if (t == ir::DType::Float32)
    return kernel_call(op, "",
                       "aotc::rt::unary_f32(pool, " + kind + ", " + EmitContext::f32(op.f("a")) + ", " +
                           EmitContext::f32(op.f("b")) + ", " + count + ", " + data);
  // Integer bounds (clamp) are exact in double up to 2^53.
  char a[40], b[40];
  std::snprintf(a, sizeof a, "%.17g", op.f("a"));
  std::snprintf(b, sizeof b, "%.17g", op.f("b"));
  auto literal = [](const char* s) -> std::string {
    const std::string v = s;
    if (v == "inf") return "__builtin_inf()";
    if (v == "-inf") return "(-__builtin_inf())";
    return v;
  };
  return kernel_call(op, "",
                     "aotc::rt::unary(pool, " + kind + ", " + elem_type_code(t) + ", " + literal(a) + ", " +
                         literal(b) + ", " + count + ", " + data);
}

}  // namespace

void register_unary(Registry& r) {
  register_with_inplace(r, "aten::relu", [](LowerContext& c) { add_unary(c, UnaryOp::Relu); });
  register_with_inplace(r, "aten::relu6", [](LowerContext& c) { add_unary(c, UnaryOp::Clamp, 0.0, 6.0); });
  register_with_inplace(r, "aten::hardtanh", [](LowerContext& c) {
    add_unary(c, UnaryOp::Clamp, optional_number(c, 1, -1.0), optional_number(c, 2, 1.0));
  });
  register_with_inplace(r, "aten::leaky_relu", [](LowerContext& c) {
    add_unary(c, UnaryOp::LeakyRelu, optional_number(c, 1, 0.01));
  });
  register_with_inplace(r, "aten::sigmoid", [](LowerContext& c) { add_unary(c, UnaryOp::Sigmoid); });
  register_with_inplace(r, "aten::tanh", [](LowerContext& c) { add_unary(c, UnaryOp::Tanh); });
  register_with_inplace(r, "aten::gelu", lower_gelu);
  register_with_inplace(r, "aten::silu", [](LowerContext& c) { add_unary(c, UnaryOp::Silu); });
  register_with_inplace(r, "aten::hardswish", [](LowerContext& c) { add_unary(c, UnaryOp::Hardswish); });
  register_with_inplace(r, "aten::hardsigmoid", [](LowerContext& c) { add_unary(c, UnaryOp::Hardsigmoid); });
  r.add_ir_op(ir::kind::unary, emit_unary);
}

}  // namespace aotc::ops
