// quantized_lookup.cpp: IR "qlookup" -> aotc::rt::lookup_u8: an element-wise op of a
// quantized tensor (hardswish, hardsigmoid, sigmoid, leaky_relu, ...) as a 256-entry
// table that the frontend has torch compute (Interpreter::lower_quantized_elementwise), so
// that every result is torch's own.
#include "quantized.h"

namespace aotc::ops {

int add_quantized_lookup(LowerContext& ctx, int x, std::vector<uint8_t> table, const ir::QuantParams& out_q) {
  if (table.size() != 256)
    ctx.fail("internal: a lookup table has " + std::to_string(table.size()) + " entries");
  const ir::Shape shape = ctx.graph.value(x).shape;
  const int t = ctx.graph.add_constant(ir::DType::UInt8, {256}, std::move(table));
  const int out = new_quantized_value(ctx, shape, out_q);
  ir::Op& op = ctx.add_op(ir::kind::qlookup, {x, t}, {out});
  op.attrs = {{"count", ir::numel(shape)}};
  return out;
}

namespace {

std::string emit_qlookup(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, "",
                     "aotc::rt::lookup_u8(pool, " + std::to_string(op.i("count")) + ", " +
                         e.in(op.inputs[1]) + ", " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_quantized_lookup(Registry& r) { r.add_ir_op(ir::kind::qlookup, emit_qlookup); }

}  // namespace aotc::ops
