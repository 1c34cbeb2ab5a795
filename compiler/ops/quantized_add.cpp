// quantized_add.cpp: quantized::add and quantized::add_relu (FloatFunctional's add in a
// quantized model) -> IR "qadd" -> aotc::rt::qadd_u8: both inputs dequantized, added
// and requantized in float as torch does.
#include "quantized.h"

namespace aotc::ops {
namespace {

void lower_qadd(LowerContext& ctx, bool relu) {
  const ir::QuantParams qa = ctx.quant(0);
  const ir::QuantParams qb = ctx.quant(1);
  const double out_scale = ctx.double_arg(2);
  const int64_t out_zero = ctx.int_arg(3);
  const ir::Shape shape = ctx.value(0).shape;
  if (ctx.value(1).shape != shape)
    ctx.fail("the inputs' shapes differ: " + ir::shape_str(shape) + " and " +
             ir::shape_str(ctx.value(1).shape) + " (aotc's quantized add does not broadcast)");
  if (!(out_scale > 0) || !std::isfinite(out_scale))
    ctx.fail("output scale must be positive and finite, got " + std::to_string(out_scale));
  if (out_zero < 0 || out_zero > 255)
    ctx.fail("output zero point must be in [0, 255], got " + std::to_string(out_zero));
  // The output takes the first input's layout, as torch's does.
  const int b = quantized_in_layout(ctx, ctx.tensor(1), qa.channels_last);
  const int out = new_quantized_value(ctx, shape, {out_scale, out_zero, qa.channels_last});
  ir::Op& op = ctx.add_op(ir::kind::qadd, {ctx.tensor(0), b}, {out});
  const float sa = scale_f32(qa.scale), sb = scale_f32(qb.scale);
  op.attrs = {{"count", ir::numel(shape)},
              {"a_scale", static_cast<double>(sa)},
              {"a_premul", static_cast<double>(sa * static_cast<float>(-qa.zero_point))},
              {"b_scale", static_cast<double>(sb)},
              {"b_premul", static_cast<double>(sb * static_cast<float>(-qb.zero_point))},
              {"out_inv_scale", static_cast<double>(1.0f / scale_f32(out_scale))},
              {"out_zero", out_zero},
              {"relu", relu}};
  ctx.set_tensor_output(0, out);
}

std::string emit_qadd(const EmitContext& e, const ir::Op& op) {
  ParamsCode p("aotc::rt::QAddParams");
  p.set_f32("a_scale", op.f("a_scale"))
      .set_f32("a_premul", op.f("a_premul"))
      .set_f32("b_scale", op.f("b_scale"))
      .set_f32("b_premul", op.f("b_premul"))
      .set_f32("out_inv_scale", op.f("out_inv_scale"))
      .set("out_zero", op.i("out_zero"))
      .set_bool("relu", op.b("relu"));
  return kernel_call(op, p.str(),
                     "aotc::rt::qadd_u8(pool, " + std::to_string(op.i("count")) + ", p, " +
                         e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_quantized_add(Registry& r) {
  // quantized::add(Tensor qa, Tensor qb, float scale, int zero_point), add_relu alike.
  r.add_quantized_lowering("quantized::add", [](LowerContext& ctx) { lower_qadd(ctx, false); });
  r.add_quantized_lowering("quantized::add_relu", [](LowerContext& ctx) { lower_qadd(ctx, true); });
  r.add_ir_op(ir::kind::qadd, emit_qadd);
}

}  // namespace aotc::ops
