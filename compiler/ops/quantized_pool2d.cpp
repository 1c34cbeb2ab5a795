// quantized_pool2d.cpp: aten::max_pool2d and aten::adaptive_avg_pool2d of a quantized
// tensor -> IR "qmax_pool2d" / "qadaptive_avg_pool2d" -> aotc::rt::max_pool2d_u8 /
// adaptive_avg_pool2d_u8, in the tensor's own layout (torch's average rounds by layout).
// The output keeps the input's scale and zero point, as torch's does.
#include <aotc/rt/kernels.h>

#include "quantized.h"
#include "spatial.h"

namespace aotc::ops {
namespace {

void lower_qmax_pool2d(LowerContext& ctx) {
  const ir::QuantParams q = ctx.quant(0);
  const PoolGeometry g = pool_geometry(ctx, 2, true);
  const int out = new_quantized_value(ctx, g.out_shape, q);
  ir::Op& op = ctx.add_op(ir::kind::qmax_pool2d, {ctx.tensor(0)}, {out});
  op.attrs = {{"n", g.n},
              {"c", g.c},
              {"h_in", g.in[1]},
              {"w_in", g.in[2]},
              {"h_out", g.out[1]},
              {"w_out", g.out[2]},
              {"kernel", std::vector<int64_t>{g.kernel[1], g.kernel[2]}},
              {"stride", std::vector<int64_t>{g.stride[1], g.stride[2]}},
              {"padding", std::vector<int64_t>{g.pad[1], g.pad[2]}},
              {"dilation", std::vector<int64_t>{g.dilation[1], g.dilation[2]}},
              {"count_include_pad", true},
              {"divisor_override", int64_t{0}},
              {"channels_last", q.channels_last}};
  ctx.set_tensor_output(0, out);
}

void lower_qadaptive_avg_pool2d(LowerContext& ctx) {
  const ir::QuantParams q = ctx.quant(0);
  const ir::Shape x = ctx.value(0).shape;
  if (x.size() != 3 && x.size() != 4) ctx.fail("input must be 3-d or 4-d, got " + ir::shape_str(x));
  const std::vector<int64_t> size = spatial_values(ctx, ctx.ints_arg(1), 2, "output_size");
  for (int64_t s : size)
    if (s <= 0) ctx.fail("output size must be positive, got " + ir::shape_str(size));
  const size_t r = x.size();
  ir::Shape y = x;
  y[r - 2] = size[0];
  y[r - 1] = size[1];
  const int out = new_quantized_value(ctx, y, q);
  ir::Op& op = ctx.add_op(ir::kind::qadaptive_avg_pool2d, {ctx.tensor(0)}, {out});
  op.attrs = {{"n", r == 4 ? x[0] : int64_t{1}},
              {"c", x[r - 3]},
              {"h_in", x[r - 2]},
              {"w_in", x[r - 1]},
              {"h_out", size[0]},
              {"w_out", size[1]},
              {"channels_last", q.channels_last},
              {"zero", q.zero_point}};
  ctx.set_tensor_output(0, out);
}

std::string emit_qmax_pool2d(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, pool2d_params_code(op).str(),
                     std::string("aotc::rt::max_pool2d_u8(pool, p, ") +
                         (op.b("channels_last") ? "true" : "false") + ", " + e.in(op.inputs[0]) + ", " +
                         e.out(op.outputs[0]) + ");");
}

std::string emit_qadaptive_avg_pool2d(const EmitContext& e, const ir::Op& op) {
  std::string args;
  for (const char* key : {"n", "c", "h_in", "w_in", "h_out", "w_out"})
    args += std::to_string(op.i(key)) + ", ";
  return kernel_call(op, "",
                     "aotc::rt::adaptive_avg_pool2d_u8(pool, " + args +
                         (op.b("channels_last") ? "true" : "false") + ", " + std::to_string(op.i("zero")) +
                         ", " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_quantized_pool2d(Registry& r) {
  r.add_quantized_lowering("aten::max_pool2d", lower_qmax_pool2d);
  r.add_quantized_lowering("aten::adaptive_avg_pool2d", lower_qadaptive_avg_pool2d);
  r.add_ir_op(ir::kind::qmax_pool2d, emit_qmax_pool2d);
  r.add_ir_op(ir::kind::qadaptive_avg_pool2d, emit_qadaptive_avg_pool2d);
}

}  // namespace aotc::ops
