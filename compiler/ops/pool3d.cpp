// max_pool3d / avg_pool3d, and max pooling of any rank that returns the argmax indices
// (aten::max_pool{1,2,3}d_with_indices) -> IR "max_pool3d" / "avg_pool3d" ->
// max_pool3d_f32 / avg_pool3d_f32. Indices are int64, flat within each input plane.
#include <aotc/rt/kernels.h>

#include "spatial.h"

namespace aotc::ops {
namespace {

void set_pool3d_attrs(ir::Op& op, const PoolGeometry& g) {
  op.attrs = {{"n", g.n},
              {"c", g.c},
              {"in", g.in},
              {"out", g.out},
              {"kernel", g.kernel},
              {"stride", g.stride},
              {"padding", g.pad},
              {"dilation", g.dilation},
              {"count_include_pad", g.count_include_pad},
              {"divisor_override", g.divisor_override}};
}

// aten::max_pool3d / avg_pool3d: the schemas of pool2d.cpp with 3 values per list.
LowerFn pool3d_lowering(bool is_max) {
  return [is_max](LowerContext& ctx) {
    const PoolGeometry g = pool_geometry(ctx, 3, is_max);
    const int out = ctx.new_value(ir::DType::Float32, g.out_shape);
    set_pool3d_attrs(ctx.add_op(is_max ? ir::kind::max_pool3d : ir::kind::avg_pool3d, {ctx.tensor(0)}, {out}),
                     g);
    ctx.set_tensor_output(0, out);
  };
}

// aten::max_pool{1,2,3}d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
// -> (values, indices)
LowerFn max_pool_with_indices_lowering(size_t spatial) {
  return [spatial](LowerContext& ctx) {
    const PoolGeometry g = pool_geometry(ctx, spatial, true);
    const int values = ctx.new_value(ir::DType::Float32, g.out_shape);
    const int indices = ctx.new_value(ir::DType::Int64, g.out_shape);
    set_pool3d_attrs(ctx.add_op(ir::kind::max_pool3d, {ctx.tensor(0)}, {values, indices}), g);
    ctx.set_tensor_output(0, values);
    ctx.set_tensor_output(1, indices);
  };
}

std::string emit_pool3d(const EmitContext& e, const ir::Op& op) {
  std::string call =
      "aotc::rt::" + op.kind + "_f32(pool, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]);
  if (op.kind == ir::kind::max_pool3d)
    call += ", " + (op.outputs.size() > 1 ? e.out(op.outputs[1]) : "nullptr");
  return kernel_call(op, pool3d_params_code(op).str(), call + ");");
}

}  // namespace

ParamsCode pool3d_params_code(const ir::Op& op) {
  ParamsCode p("aotc::rt::Pool3dParams");
  p.set("n", op.i("n"))
      .set("c", op.i("c"))
      .set_array("in", op.ints("in"))
      .set_array("out", op.ints("out"))
      .set_array("kernel", op.ints("kernel"))
      .set_array("stride", op.ints("stride"))
      .set_array("pad", op.ints("padding"))
      .set_array("dilation", op.ints("dilation"))
      .set_bool("count_include_pad", op.b("count_include_pad"))
      .set("divisor_override", op.i("divisor_override"));
  return p;
}

void register_pool3d(Registry& r) {
  r.add_lowering("aten::max_pool3d", pool3d_lowering(true));
  r.add_lowering("aten::avg_pool3d", pool3d_lowering(false));
  r.add_lowering("aten::max_pool1d_with_indices", max_pool_with_indices_lowering(1));
  r.add_lowering("aten::max_pool2d_with_indices", max_pool_with_indices_lowering(2));
  r.add_lowering("aten::max_pool3d_with_indices", max_pool_with_indices_lowering(3));
  r.add_ir_op(ir::kind::max_pool3d, emit_pool3d);
  r.add_ir_op(ir::kind::avg_pool3d, emit_pool3d);
}

}  // namespace aotc::ops
