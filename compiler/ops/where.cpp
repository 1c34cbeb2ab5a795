// where(cond, self, other) in its Tensor and Scalar forms, and masked_fill (Scalar or 0-d
// Tensor value, in-place too) -> IR "where" -> rt::where, with broadcasting of all
// three operands.
#include "elementwise.h"

namespace aotc::ops {
namespace {

// where.self / ScalarSelf / ScalarOther / Scalar: the branches promote together.
void lower_where(LowerContext& ctx) {
  if (ctx.num_inputs() == 1)
    ctx.fail("where(cond) (nonzero) has a data-dependent shape; it is not supported");
  const ElemArg a = elem_arg(ctx, 1), b = elem_arg(ctx, 2);
  const ir::DType t = result_type({a, b});
  ctx.set_tensor_output(0, add_where_op(ctx, ctx.tensor(0), as_dtype(ctx, a, t), as_dtype(ctx, b, t)));
}

// masked_fill(self, mask, value): self's dtype; the value is a number or a 0-d tensor.
void lower_masked_fill(LowerContext& ctx) {
  const ir::DType t = ctx.value(0).dtype;
  const ElemArg value = elem_arg(ctx, 2);
  if (!value.is_number() && !value.zero_dim)
    ctx.fail("masked_fill only supports a 0-dimensional value tensor, got " +
             ir::shape_str(ctx.graph.value(value.tensor).shape));
  if (ctx.value(1).dtype != ir::DType::Bool) ctx.fail("masked_fill needs a bool mask");
  const int out = add_where_op(ctx, ctx.tensor(1), as_dtype(ctx, value, t), ctx.tensor(0));
  set_elementwise_output(ctx, out);
}

std::string emit_where(const EmitContext& e, const ir::Op& op) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  ParamsCode p("aotc::rt::WhereParams");
  p.set("rank", static_cast<int64_t>(y.shape.size()))
      .set_array("out_dims", y.shape)
      .set_array("cond_strides", broadcast_strides(e.graph.value(op.inputs[0]).shape, y.shape))
      .set_array("a_strides", broadcast_strides(e.graph.value(op.inputs[1]).shape, y.shape))
      .set_array("b_strides", broadcast_strides(e.graph.value(op.inputs[2]).shape, y.shape));
  return kernel_call(op, p.str(),
                     "aotc::rt::where(pool, p, " + std::to_string(ir::dtype_size(y.dtype)) + ", " +
                         e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " +
                         e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_where(Registry& r) {
  r.add_lowering("aten::where", lower_where);
  register_with_inplace(r, "aten::masked_fill", lower_masked_fill);
  r.add_ir_op(ir::kind::where, emit_where);
}

}  // namespace aotc::ops
