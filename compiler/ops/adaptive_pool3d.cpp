// aten::adaptive_avg_pool3d -> IR "adaptive_avg_pool3d", and aten::adaptive_max_pool{1,2,3}d
// (values and int64 argmax indices, flat within each input plane) -> IR
// "adaptive_max_pool3d"; 1-d and 2-d inputs are 3-d with leading 1s.
#include <aotc/rt/kernels.h>

#include "spatial.h"

namespace aotc::ops {
namespace {

// (self, output_size) -> values, plus indices for the max forms.
LowerFn adaptive_pool_lowering(size_t spatial, bool is_max) {
  return [spatial, is_max](LowerContext& ctx) {
    ctx.require_float32({0});
    const ir::Shape x = ctx.value(0).shape;
    if (x.size() != spatial + 1 && x.size() != spatial + 2)
      ctx.fail("input must be " + std::to_string(spatial + 1) + "-d or " + std::to_string(spatial + 2) +
               "-d, got " + ir::shape_str(x));
    const std::vector<int64_t> size = spatial_values(ctx, ctx.ints_arg(1), spatial, "output_size");
    for (int64_t s : size)
      if (s <= 0) ctx.fail("output size must be positive, got " + ir::shape_str(size));
    const bool batched = x.size() == spatial + 2;
    ir::Shape y = x;
    for (size_t d = 0; d < spatial; ++d) y[x.size() - spatial + d] = size[d];
    std::vector<int> outputs = {ctx.new_value(ir::DType::Float32, y)};
    if (is_max) outputs.push_back(ctx.new_value(ir::DType::Int64, y));
    ir::Op& op = ctx.add_op(is_max ? ir::kind::adaptive_max_pool3d : ir::kind::adaptive_avg_pool3d,
                            {ctx.tensor(0)}, outputs);
    op.attrs = {{"n", batched ? x[0] : 1},
                {"c", x[x.size() - spatial - 1]},
                {"in", as_3d({x.end() - static_cast<std::ptrdiff_t>(spatial), x.end()}, 1)},
                {"out", as_3d(size, 1)}};
    for (size_t i = 0; i < outputs.size(); ++i) ctx.set_tensor_output(i, outputs[i]);
  };
}

std::string emit_adaptive_pool3d(const EmitContext& e, const ir::Op& op) {
  std::string call =
      "aotc::rt::" + op.kind + "_f32(pool, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]);
  if (op.kind == ir::kind::adaptive_max_pool3d) call += ", " + e.out(op.outputs[1]);
  return kernel_call(op, adaptive_pool3d_params_code(op).str(), call + ");");
}

}  // namespace

ParamsCode adaptive_pool3d_params_code(const ir::Op& op) {
  ParamsCode p("aotc::rt::AdaptivePoolParams");
  p.set("n", op.i("n")).set("c", op.i("c")).set_array("in", op.ints("in")).set_array("out", op.ints("out"));
  return p;
}

void register_adaptive_pool3d(Registry& r) {
  r.add_lowering("aten::adaptive_avg_pool3d", adaptive_pool_lowering(3, false));
  r.add_lowering("aten::adaptive_max_pool1d", adaptive_pool_lowering(1, true));
  r.add_lowering("aten::adaptive_max_pool2d", adaptive_pool_lowering(2, true));
  r.add_lowering("aten::adaptive_max_pool3d", adaptive_pool_lowering(3, true));
  r.add_ir_op(ir::kind::adaptive_avg_pool3d, emit_adaptive_pool3d);
  r.add_ir_op(ir::kind::adaptive_max_pool3d, emit_adaptive_pool3d);
}

}  // namespace aotc::ops
