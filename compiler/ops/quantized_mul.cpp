// quantized_mul.cpp: quantized::mul and quantized::mul_relu (FloatFunctional's mul, e.g.
// squeeze-and-excitation's scaling) -> IR "qmul" -> aotc::rt::qmul_u8: the product of the
// two integers less their zero points, requantized in float as torch does; broadcasting.
#include "quantized.h"

namespace aotc::ops {
namespace {

// A shape in memory order: NHWC's [N, H, W, C] for a channels_last value.
ir::Shape memory_shape(const ir::Shape& s, bool channels_last) {
  return channels_last ? ir::Shape{s[0], s[2], s[3], s[1]} : s;
}

void lower_qmul(LowerContext& ctx, bool relu) {
  const ir::QuantParams qa = ctx.quant(0);
  const ir::QuantParams qb = ctx.quant(1);
  const double out_scale = ctx.double_arg(2);
  const int64_t out_zero = ctx.int_arg(3);
  if (!(out_scale > 0) || !std::isfinite(out_scale))
    ctx.fail("output scale must be positive and finite, got " + std::to_string(out_scale));
  if (out_zero < 0 || out_zero > 255)
    ctx.fail("output zero point must be in [0, 255], got " + std::to_string(out_zero));
  const ir::Shape out_shape = broadcast_shapes(ctx, ctx.value(0).shape, ctx.value(1).shape);
  if (out_shape.size() > 4) ctx.fail("at most 4 dimensions are supported, got " + ir::shape_str(out_shape));
  // NHWC when either input is (a one-pixel or one-channel input is both at once).
  auto nhwc = [&](size_t i) {
    const ir::Shape& s = ctx.value(i).shape;
    return ctx.quant(i).channels_last && s.size() == 4 && s[1] > 1 && s[2] * s[3] > 1;
  };
  const bool channels_last = out_shape.size() == 4 && (nhwc(0) || nhwc(1));
  int a = ctx.tensor(0), b = ctx.tensor(1);
  for (int* id : {&a, &b})
    if (ctx.graph.value(*id).shape.size() == 4 || !channels_last)
      *id = quantized_in_layout(ctx, *id, channels_last && ctx.graph.value(*id).shape.size() == 4);
  if (channels_last)
    for (int id : {a, b})
      if (ctx.graph.value(id).shape.size() != 4) ctx.fail("a channels-last product needs 4-d inputs");
  // Both operands read in the output's memory order, broadcast dims with stride 0, padded
  // with leading 1s to 4 dims.
  const ir::Shape dims = memory_shape(out_shape, channels_last);
  auto strides = [&](int id) {
    const ir::Shape s = memory_shape(ctx.graph.value(id).shape, channels_last);
    std::vector<int64_t> st = broadcast_strides(s, dims);
    while (st.size() < 4) st.insert(st.begin(), 0);
    return st;
  };
  std::vector<int64_t> dims4 = dims;
  while (dims4.size() < 4) dims4.insert(dims4.begin(), 1);
  const int out = new_quantized_value(ctx, out_shape, {out_scale, out_zero, channels_last});
  ir::Op& op = ctx.add_op(ir::kind::qmul, {a, b}, {out});
  const float multiplier = (scale_f32(qa.scale) * scale_f32(qb.scale)) * (1.0f / scale_f32(out_scale));
  op.attrs = {{"dims", dims4},           {"a_strides", strides(a)},
              {"b_strides", strides(b)}, {"a_zero", qa.zero_point},
              {"b_zero", qb.zero_point}, {"multiplier", static_cast<double>(multiplier)},
              {"out_zero", out_zero},    {"relu", relu}};
  ctx.set_tensor_output(0, out);
}

std::string emit_qmul(const EmitContext& e, const ir::Op& op) {
  ParamsCode p("aotc::rt::QMulParams");
  p.set_array("dims", op.ints("dims"))
      .set_array("a_strides", op.ints("a_strides"))
      .set_array("b_strides", op.ints("b_strides"))
      .set("a_zero", op.i("a_zero"))
      .set("b_zero", op.i("b_zero"))
      .set_f32("multiplier", op.f("multiplier"))
      .set("out_zero", op.i("out_zero"))
      .set("lo", op.b("relu") ? op.i("out_zero") : 0);
  return kernel_call(op, p.str(),
                     "aotc::rt::qmul_u8(pool, p, " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " +
                         e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_quantized_mul(Registry& r) {
  // quantized::mul(Tensor qa, Tensor qb, float scale, int zero_point), mul_relu alike.
  r.add_quantized_lowering("quantized::mul", [](LowerContext& ctx) { lower_qmul(ctx, false); });
  r.add_quantized_lowering("quantized::mul_relu", [](LowerContext& ctx) { lower_qmul(ctx, true); });
  r.add_ir_op(ir::kind::qmul, emit_qmul);
}

}  // namespace aotc::ops
