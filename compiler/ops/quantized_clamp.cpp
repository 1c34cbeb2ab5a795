// quantized_clamp.cpp: relu, relu6, hardtanh and clamp of a quantized tensor -> IR
// "qclamp" -> aotc::rt::clamp_u8: the bounds quantized with the tensor's own scale and
// zero point (as torch does), the integers clamped, the scale and zero point kept.
#include "quantized.h"

namespace aotc::ops {
namespace {

void add_qclamp(LowerContext& ctx, std::optional<double> lo, std::optional<double> hi) {
  const ir::QuantParams q = ctx.quant(0);
  const ir::Shape shape = ctx.value(0).shape;
  const int64_t qlo = lo ? quantize_number(*lo, q) : 0;
  const int64_t qhi = hi ? quantize_number(*hi, q) : 255;
  const int out = new_quantized_value(ctx, shape, q);
  ir::Op& op = ctx.add_op(ir::kind::qclamp, {ctx.tensor(0)}, {out});
  op.attrs = {{"count", ir::numel(shape)}, {"lo", qlo}, {"hi", std::max(qlo, qhi)}};
  ctx.set_tensor_output(0, out);
}

std::optional<double> optional_number(const LowerContext& ctx, size_t i) {
  if (ctx.is_none(i)) return std::nullopt;
  return ctx.double_arg(i);
}

std::string emit_qclamp(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, "",
                     "aotc::rt::clamp_u8(pool, " + std::to_string(op.i("count")) + ", " +
                         std::to_string(op.i("lo")) + ", " + std::to_string(op.i("hi")) + ", " +
                         e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_quantized_clamp(Registry& r) {
  for (const char* name : {"aten::relu", "aten::relu_"})
    r.add_quantized_lowering(name, [](LowerContext& ctx) { add_qclamp(ctx, 0.0, std::nullopt); });
  for (const char* name : {"aten::relu6", "aten::relu6_"})
    r.add_quantized_lowering(name, [](LowerContext& ctx) { add_qclamp(ctx, 0.0, 6.0); });
  // hardtanh(self, min_val=-1, max_val=1)
  for (const char* name : {"aten::hardtanh", "aten::hardtanh_"})
    r.add_quantized_lowering(name, [](LowerContext& ctx) {
      add_qclamp(ctx, ctx.is_none(1) ? -1.0 : ctx.double_arg(1), ctx.is_none(2) ? 1.0 : ctx.double_arg(2));
    });
  // clamp(self, min=None, max=None) with numbers
  for (const char* name : {"aten::clamp", "aten::clamp_"})
    r.add_quantized_lowering(name, [](LowerContext& ctx) {
      if ((!ctx.is_none(1) && ctx.arg(1).is_tensor()) || (!ctx.is_none(2) && ctx.arg(2).is_tensor()))
        ctx.fail("a quantized clamp takes numbers as bounds, not tensors");
      add_qclamp(ctx, optional_number(ctx, 1), optional_number(ctx, 2));
    });
  r.add_ir_op(ir::kind::qclamp, emit_qclamp);
}

}  // namespace aotc::ops
