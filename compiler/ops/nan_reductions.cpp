// nan_reductions.cpp: aten::nansum(self, dim=None, keepdim=False, *, dtype=None) and
// aten::nanmean (same arguments): the sum, and the mean, of the values that are not NaN
// (NaNs read as 0, the mean divided by the count of the others, NaN where there are none,
// as torch), composed of the where, comparison and reduce ops. Integer and bool tensors
// have no NaN: their nansum is sum.
#include "elementwise.h"

namespace aotc::ops {
namespace {

// Argument 0 with its NaNs as zeros, the dims and keepdim (arguments 1 and 2).
struct NanArgs {
  int zeroed = -1, present = -1;  // present: 1 where the value is not NaN (float32)
  ReduceShape rs;
};

NanArgs nan_args(LowerContext& ctx) {
  NanArgs a;
  if (ctx.num_inputs() > 3 && !ctx.is_none(3) && dtype_from_torch(ctx, ctx.int_arg(3)) != ir::DType::Float32)
    ctx.fail("only a float32 dtype is supported");
  const std::vector<int64_t> dims = ctx.num_inputs() > 1 ? dims_arg(ctx, 1) : std::vector<int64_t>{};
  a.rs = reduce_shape(ctx, ctx.value(0).shape, dims, ctx.num_inputs() > 2 && ctx.bool_arg(2));
  const int x = cast_to(ctx, ctx.tensor(0), ir::DType::Float32);
  const int zero = constant_scalar(ctx.graph, ir::DType::Float32, 0.0);
  const int nan = add_binary_op(ctx, rt::BinaryOp::Ne, x, x);
  a.zeroed = add_where_op(ctx, nan, zero, x);
  a.present = add_where_op(ctx, nan, zero, constant_scalar(ctx.graph, ir::DType::Float32, 1.0));
  return a;
}

void lower_nansum(LowerContext& ctx) {
  if (!is_float(ctx.value(0).dtype)) {
    ctx.set_tensor_output(0, lower_as(ctx, "aten::sum", ctx.inputs));
    return;
  }
  const NanArgs a = nan_args(ctx);
  ctx.set_tensor_output(0, add_reduce_op(ctx, rt::ReduceOp::Sum, a.zeroed, a.rs));
}

void lower_nanmean(LowerContext& ctx) {
  if (!is_float(ctx.value(0).dtype)) ctx.fail("nanmean needs a float tensor (torch's too)");
  const NanArgs a = nan_args(ctx);
  ctx.set_tensor_output(
      0, add_binary_op(ctx, rt::BinaryOp::Div, add_reduce_op(ctx, rt::ReduceOp::Sum, a.zeroed, a.rs),
                       add_reduce_op(ctx, rt::ReduceOp::Sum, a.present, a.rs)));
}

}  // namespace

void register_nan_reductions(Registry& r) {
  r.add_lowering("aten::nansum", lower_nansum);
  r.add_lowering("aten::nanmean", lower_nanmean);
}

}  // namespace aotc::ops
