// max_pool1d/2d, avg_pool1d/2d -> IR "max_pool2d" / "avg_pool2d" -> max_pool2d_f32 /
// avg_pool2d_f32 (1-d pooling is 2-d pooling with H = 1). Output sizes follow torch's
// pooling_output_shape, ceil_mode included. 3-d pooling and pooling that returns indices
// are in pool3d.cpp, which reads its arguments with pool_geometry() from here.
#include <aotc/rt/kernels.h>

#include "spatial.h"

namespace aotc::ops {

PoolGeometry pool_geometry(const LowerContext& ctx, size_t spatial, bool is_max) {
  if (!ctx.value(0).quant) ctx.require_float32({0});  // quantized: quantized_pool2d.cpp
  const ir::Shape x = ctx.value(0).shape;
  if (x.size() != spatial + 1 && x.size() != spatial + 2)
    ctx.fail("input must be " + std::to_string(spatial + 1) + "-d or " + std::to_string(spatial + 2) +
             "-d, got " + ir::shape_str(x));
  const std::vector<int64_t> kernel = spatial_values(ctx, ctx.ints_arg(1), spatial, "kernel_size");
  std::vector<int64_t> stride = ctx.ints_arg(2);
  if (stride.empty()) stride = kernel;  // torch: stride defaults to kernel_size
  stride = spatial_values(ctx, stride, spatial, "stride");
  const std::vector<int64_t> pad = spatial_values(ctx, ctx.ints_arg(3), spatial, "padding");
  const std::vector<int64_t> dilation =
      is_max ? spatial_values(ctx, ctx.ints_arg(4), spatial, "dilation") : std::vector<int64_t>(spatial, 1);
  const bool ceil_mode = ctx.bool_arg(is_max ? 5 : 4);
  PoolGeometry g;
  g.count_include_pad = is_max ? true : ctx.bool_arg(5);
  // avg_pool1d has no divisor_override.
  g.divisor_override = is_max || ctx.is_none(6) ? 0 : ctx.int_arg(6);
  if (!is_max && !ctx.is_none(6) && g.divisor_override == 0) ctx.fail("divisor_override must not be zero");
  const bool batched = x.size() == spatial + 2;
  g.n = batched ? x[0] : 1;
  g.c = x[x.size() - spatial - 1];
  std::vector<int64_t> in(x.end() - static_cast<std::ptrdiff_t>(spatial), x.end()), out;
  for (size_t d = 0; d < spatial; ++d) {
    if (kernel[d] <= 0 || stride[d] <= 0 || dilation[d] <= 0)
      ctx.fail("kernel, stride and dilation must be positive");
    if (pad[d] < 0 || pad[d] * 2 > kernel[d])
      ctx.fail("padding must be at most half of the kernel size, got padding " + std::to_string(pad[d]) +
               " for kernel " + std::to_string(kernel[d]));
    if (in[d] + 2 * pad[d] < dilation[d] * (kernel[d] - 1) + 1)
      ctx.fail("input " + ir::shape_str(x) + " is smaller than the pooling window");
    out.push_back(pooled_size(in[d], kernel[d], pad[d], stride[d], dilation[d], ceil_mode));
  }
  g.out_shape = x;
  for (size_t d = 0; d < spatial; ++d) g.out_shape[x.size() - spatial + d] = out[d];
  g.in = as_3d(in, 1);
  g.out = as_3d(out, 1);
  g.kernel = as_3d(kernel, 1);
  g.stride = as_3d(stride, 1);
  g.pad = as_3d(pad, 0);
  g.dilation = as_3d(dilation, 1);
  return g;
}

namespace {

void lower_pool(LowerContext& ctx, size_t spatial, bool is_max) {
  const PoolGeometry g = pool_geometry(ctx, spatial, is_max);
  const int out = ctx.new_value(ir::DType::Float32, g.out_shape);
  ir::Op& op = ctx.add_op(is_max ? ir::kind::max_pool2d : ir::kind::avg_pool2d, {ctx.tensor(0)}, {out});
  // The 2-d kernel sees the last two dims (H = 1 for 1-d pooling).
  auto hw = [](const std::vector<int64_t>& v) { return std::vector<int64_t>{v[1], v[2]}; };
  op.attrs = {{"n", g.n},
              {"c", g.c},
              {"h_in", g.in[1]},
              {"w_in", g.in[2]},
              {"h_out", g.out[1]},
              {"w_out", g.out[2]},
              {"kernel", hw(g.kernel)},
              {"stride", hw(g.stride)},
              {"padding", hw(g.pad)},
              {"dilation", hw(g.dilation)},
              {"count_include_pad", g.count_include_pad},
              {"divisor_override", g.divisor_override}};
  ctx.set_tensor_output(0, out);
}

LowerFn pool_lowering(size_t spatial, bool is_max) {
  return [spatial, is_max](LowerContext& ctx) { lower_pool(ctx, spatial, is_max); };
}

std::string emit_pool(const EmitContext& e, const ir::Op& op) {
  return kernel_call(
      op, pool2d_params_code(op).str(),
      "aotc::rt::" + op.kind + "_f32(pool, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

ParamsCode pool2d_params_code(const ir::Op& op) {
  ParamsCode p("aotc::rt::Pool2dParams");
  p.set("n", op.i("n"))
      .set("c", op.i("c"))
      .set("h_in", op.i("h_in"))
      .set("w_in", op.i("w_in"))
      .set("h_out", op.i("h_out"))
      .set("w_out", op.i("w_out"))
      .set("kernel_h", op.ints("kernel")[0])
      .set("kernel_w", op.ints("kernel")[1])
      .set("stride_h", op.ints("stride")[0])
      .set("stride_w", op.ints("stride")[1])
      .set("pad_h", op.ints("padding")[0])
      .set("pad_w", op.ints("padding")[1])
      .set("dilation_h", op.ints("dilation")[0])
      .set("dilation_w", op.ints("dilation")[1])
      .set_bool("count_include_pad", op.b("count_include_pad"))
      .set("divisor_override", op.i("divisor_override"));
  return p;
}

void register_pool2d(Registry& r) {
  // aten::max_pool{1,2}d(self, kernel_size, stride, padding, dilation, ceil_mode)
  r.add_lowering("aten::max_pool1d", pool_lowering(1, true));
  r.add_lowering("aten::max_pool2d", pool_lowering(2, true));
  // aten::avg_pool1d(self, kernel_size, stride, padding, ceil_mode, count_include_pad) and
  // aten::avg_pool2d(..., count_include_pad, divisor_override)
  r.add_lowering("aten::avg_pool1d", pool_lowering(1, false));
  r.add_lowering("aten::avg_pool2d", pool_lowering(2, false));
  r.add_ir_op(ir::kind::max_pool2d, emit_pool);
  r.add_ir_op(ir::kind::avg_pool2d, emit_pool);
}

}  // namespace aotc::ops
