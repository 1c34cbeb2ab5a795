// conv_transpose: aten::conv_transpose1d / conv_transpose2d / conv_transpose3d, and
// aten::_convolution / convolution with transposed=True -> IR "conv_transpose" ->
// conv_transpose_f32 (GEMM + col2im). 1-d and 2-d are the 3-d case with leading 1s.
#include <aotc/rt/kernels.h>

#include "spatial.h"

namespace aotc::ops {

void lower_conv_transpose(LowerContext& ctx, const ConvArgs& a) {
  ctx.require_float32({0, 1, 2});
  const ir::Shape& x = ctx.graph.value(a.x).shape;
  const ir::Shape& w = ctx.graph.value(a.w).shape;
  if (w.size() < 3 || w.size() > 5)
    ctx.fail("the weight of a transposed convolution must be 3-d, 4-d or 5-d, got " + ir::shape_str(w));
  if (!a.padding_mode.empty()) ctx.fail("string padding is not defined for transposed convolutions");
  const size_t spatial = w.size() - 2;
  const bool batched = x.size() == spatial + 2;
  if (!batched && x.size() != spatial + 1)
    ctx.fail("input of shape " + ir::shape_str(x) + " does not fit a weight of shape " + ir::shape_str(w));
  rt::ConvNdParams p;
  p.n = batched ? x[0] : 1;
  p.c_in = x[x.size() - spatial - 1];
  p.groups = a.groups;
  // The weight is c_in x (c_out / groups) x kernel.
  if (p.groups < 1 || w[0] != p.c_in || p.c_in % p.groups)
    ctx.fail("input channels " + std::to_string(p.c_in) + ", weight " + ir::shape_str(w) + " and groups " +
             std::to_string(p.groups) + " do not agree");
  p.c_out = w[1] * p.groups;
  const std::vector<int64_t> stride = spatial_values(ctx, a.stride, spatial, "stride");
  const std::vector<int64_t> padding = spatial_values(ctx, a.padding, spatial, "padding");
  const std::vector<int64_t> dilation = spatial_values(ctx, a.dilation, spatial, "dilation");
  const std::vector<int64_t> output_padding =
      a.output_padding.empty() ? std::vector<int64_t>(spatial, 0)
                               : spatial_values(ctx, a.output_padding, spatial, "output_padding");
  std::vector<int64_t> in, out, kernel;
  for (size_t d = 0; d < spatial; ++d) {
    if (stride[d] < 1 || dilation[d] < 1 || padding[d] < 0 || output_padding[d] < 0)
      ctx.fail("stride and dilation must be positive, padding and output_padding non-negative");
    if (output_padding[d] >= stride[d] && output_padding[d] >= dilation[d])
      ctx.fail("output_padding must be smaller than either stride or dilation, got output_padding " +
               ir::shape_str(output_padding) + ", stride " + ir::shape_str(stride) + " and dilation " +
               ir::shape_str(dilation));
    in.push_back(x[x.size() - spatial + d]);
    kernel.push_back(w[2 + d]);
    out.push_back((in[d] - 1) * stride[d] - 2 * padding[d] + dilation[d] * (kernel[d] - 1) +
                  output_padding[d] + 1);
    if (out[d] <= 0)
      ctx.fail("the output would be empty: input " + ir::shape_str(x) + ", weight " + ir::shape_str(w) +
               ", padding " + ir::shape_str(padding));
  }
  if (a.bias >= 0 && ir::numel(ctx.graph.value(a.bias).shape) != p.c_out)
    ctx.fail("bias has " + std::to_string(ir::numel(ctx.graph.value(a.bias).shape)) + " values for " +
             std::to_string(p.c_out) + " output channels");
  const std::vector<int64_t> in3 = as_3d(in, 1), out3 = as_3d(out, 1), kernel3 = as_3d(kernel, 1);
  for (size_t d = 0; d < 3; ++d) {
    p.in[d] = in3[d];
    p.out[d] = out3[d];
    p.kernel[d] = kernel3[d];
  }
  ir::Shape y = {p.c_out};
  y.insert(y.end(), out.begin(), out.end());
  if (batched) y.insert(y.begin(), p.n);
  const int result = ctx.new_value(ir::DType::Float32, y);
  ir::Op& op = ctx.add_op(ir::kind::conv_transpose, {a.x, a.w, a.bias}, {result});
  op.attrs = {{"n", p.n},
              {"c_in", p.c_in},
              {"c_out", p.c_out},
              {"groups", p.groups},
              {"in", in3},
              {"out", out3},
              {"kernel", kernel3},
              {"stride", as_3d(stride, 1)},
              {"padding", as_3d(padding, 0)},
              {"dilation", as_3d(dilation, 1)},
              {ir::attr::clamp_lo, -INFINITY},
              {ir::attr::clamp_hi, INFINITY}};
  op.scratch_bytes = rt::conv_transpose_scratch_bytes(p);
  op.thread_scratch_bytes = rt::conv_transpose_thread_scratch_bytes(p);
  ctx.set_tensor_output(0, result);
}

namespace {

// aten::conv_transpose{1,2,3}d(input, weight, bias, stride, padding, output_padding, groups,
// dilation)
void lower_conv_transpose_nd(LowerContext& ctx) {
  ConvArgs a;
  a.x = ctx.tensor(0);
  a.w = ctx.tensor(1);
  a.bias = ctx.is_none(2) ? -1 : ctx.tensor(2);
  a.stride = ctx.ints_arg(3);
  a.padding = ctx.ints_arg(4);
  a.output_padding = ctx.ints_arg(5);
  a.groups = ctx.int_arg(6);
  a.dilation = ctx.ints_arg(7);
  a.transposed = true;
  lower_conv_transpose(ctx, a);
}

std::string emit_conv_transpose(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, conv_nd_params_code(op),
                     "aotc::rt::conv_transpose_f32(pool, p, " + e.in(op.inputs[0]) + ", " +
                         e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " + e.out(op.outputs[0]) + ", " +
                         e.scratch(op) + ");");
}

}  // namespace

void register_conv_transpose(Registry& r) {
  r.add_lowering("aten::conv_transpose1d", lower_conv_transpose_nd);
  r.add_lowering("aten::conv_transpose2d", lower_conv_transpose_nd);
  r.add_lowering("aten::conv_transpose3d", lower_conv_transpose_nd);
  r.add_ir_op(ir::kind::conv_transpose, emit_conv_transpose);
}

}  // namespace aotc::ops
