// quantized_conv2d.cpp: quantized::conv2d and quantized::conv2d_relu (torch.ao's quantized
// Conv2d and ConvReLU2d), and conv1d alike (a conv2d of kernel height 1, as torch runs it) ->
// IR "qconv2d" -> aotc::rt::qconv2d_u8: uint8 NHWC activations, int8 weights packed at
// compile time, int32 sums requantized per output channel.
#include <aotc/rt/kernels/layouts.h>
#include <aotc/rt/kernels/quantized.h>

#include "quantized.h"
#include "spatial.h"

namespace aotc::ops {
namespace {

rt::QConv2dParams qconv2d_params_of(const ir::Op& op) {
  rt::QConv2dParams p;
  read_conv2d_geometry(op, p);
  p.in_zero = static_cast<int32_t>(op.i("in_zero"));
  return p;
}

std::vector<int64_t> two_values(const LowerContext& ctx, const std::vector<int64_t>& v, const char* what) {
  if (v.size() != 2) ctx.fail(std::string(what) + " must have 2 values, got " + ir::shape_str(v));
  return v;
}

// The convolution of the quantized 4-d value x_id (argument 0's quantization) by argument 1's
// packed weights at argument 2's scale and 3's zero point: the output value (NHWC).
int qconv2d_of(LowerContext& ctx, int x_id, bool relu) {
  const ir::QuantParams in = *ctx.graph.value(x_id).quant;
  const QuantizedWeights& w = ctx.qweights_arg(1);
  const double out_scale = ctx.double_arg(2);
  const int64_t out_zero = ctx.int_arg(3);
  if (w.transpose) ctx.fail("quantized transposed convolutions are not supported");
  const ir::Shape x = ctx.graph.value(x_id).shape;
  const ir::Shape ws = ctx.graph.value(w.weight).shape;
  if (x.size() != 4) ctx.fail("input must be 4-d (N, C, H, W), got " + ir::shape_str(x));
  if (ws.size() != 4) ctx.fail("weight must be 4-d, got " + ir::shape_str(ws));
  if (!(out_scale > 0) || !std::isfinite(out_scale))
    ctx.fail("output scale must be positive and finite, got " + std::to_string(out_scale));
  if (out_zero < 0 || out_zero > 255)
    ctx.fail("output zero point must be in [0, 255], got " + std::to_string(out_zero));
  const std::vector<int64_t> stride = two_values(ctx, w.stride, "stride");
  const std::vector<int64_t> padding = two_values(ctx, w.padding, "padding");
  const std::vector<int64_t> dilation = two_values(ctx, w.dilation, "dilation");
  const int64_t groups = w.groups;
  if (groups < 1 || x[1] != ws[1] * groups || ws[0] % groups != 0)
    ctx.fail("input " + ir::shape_str(x) + " does not fit weight " + ir::shape_str(ws) + " with groups " +
             std::to_string(groups));
  rt::QConv2dParams p;
  p.n = x[0];
  p.c_in = x[1];
  p.h_in = x[2];
  p.w_in = x[3];
  p.c_out = ws[0];
  p.kernel_h = ws[2];
  p.kernel_w = ws[3];
  p.stride_h = stride[0];
  p.stride_w = stride[1];
  p.pad_h = padding[0];
  p.pad_w = padding[1];
  p.dilation_h = dilation[0];
  p.dilation_w = dilation[1];
  p.groups = groups;
  p.in_zero = static_cast<int32_t>(in.zero_point);
  for (int64_t v : {p.stride_h, p.stride_w, p.dilation_h, p.dilation_w})
    if (v < 1) ctx.fail("stride and dilation must be positive");
  if (p.pad_h < 0 || p.pad_w < 0) ctx.fail("padding must not be negative");
  p.h_out = (p.h_in + 2 * p.pad_h - p.dilation_h * (p.kernel_h - 1) - 1) / p.stride_h + 1;
  p.w_out = (p.w_in + 2 * p.pad_w - p.dilation_w * (p.kernel_w - 1) - 1) / p.stride_w + 1;
  if (p.h_out < 1 || p.w_out < 1)
    ctx.fail("input " + ir::shape_str(x) + " is smaller than the kernel " + ir::shape_str(ws));

  const int xin = quantized_in_layout(ctx, x_id, true);
  const std::string geometry = " c_in=" + std::to_string(p.c_in) + " c_out=" + std::to_string(p.c_out) +
                               " kernel=" + std::to_string(p.kernel_h) + "x" + std::to_string(p.kernel_w) +
                               " groups=" + std::to_string(p.groups);
  ir::Graph& g = ctx.graph;
  const int weight = w.weight;
  const int packed = g.add_derived_constant(
      "qconv2d_pack_weights" + geometry, {weight}, ir::DType::Int8, {rt::qconv2d_packed_weight_bytes(p)},
      [&] {
        std::vector<uint8_t> out(static_cast<size_t>(rt::qconv2d_packed_weight_bytes(p)));
        rt::qconv2d_pack_weights(p, reinterpret_cast<const int8_t*>(g.constant_of(weight).bytes.data()),
                                 reinterpret_cast<int8_t*>(out.data()));
        return out;
      });
  const RequantInputs rq = add_requant_constants(ctx, w, p.c_out, ws[1] * p.kernel_h * p.kernel_w, in,
                                                 out_scale, runs_on_onednn(ctx, w));
  const int out = new_quantized_value(ctx, {p.n, p.c_out, p.h_out, p.w_out}, {out_scale, out_zero, true});
  ir::Op& op = ctx.add_op(
      ir::kind::qconv2d,
      {xin, packed, rq.acc_offset, rq.bias_over_scale, rq.multiplier, rq.w_zero, rq.acc_scale}, {out});
  op.attrs = {{"n", p.n},
              {"c_in", p.c_in},
              {"h_in", p.h_in},
              {"w_in", p.w_in},
              {"c_out", p.c_out},
              {"h_out", p.h_out},
              {"w_out", p.w_out},
              {"kernel", std::vector<int64_t>{p.kernel_h, p.kernel_w}},
              {"stride", stride},
              {"padding", padding},
              {"dilation", dilation},
              {"groups", groups},
              {"in_zero", in.zero_point},
              {"out_zero", out_zero},
              {"relu", relu}};
  op.thread_scratch_bytes = rt::qconv2d_thread_scratch_bytes(p);
  return out;
}

void lower_qconv2d(LowerContext& ctx, bool relu) {
  ctx.quant(0);  // a quantized tensor, or a clear error
  ctx.set_tensor_output(0, qconv2d_of(ctx, ctx.tensor(0), relu));
}

// quantized::conv1d as torch runs it: its packed weights are a conv2d's with a kernel of height
// 1, applied to the input seen as [N, C, 1, L]; the output seen as [N, C_out, L_out] again.
void lower_qconv1d(LowerContext& ctx, bool relu) {
  const ir::QuantParams in = ctx.quant(0);
  const ir::Shape x = ctx.value(0).shape;
  if (x.size() != 3) ctx.fail("input must be 3-d (N, C, L), got " + ir::shape_str(x));
  const int dense = quantized_in_layout(ctx, ctx.tensor(0), false);
  const int x4 = ctx.graph.add_alias(dense, {x[0], x[1], 1, x[2]});
  ctx.graph.value(x4).quant = ir::QuantParams{in.scale, in.zero_point, false};
  const int y4 = quantized_in_layout(ctx, qconv2d_of(ctx, x4, relu), false);
  const ir::Shape ys = ctx.graph.value(y4).shape;
  if (ys[2] != 1)
    ctx.fail("the packed weights are not a 1-d convolution's: the output is " + ir::shape_str(ys) +
             ", not of height 1");
  const int y = ctx.graph.add_alias(y4, {ys[0], ys[1], ys[3]});
  ctx.graph.value(y).quant = ctx.graph.value(y4).quant;
  ctx.set_tensor_output(0, y);
}

std::string emit_qconv2d(const EmitContext& e, const ir::Op& op) {
  const rt::QConv2dParams c = qconv2d_params_of(op);
  ParamsCode p("aotc::rt::QConv2dParams");
  set_conv2d_geometry(p, c).set("in_zero", c.in_zero);
  return kernel_call(op, p.str() + "\n    " + requant_code(e, op, 2),
                     "aotc::rt::qconv2d_u8(pool, p, " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) +
                         ", rq, " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_quantized_conv2d(Registry& r) {
  // quantized::conv2d(Tensor qx, Conv2dPackedParamsBase packed_weight, float output_scale,
  // int output_zero_point), and conv2d_relu alike.
  r.add_quantized_lowering("quantized::conv2d", [](LowerContext& ctx) { lower_qconv2d(ctx, false); });
  r.add_quantized_lowering("quantized::conv2d_relu", [](LowerContext& ctx) { lower_qconv2d(ctx, true); });
  r.add_quantized_lowering("quantized::conv1d", [](LowerContext& ctx) { lower_qconv1d(ctx, false); });
  r.add_quantized_lowering("quantized::conv1d_relu", [](LowerContext& ctx) { lower_qconv1d(ctx, true); });
  r.add_ir_op(ir::kind::qconv2d, emit_qconv2d);
}

}  // namespace aotc::ops
