// conv2d: aten::conv2d / conv1d / _convolution / convolution -> IR "conv2d" -> conv2d_f32.
// 1-d and unbatched convolutions are views of the 2-d batched case (no copies). The
// general forms (_convolution, convolution) also lead to conv3d.cpp and conv_transpose.cpp.
#include <aotc/rt/kernels.h>

#include "op_helpers.h"
#include "spatial.h"

namespace aotc::ops {

void lower_conv2d(LowerContext& ctx, const ConvArgs& a) {
  ctx.require_float32({0, 1, 2});
  const ir::Value& xv = ctx.graph.value(a.x);
  const ir::Value& wv = ctx.graph.value(a.w);
  const size_t spatial = wv.shape.size() - 2;
  if (wv.shape.size() != 3 && wv.shape.size() != 4)
    ctx.fail("only 1-d and 2-d convolutions are supported, weight has shape " + ir::shape_str(wv.shape));
  const bool batched = xv.shape.size() == spatial + 2;
  if (!batched && xv.shape.size() != spatial + 1)
    ctx.fail("input of shape " + ir::shape_str(xv.shape) + " does not fit a weight of shape " +
             ir::shape_str(wv.shape));
  // View everything as 4-d NCHW with H = 1 for 1-d convolutions.
  auto as4d = [&](const ir::Shape& s, bool has_batch) {
    ir::Shape r = s;
    if (!has_batch) r.insert(r.begin(), 1);
    if (spatial == 1) r.insert(r.end() - 1, 1);
    return r;
  };
  const ir::Shape x4 = as4d(xv.shape, batched);
  const ir::Shape w4 = spatial == 1 ? ir::Shape{wv.shape[0], wv.shape[1], 1, wv.shape[2]} : wv.shape;
  auto expand = [&](std::vector<int64_t> v, int64_t fill) {
    if (v.size() == 1) v.assign(spatial, v[0]);
    if (v.size() != spatial)
      ctx.fail("convolution parameters must have " + std::to_string(spatial) + " values");
    if (spatial == 1) v.insert(v.begin(), fill);
    return v;
  };
  std::vector<int64_t> stride = expand(a.stride, 1), dilation = expand(a.dilation, 1);
  std::vector<int64_t> padding;
  if (a.padding_mode == "valid") {
    padding = {0, 0};
  } else if (a.padding_mode == "same") {
    // torch pads total = dilation * (kernel - 1) with total / 2 before and the rest after.
    // The kernels only need the padding before: the output keeps the input's size, and
    // taps past the end read zeros like any padding.
    for (size_t d = 0; d < 2; ++d) {
      if (stride[d] != 1) ctx.fail("padding='same' is not supported for strided convolutions");
      padding.push_back(dilation[d] * (w4[2 + d] - 1) / 2);
    }
  } else {
    padding = expand(a.padding, 0);
  }
  const int64_t groups = a.groups;
  if (groups < 1 || x4[1] % groups || w4[0] % groups || x4[1] / groups != w4[1])
    ctx.fail("input channels " + std::to_string(x4[1]) + ", weight " + ir::shape_str(wv.shape) +
             " and groups " + std::to_string(groups) + " do not agree");
  rt::Conv2dParams p;
  p.n = x4[0];
  p.c_in = x4[1];
  p.h_in = x4[2];
  p.w_in = x4[3];
  p.c_out = w4[0];
  p.kernel_h = w4[2];
  p.kernel_w = w4[3];
  p.stride_h = stride[0];
  p.stride_w = stride[1];
  p.pad_h = padding[0];
  p.pad_w = padding[1];
  p.dilation_h = dilation[0];
  p.dilation_w = dilation[1];
  p.groups = groups;
  p.h_out = (p.h_in + 2 * p.pad_h - p.dilation_h * (p.kernel_h - 1) - 1) / p.stride_h + 1;
  p.w_out = (p.w_in + 2 * p.pad_w - p.dilation_w * (p.kernel_w - 1) - 1) / p.stride_w + 1;
  if (a.padding_mode == "same") {  // also when the padding is asymmetric (even kernels)
    p.h_out = p.h_in;
    p.w_out = p.w_in;
  }
  if (p.h_out <= 0 || p.w_out <= 0)
    ctx.fail("input " + ir::shape_str(xv.shape) + " is smaller than the kernel " + ir::shape_str(wv.shape));
  if (a.bias >= 0 && ir::numel(ctx.graph.value(a.bias).shape) != p.c_out)
    ctx.fail("bias has " + std::to_string(ir::numel(ctx.graph.value(a.bias).shape)) + " values for " +
             std::to_string(p.c_out) + " output channels");

  const int x_in = ctx.graph.add_alias(a.x, x4);
  const int w_in = spatial == 1 ? ctx.graph.add_alias(a.w, w4) : a.w;
  const int y4 = ctx.new_value(ir::DType::Float32, {p.n, p.c_out, p.h_out, p.w_out});
  ir::Op& op = ctx.add_op(ir::kind::conv2d, {x_in, w_in, a.bias}, {y4});
  op.attrs = {{"n", p.n},
              {"c_in", p.c_in},
              {"h_in", p.h_in},
              {"w_in", p.w_in},
              {"c_out", p.c_out},
              {"h_out", p.h_out},
              {"w_out", p.w_out},
              {"kernel", std::vector<int64_t>{p.kernel_h, p.kernel_w}},
              {"stride", std::vector<int64_t>{p.stride_h, p.stride_w}},
              {"padding", std::vector<int64_t>{p.pad_h, p.pad_w}},
              {"dilation", std::vector<int64_t>{p.dilation_h, p.dilation_w}},
              {"groups", groups},
              {ir::attr::clamp_lo, -INFINITY},
              {ir::attr::clamp_hi, INFINITY}};
  op.scratch_bytes = rt::conv2d_scratch_bytes(p);
  op.scratch_optional = true;  // conv2d_f32 packs per thread without it
  op.thread_scratch_bytes = rt::conv2d_thread_scratch_bytes(p);
  ir::Shape y_shape = {p.n, p.c_out};
  if (spatial == 2) y_shape.push_back(p.h_out);
  y_shape.push_back(p.w_out);
  if (!batched) y_shape.erase(y_shape.begin());
  ctx.set_tensor_output(0, ctx.graph.add_alias(y4, y_shape));
}

namespace {

std::string padding_mode(const LowerContext& ctx, size_t i) {
  return ctx.arg(i).kind == Operand::Kind::String ? ctx.arg(i).s : "";
}

std::vector<int64_t> padding_values(const LowerContext& ctx, size_t i) {
  return ctx.arg(i).kind == Operand::Kind::String ? std::vector<int64_t>{} : ctx.ints_arg(i);
}

// aten::conv1d / conv2d / conv3d(input, weight, bias, stride, padding, dilation, groups),
// padding a list or (the .padding overloads) "same" / "valid".
void lower_convnd(LowerContext& ctx) {
  ConvArgs a;
  a.x = ctx.tensor(0);
  a.w = ctx.tensor(1);
  a.bias = ctx.is_none(2) ? -1 : ctx.tensor(2);
  a.stride = ctx.ints_arg(3);
  a.padding = padding_values(ctx, 4);
  a.padding_mode = padding_mode(ctx, 4);
  a.dilation = ctx.ints_arg(5);
  a.groups = ctx.int_arg(6);
  lower_any_conv(ctx, a);
}

// aten::convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
// groups) and aten::_convolution (same first nine, then backend flags): any rank, plain or
// transposed.
void lower_convolution(LowerContext& ctx) {
  ConvArgs a;
  a.x = ctx.tensor(0);
  a.w = ctx.tensor(1);
  a.bias = ctx.is_none(2) ? -1 : ctx.tensor(2);
  a.stride = ctx.ints_arg(3);
  a.padding = ctx.ints_arg(4);
  a.dilation = ctx.ints_arg(5);
  a.transposed = ctx.bool_arg(6);
  a.output_padding = ctx.ints_arg(7);
  a.groups = ctx.int_arg(8);
  lower_any_conv(ctx, a);
}

std::string emit_conv2d(const EmitContext& e, const ir::Op& op) {
  // select_winograd: the weight input is the transformed (t + 2)^2 x c_out x c_in, for the
  // output tile t in the attribute.
  const int64_t winograd_tile = op.has(ir::attr::winograd) ? op.i(ir::attr::winograd) : 0;
  // The optional 4th input: the residual (passes/fuse_conv_residual.cpp).
  const std::string residual = op.inputs.size() > 3 ? e.in(op.inputs[3]) : "nullptr";
  // select_pointwise_rows: the weight input is the 1x1 weight packed transposed.
  if (op.has(ir::attr::pointwise_rows))
    return kernel_call(op, conv2d_params_code(op).str(),
                       "aotc::rt::conv2d_pointwise_rows_f32(pool, p, " + e.in(op.inputs[0]) + ", " +
                           e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " + residual + ", " +
                           e.out(op.outputs[0]) + ");");
  return kernel_call(
      op, conv2d_params_code(op).str(),
      (winograd_tile != 0 ? "aotc::rt::conv2d_winograd_f32(pool, p, " + std::to_string(winograd_tile) + ", "
                          : std::string("aotc::rt::conv2d_f32(pool, p, ")) +
          e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " + residual +
          ", " + e.out(op.outputs[0]) + ", " + e.scratch(op) + ");");
}

}  // namespace

rt::Conv2dParams conv2d_params_of(const ir::Op& op) {
  rt::Conv2dParams p;
  read_conv2d_geometry(op, p);
  p.has_bias = op.inputs[2] >= 0;
  p.clamp_lo = static_cast<float>(op.f(ir::attr::clamp_lo));
  p.clamp_hi = static_cast<float>(op.f(ir::attr::clamp_hi));
  return p;
}

ParamsCode conv2d_params_code(const ir::Op& op) { return conv2d_params_code(conv2d_params_of(op)); }

ParamsCode conv2d_params_code(const rt::Conv2dParams& c, const std::string& var) {
  ParamsCode p("aotc::rt::Conv2dParams", var);
  set_conv2d_geometry(p, c)
      .set_bool("has_bias", c.has_bias)
      .set_f32("clamp_lo", c.clamp_lo)
      .set_f32("clamp_hi", c.clamp_hi);
  return p;
}

void register_conv2d(Registry& r) {
  r.add_lowering("aten::conv1d", lower_convnd);
  r.add_lowering("aten::conv2d", lower_convnd);
  r.add_lowering("aten::conv3d", lower_convnd);  // same schema; lowered by conv3d.cpp
  // What tracing records for padding="same" / "valid": the conv{1,2,3}d.padding schema.
  r.add_lowering("aten::_convolution_mode", lower_convnd);
  r.add_lowering("aten::convolution", lower_convolution);
  r.add_lowering("aten::_convolution", lower_convolution);
  r.add_ir_op(ir::kind::conv2d, emit_conv2d);
}

}  // namespace aotc::ops
