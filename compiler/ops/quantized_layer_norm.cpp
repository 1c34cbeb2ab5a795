// quantized_layer_norm.cpp: quantized::layer_norm (torch.ao's quantized LayerNorm, as FX-mode
// quantization of a transformer makes it) -> IR "qlayer_norm" -> aotc::rt::qlayer_norm_u8:
// rows of uint8 normalised in float, quantized again at the output's scale and zero point.
#include <aotc/rt/kernels/quantized.h>

#include <cstdio>

#include "quantized.h"
#include "sequence_ops.h"

namespace aotc::ops {
namespace {

// quantized::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias,
// float eps, float output_scale, int output_zero_point)
void lower_qlayer_norm(LowerContext& ctx) {
  const ir::QuantParams in = ctx.quant(0);
  const int x = quantized_in_layout(ctx, ctx.tensor(0), false);
  const ir::Shape xs = ctx.graph.value(x).shape;
  const std::vector<int64_t> normalized = ctx.ints_arg(1);
  check_normalized_shape(ctx, xs, normalized);
  for (size_t i : {size_t{2}, size_t{3}}) {
    if (ctx.is_none(i)) continue;
    ctx.require_float32({i});
    if (ctx.value(i).shape != normalized)
      ctx.fail(std::string(i == 2 ? "weight" : "bias") + " of shape " + ir::shape_str(ctx.value(i).shape) +
               " does not match normalized_shape " + ir::shape_str(normalized));
  }
  const double eps = ctx.double_arg(4), out_scale = ctx.double_arg(5);
  if (!(eps >= 0) || !std::isfinite(eps))
    ctx.fail("eps must be finite and not negative, got " + std::to_string(eps));
  const int64_t out_zero = ctx.int_arg(6);
  if (!(out_scale > 0) || !std::isfinite(out_scale))
    ctx.fail("output scale must be positive and finite, got " + std::to_string(out_scale));
  if (out_zero < 0 || out_zero > 255)
    ctx.fail("output zero point must be in [0, 255], got " + std::to_string(out_zero));
  const int64_t n = ir::numel(normalized);
  const int gamma = ctx.is_none(2) ? -1 : ctx.tensor(2), beta = ctx.is_none(3) ? -1 : ctx.tensor(3);
  const int out = new_quantized_value(ctx, xs, {out_scale, out_zero, false});
  ir::Op& op = ctx.add_op(ir::kind::qlayer_norm, {x, gamma, beta}, {out});
  op.attrs = {{"rows", n == 0 ? int64_t{0} : ir::numel(xs) / n},
              {"n", n},
              {"x_scale", static_cast<double>(scale_f32(in.scale))},
              {"x_zero", in.zero_point},
              {"eps", eps},
              {"y_inv_scale", static_cast<double>(1.0f / scale_f32(out_scale))},
              {"y_zero", out_zero}};
  ctx.set_tensor_output(0, out);
}

// A double as an exact C++ literal (hexadecimal floating point).
std::string f64_literal(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", v);
  return text;
}

std::string emit_qlayer_norm(const EmitContext& e, const ir::Op& op) {
  ParamsCode p("aotc::rt::QLayerNormParams");
  p.set("rows", op.i("rows"))
      .set("n", op.i("n"))
      .set_f32("x_scale", op.f("x_scale"))
      .set("x_zero", op.i("x_zero"))
      .raw("eps", f64_literal(op.f("eps")))
      .set_f32("y_inv_scale", op.f("y_inv_scale"))
      .set("y_zero", op.i("y_zero"));
  return kernel_call(op, p.str(),
                     "aotc::rt::qlayer_norm_u8(pool, p, " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) +
                         ", " + e.in(op.inputs[2]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_quantized_layer_norm(Registry& r) {
  r.add_quantized_lowering("quantized::layer_norm", lower_qlayer_norm);
  r.add_ir_op(ir::kind::qlayer_norm, emit_qlayer_norm);
}

}  // namespace aotc::ops
