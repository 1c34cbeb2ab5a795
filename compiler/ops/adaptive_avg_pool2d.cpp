// aten::adaptive_avg_pool2d -> IR "adaptive_avg_pool2d" -> adaptive_avg_pool2d_f32.
#include "op_helpers.h"

namespace aotc::ops {
namespace {

void lower_adaptive_avg_pool2d(LowerContext& ctx) {
  ctx.require_float32({0});
  const ir::Shape x = ctx.value(0).shape;
  if (x.size() != 3 && x.size() != 4) ctx.fail("input must be 3-d or 4-d, got " + ir::shape_str(x));
  const std::vector<int64_t> size = ctx.ints_arg(1, 2);
  if (size[0] <= 0 || size[1] <= 0) ctx.fail("output size must be positive, got " + ir::shape_str(size));
  const bool batched = x.size() == 4;
  const int64_t n = batched ? x[0] : 1, c = x[x.size() - 3], h = x[x.size() - 2], w = x[x.size() - 1];
  ir::Shape y = {c, size[0], size[1]};
  if (batched) y.insert(y.begin(), n);
  const int out = ctx.new_value(ir::DType::Float32, y);
  ir::Op& op = ctx.add_op("adaptive_avg_pool2d", {ctx.tensor(0)}, {out});
  op.attrs = {{"n", n}, {"c", c}, {"h_in", h}, {"w_in", w}, {"h_out", size[0]}, {"w_out", size[1]}};
  ctx.set_tensor_output(0, out);
}

std::string emit_adaptive_avg_pool2d(const EmitContext& e, const ir::Op& op) {
  std::string args;
  for (const char* key : {"n", "c", "h_in", "w_in", "h_out", "w_out"})
    args += std::to_string(op.i(key)) + ", ";
  return kernel_call(op, "",
                     "aotc::rt::adaptive_avg_pool2d_f32(pool, " + args + e.in(op.inputs[0]) + ", " +
                         e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_adaptive_avg_pool2d(Registry& r) {
  r.add_lowering("aten::adaptive_avg_pool2d", lower_adaptive_avg_pool2d);
  r.add_ir_op("adaptive_avg_pool2d", emit_adaptive_avg_pool2d);
}

}  // namespace aotc::ops
