// quantized_linear.cpp: quantized::linear and quantized::linear_relu (torch.ao's quantized
// Linear and LinearReLU) -> IR "qlinear" -> aotc::rt::qlinear_u8: uint8 rows times int8
// weights packed at compile time, int32 sums requantized per output feature.
#include <aotc/rt/kernels/layouts.h>
#include <aotc/rt/kernels/quantized.h>

#include "quantized.h"

namespace aotc::ops {
namespace {

void lower_qlinear(LowerContext& ctx, bool relu) {
  const ir::QuantParams in = ctx.quant(0);
  const QuantizedWeights& w = ctx.qweights_arg(1);
  const double out_scale = ctx.double_arg(2);
  const int64_t out_zero = ctx.int_arg(3);
  const int x = quantized_in_layout(ctx, ctx.tensor(0), false);
  const ir::Shape xs = ctx.graph.value(x).shape;
  const ir::Shape ws = ctx.graph.value(w.weight).shape;
  if (xs.empty()) ctx.fail("input must have at least 1 dimension");
  if (ws.size() != 2) ctx.fail("weight must be 2-d, got " + ir::shape_str(ws));
  if (xs.back() != ws[1])
    ctx.fail("input " + ir::shape_str(xs) + " does not fit weight " + ir::shape_str(ws) + ": expected " +
             std::to_string(ws[1]) + " features, got " + std::to_string(xs.back()));
  if (!(out_scale > 0) || !std::isfinite(out_scale))
    ctx.fail("output scale must be positive and finite, got " + std::to_string(out_scale));
  if (out_zero < 0 || out_zero > 255)
    ctx.fail("output zero point must be in [0, 255], got " + std::to_string(out_zero));
  rt::QLinearParams p;
  p.k = ws[1];
  p.n = ws[0];
  if (p.k == 0) ctx.fail("a quantized linear layer needs at least 1 input feature, got 0");
  p.m = ir::numel(xs) / p.k;
  const int packed = add_qlinear_packed_weights(ctx, w.weight, p.n, p.k);
  // torch's engine "x86" runs quantized::linear on fbgemm.
  const RequantInputs rq = add_requant_constants(ctx, w, p.n, p.k, in, out_scale, false);
  ir::Shape ys = xs;
  ys.back() = p.n;
  const int out = new_quantized_value(ctx, ys, {out_scale, out_zero, false});
  ir::Op& op = ctx.add_op(
      ir::kind::qlinear,
      {x, packed, rq.acc_offset, rq.bias_over_scale, rq.multiplier, rq.w_zero, rq.acc_scale}, {out});
  op.attrs = {{"m", p.m}, {"n", p.n}, {"k", p.k}, {"out_zero", out_zero}, {"relu", relu}};
  op.thread_scratch_bytes = rt::qlinear_thread_scratch_bytes(p);
  ctx.set_tensor_output(0, out);
}

std::string emit_qlinear(const EmitContext& e, const ir::Op& op) {
  ParamsCode p("aotc::rt::QLinearParams");
  p.set("m", op.i("m")).set("n", op.i("n")).set("k", op.i("k"));
  return kernel_call(op, p.str() + "\n    " + requant_code(e, op, 2),
                     "aotc::rt::qlinear_u8(pool, p, " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) +
                         ", rq, " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_quantized_linear(Registry& r) {
  // quantized::linear(Tensor X, LinearPackedParamsBase W_prepack, float Y_scale_i,
  // int Y_zero_point_i), and linear_relu alike.
  r.add_quantized_lowering("quantized::linear", [](LowerContext& ctx) { lower_qlinear(ctx, false); });
  r.add_quantized_lowering("quantized::linear_relu", [](LowerContext& ctx) { lower_qlinear(ctx, true); });
  r.add_ir_op(ir::kind::qlinear, emit_qlinear);
}

}  // namespace aotc::ops
