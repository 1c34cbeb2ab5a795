// aten::max_unpool2d / max_unpool3d (and F.max_unpool1d, which calls max_unpool2d) -> IR
// "max_unpool" -> max_unpool_f32: the inverse of max pooling with indices.
#include <aotc/rt/kernels.h>

#include "spatial.h"

namespace aotc::ops {
namespace {

// (self, indices, output_size[, stride, padding]): stride and padding of max_unpool3d only
// served torch's own checks; the indices say where every value goes.
LowerFn max_unpool_lowering(size_t spatial) {
  return [spatial](LowerContext& ctx) {
    ctx.require_float32({0});
    const ir::Shape x = ctx.value(0).shape;
    const ir::Value& indices = ctx.value(1);
    if (x.size() != spatial + 1 && x.size() != spatial + 2)
      ctx.fail("input must be " + std::to_string(spatial + 1) + "-d or " + std::to_string(spatial + 2) +
               "-d, got " + ir::shape_str(x));
    if (indices.dtype != ir::DType::Int64 || indices.shape != x)
      ctx.fail("indices must be int64 with the input's shape " + ir::shape_str(x) + ", got " +
               ir::dtype_name(indices.dtype) + ir::shape_str(indices.shape));
    const std::vector<int64_t> size = ctx.ints_arg(2);
    if (size.size() != spatial)
      ctx.fail("output_size must have " + std::to_string(spatial) + " values, got " + ir::shape_str(size));
    ir::Shape y = x;
    int64_t in_volume = 1, out_volume = 1;
    for (size_t d = 0; d < spatial; ++d) {
      if (size[d] <= 0) ctx.fail("output_size must be positive, got " + ir::shape_str(size));
      in_volume *= x[x.size() - spatial + d];
      out_volume *= size[d];
      y[x.size() - spatial + d] = size[d];
    }
    const int out = ctx.new_value(ir::DType::Float32, y);
    ir::Op& op = ctx.add_op(ir::kind::max_unpool, {ctx.tensor(0), ctx.tensor(1)}, {out});
    op.attrs = {{"planes", in_volume > 0 ? ir::numel(x) / in_volume : 0},
                {"in_volume", in_volume},
                {"out_volume", out_volume}};
    ctx.set_tensor_output(0, out);
  };
}

std::string emit_max_unpool(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, "",
                     "aotc::rt::max_unpool_f32(pool, " + std::to_string(op.i("planes")) + ", " +
                         std::to_string(op.i("in_volume")) + ", " + std::to_string(op.i("out_volume")) +
                         ", " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " + e.out(op.outputs[0]) +
                         ");");
}

}  // namespace

void register_max_unpool(Registry& r) {
  r.add_lowering("aten::max_unpool2d", max_unpool_lowering(2));
  r.add_lowering("aten::max_unpool3d", max_unpool_lowering(3));
  r.add_ir_op(ir::kind::max_unpool, emit_max_unpool);
}

}  // namespace aotc::ops
