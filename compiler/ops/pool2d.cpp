// max_pool2d / avg_pool2d -> IR ops of the same names -> max_pool2d_f32 / avg_pool2d_f32.
// Output sizes follow torch's pooling_output_shape, ceil_mode included.
#include <aotc/rt/kernels.h>

#include "op_helpers.h"

namespace aotc::ops {
namespace {

int64_t pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                    bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = span / stride + 1;  // span >= 0 is checked by the caller
  // The last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

void lower_pool(LowerContext& ctx, bool is_max) {
  ctx.require_float32({0});
  const ir::Shape x = ctx.value(0).shape;
  if (x.size() != 3 && x.size() != 4) ctx.fail("input must be 3-d or 4-d, got " + ir::shape_str(x));
  const std::vector<int64_t> kernel = ctx.ints_arg(1, 2);
  std::vector<int64_t> stride = ctx.ints_arg(2);
  if (stride.empty()) stride = kernel;  // torch: stride defaults to kernel_size
  if (stride.size() == 1) stride.assign(2, stride[0]);
  const std::vector<int64_t> pad = ctx.ints_arg(3, 2);
  const std::vector<int64_t> dilation = is_max ? ctx.ints_arg(4, 2) : std::vector<int64_t>{1, 1};
  const bool ceil_mode = ctx.bool_arg(is_max ? 5 : 4);
  const bool count_include_pad = is_max ? true : ctx.bool_arg(5);
  const int64_t divisor = is_max || ctx.is_none(6) ? 0 : ctx.int_arg(6);
  for (size_t d = 0; d < 2; ++d) {
    if (kernel[d] <= 0 || stride.size() != 2 || stride[d] <= 0 || dilation[d] <= 0)
      ctx.fail("kernel, stride and dilation must be positive");
    if (pad[d] < 0 || pad[d] * 2 > kernel[d])
      ctx.fail("padding must be at most half of the kernel size, got padding " + std::to_string(pad[d]) +
               " for kernel " + std::to_string(kernel[d]));
  }
  const bool batched = x.size() == 4;
  const int64_t n = batched ? x[0] : 1, c = x[x.size() - 3], h = x[x.size() - 2], w = x[x.size() - 1];
  if (h + 2 * pad[0] < dilation[0] * (kernel[0] - 1) + 1 ||
      w + 2 * pad[1] < dilation[1] * (kernel[1] - 1) + 1)
    ctx.fail("input " + ir::shape_str(x) + " is smaller than the pooling window");
  const int64_t h_out = pooled_size(h, kernel[0], pad[0], stride[0], dilation[0], ceil_mode);
  const int64_t w_out = pooled_size(w, kernel[1], pad[1], stride[1], dilation[1], ceil_mode);
  ir::Shape y = {c, h_out, w_out};
  if (batched) y.insert(y.begin(), n);
  const int out = ctx.new_value(ir::DType::Float32, y);
  ir::Op& op = ctx.add_op(is_max ? "max_pool2d" : "avg_pool2d", {ctx.tensor(0)}, {out});
  op.attrs = {{"n", n},
              {"c", c},
              {"h_in", h},
              {"w_in", w},
              {"h_out", h_out},
              {"w_out", w_out},
              {"kernel", kernel},
              {"stride", stride},
              {"padding", pad},
              {"dilation", dilation},
              {"count_include_pad", count_include_pad},
              {"divisor_override", divisor}};
  ctx.set_tensor_output(0, out);
}

LowerFn pool_lowering(bool is_max) {
  return [is_max](LowerContext& ctx) { lower_pool(ctx, is_max); };
}

std::string emit_pool(const EmitContext& e, const ir::Op& op) {
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
  return kernel_call(
      op, p.str(),
      "aotc::rt::" + op.kind + "_f32(pool, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_pool2d(Registry& r) {
  // aten::max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode)
  r.add_lowering("aten::max_pool2d", pool_lowering(true));
  // aten::avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
  r.add_lowering("aten::avg_pool2d", pool_lowering(false));
  r.add_ir_op("max_pool2d", emit_pool);
  r.add_ir_op("avg_pool2d", emit_pool);
}

}  // namespace aotc::ops
