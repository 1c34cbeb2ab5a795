// aten::adaptive_avg_pool1d / adaptive_avg_pool2d -> IR "adaptive_avg_pool2d" ->
// adaptive_avg_pool2d_f32 (1-d is 2-d with H = 1, as torch computes it too). The 3-d and
// max forms are in adaptive_pool3d.cpp.
#include "op_helpers.h"
#include "spatial.h"

namespace aotc::ops {
namespace {

LowerFn adaptive_avg_pool_lowering(size_t spatial) {
  return [spatial](LowerContext& ctx) {
    ctx.require_float32({0});
    const ir::Shape x = ctx.value(0).shape;
    if (x.size() != spatial + 1 && x.size() != spatial + 2)
      ctx.fail("input must be " + std::to_string(spatial + 1) + "-d or " + std::to_string(spatial + 2) +
               "-d, got " + ir::shape_str(x));
    const std::vector<int64_t> size = spatial_values(ctx, ctx.ints_arg(1), spatial, "output_size");
    for (int64_t s : size)
      if (s <= 0) ctx.fail("output size must be positive, got " + ir::shape_str(size));
    const bool batched = x.size() == spatial + 2;
    const int64_t n = batched ? x[0] : 1, c = x[x.size() - spatial - 1];
    const std::vector<int64_t> in = as_3d({x.end() - static_cast<std::ptrdiff_t>(spatial), x.end()}, 1);
    const std::vector<int64_t> out = as_3d(size, 1);
    ir::Shape y = x;
    for (size_t d = 0; d < spatial; ++d) y[x.size() - spatial + d] = size[d];
    const int result = ctx.new_value(ir::DType::Float32, y);
    ir::Op& op = ctx.add_op(ir::kind::adaptive_avg_pool2d, {ctx.tensor(0)}, {result});
    op.attrs = {{"n", n}, {"c", c}, {"h_in", in[1]}, {"w_in", in[2]}, {"h_out", out[1]}, {"w_out", out[2]}};
    ctx.set_tensor_output(0, result);
  };
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
  r.add_lowering("aten::adaptive_avg_pool1d", adaptive_avg_pool_lowering(1));
  r.add_lowering("aten::adaptive_avg_pool2d", adaptive_avg_pool_lowering(2));
  r.add_ir_op(ir::kind::adaptive_avg_pool2d, emit_adaptive_avg_pool2d);
}

}  // namespace aotc::ops
