// conv3d: 3-d convolutions (aten::conv3d, and aten::_convolution / convolution with a 5-d
// weight, both read in conv2d.cpp) -> IR "conv3d" -> conv3d_f32 (vol2col + GEMM).
#include <aotc/rt/kernels.h>

#include <iterator>
#include <vector>

#include "spatial.h"

namespace aotc::ops {

void lower_conv3d(LowerContext& ctx, const ConvArgs& a) {
  ctx.require_float32({0, 1, 2});
  const ir::Shape& x = ctx.graph.value(a.x).shape;
  const ir::Shape& w = ctx.graph.value(a.w).shape;
  const bool batched = x.size() == 5;
  if (!batched && x.size() != 4)
    ctx.fail("input of shape " + ir::shape_str(x) + " does not fit a 3-d convolution weight of shape " +
             ir::shape_str(w));
  rt::ConvNdParams p;
  p.n = batched ? x[0] : 1;
  p.c_in = x[x.size() - 4];
  p.c_out = w[0];
  p.groups = a.groups;
  if (p.groups < 1 || p.c_in % p.groups || p.c_out % p.groups || p.c_in / p.groups != w[1])
    ctx.fail("input channels " + std::to_string(p.c_in) + ", weight " + ir::shape_str(w) + " and groups " +
             std::to_string(p.groups) + " do not agree");
  const std::vector<int64_t> stride = spatial_values(ctx, a.stride, 3, "stride");
  const std::vector<int64_t> dilation = spatial_values(ctx, a.dilation, 3, "dilation");
  std::vector<int64_t> padding;
  if (a.padding_mode == "valid") {
    padding = {0, 0, 0};
  } else if (a.padding_mode == "same") {
    // As in conv2d.cpp: the padding before (total / 2); the output keeps the input's size.
    for (size_t d = 0; d < 3; ++d) {
      if (stride[d] != 1) ctx.fail("padding='same' is not supported for strided convolutions");
      padding.push_back(dilation[d] * (w[2 + d] - 1) / 2);
    }
  } else {
    padding = spatial_values(ctx, a.padding, 3, "padding");
  }
  for (size_t d = 0; d < 3; ++d) {
    if (stride[d] < 1 || dilation[d] < 1 || padding[d] < 0)
      ctx.fail("stride and dilation must be positive and padding non-negative");
    p.in[d] = x[x.size() - 3 + d];
    p.kernel[d] = w[2 + d];
    p.stride[d] = stride[d];
    p.pad[d] = padding[d];
    p.dilation[d] = dilation[d];
    p.out[d] = a.padding_mode == "same"
                   ? p.in[d]
                   : (p.in[d] + 2 * p.pad[d] - p.dilation[d] * (p.kernel[d] - 1) - 1) / p.stride[d] + 1;
    if (a.padding_mode != "same" && p.in[d] + 2 * p.pad[d] < p.dilation[d] * (p.kernel[d] - 1) + 1)
      ctx.fail("input " + ir::shape_str(x) + " is smaller than the kernel " + ir::shape_str(w));
  }
  if (a.bias >= 0 && ir::numel(ctx.graph.value(a.bias).shape) != p.c_out)
    ctx.fail("bias has " + std::to_string(ir::numel(ctx.graph.value(a.bias).shape)) + " values for " +
             std::to_string(p.c_out) + " output channels");
  ir::Shape y = {p.c_out, p.out[0], p.out[1], p.out[2]};
  if (batched) y.insert(y.begin(), p.n);
  const int out = ctx.new_value(ir::DType::Float32, y);
  ir::Op& op = ctx.add_op(ir::kind::conv3d, {a.x, a.w, a.bias}, {out});
  op.attrs = {{"n", p.n},
              {"c_in", p.c_in},
              {"c_out", p.c_out},
              {"groups", p.groups},
              {"in", std::vector<int64_t>(p.in, p.in + 3)},
              {"out", std::vector<int64_t>(p.out, p.out + 3)},
              {"kernel", std::vector<int64_t>(p.kernel, p.kernel + 3)},
              {"stride", stride},
              {"padding", padding},
              {"dilation", dilation},
              {ir::attr::clamp_lo, -INFINITY},
              {ir::attr::clamp_hi, INFINITY}};
  op.scratch_bytes = rt::conv3d_scratch_bytes(p);
  op.thread_scratch_bytes = rt::conv3d_thread_scratch_bytes(p);
  ctx.set_tensor_output(0, out);
}

// The ConvNdParams of a "conv3d" or "conv_transpose" IR op.
rt::ConvNdParams conv_nd_params_of(const ir::Op& op) {
  rt::ConvNdParams p;
  p.n = op.i("n");
  p.c_in = op.i("c_in");
  p.c_out = op.i("c_out");
  p.groups = op.i("groups");
  const char* const arrays[] = {"in", "out", "kernel", "stride", "padding", "dilation"};
  int64_t* const fields[] = {p.in, p.out, p.kernel, p.stride, p.pad, p.dilation};
  for (size_t a = 0; a < std::size(arrays); ++a) {
    const std::vector<int64_t>& v = op.ints(arrays[a]);
    for (size_t d = 0; d < 3 && d < v.size(); ++d) fields[a][d] = v[d];
  }
  p.has_bias = op.inputs[2] >= 0;
  p.clamp_lo = static_cast<float>(op.f(ir::attr::clamp_lo));
  p.clamp_hi = static_cast<float>(op.f(ir::attr::clamp_hi));
  return p;
}

// The ConvNdParams of a "conv3d" or "conv_transpose" IR op, as C++ for generated code.
std::string conv_nd_params_code(const ir::Op& op) {
  ParamsCode p("aotc::rt::ConvNdParams");
  p.set("n", op.i("n"))
      .set("c_in", op.i("c_in"))
      .set("c_out", op.i("c_out"))
      .set("groups", op.i("groups"))
      .set_array("in", op.ints("in"))
      .set_array("out", op.ints("out"))
      .set_array("kernel", op.ints("kernel"))
      .set_array("stride", op.ints("stride"))
      .set_array("pad", op.ints("padding"))
      .set_array("dilation", op.ints("dilation"))
      .set_bool("has_bias", op.inputs[2] >= 0)
      .set_f32("clamp_lo", op.f(ir::attr::clamp_lo))
      .set_f32("clamp_hi", op.f(ir::attr::clamp_hi));
  return p.str();
}

namespace {

std::string emit_conv3d(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, conv_nd_params_code(op),
                     "aotc::rt::conv3d_f32(pool, p, " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) +
                         ", " + e.in(op.inputs[2]) + ", " + e.out(op.outputs[0]) + ", " + e.scratch(op) +
                         ");");
}

}  // namespace

void register_conv3d(Registry& r) { r.add_ir_op(ir::kind::conv3d, emit_conv3d); }

}  // namespace aotc::ops
