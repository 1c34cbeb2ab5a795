// gather and take_along_dim -> IR "gather" (runtime gather: one element per index,
// x read through its strides, 0 along the dims take_along_dim broadcasts).
#include "indexing.h"

namespace aotc::ops {

ParamsCode gather_params_code(const EmitContext& e, const ir::Op& op) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  ParamsCode p("aotc::rt::GatherParams");
  p.set("rank", static_cast<int64_t>(y.shape.size()))
      .set("dim", op.i("dim"))
      .set_array("dims", y.shape)
      .set_array("x_strides", op.ints("x_strides"))
      .set("x_dim_size", op.i("x_dim_size"))
      .set("elem_size", ir::dtype_size(y.dtype))
      .set("index_elem_size", ir::dtype_size(e.graph.value(op.inputs[1]).dtype));
  return p;
}

namespace {

std::string emit_gather(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, gather_params_code(e, op).str(),
                     "aotc::rt::gather(pool, p, " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " +
                         e.out(op.outputs[0]) + ");");
}

// y[i] = x[i with i[dim] = index[i]]; x_strides give x's layout (0 broadcasts).
void add_gather(LowerContext& ctx, int x, int index, int64_t dim, const std::vector<int64_t>& x_strides) {
  const ir::Value& xv = ctx.graph.value(x);
  const ir::Shape shape = ctx.graph.value(index).shape;
  const int out = ctx.new_value(xv.dtype, shape);
  ir::Op& op = ctx.add_op(ir::kind::gather, {x, index}, {out});
  op.attrs = {{"dim", dim}, {"x_strides", x_strides}, {"x_dim_size", xv.shape.at(static_cast<size_t>(dim))}};
  if (xv.shape[static_cast<size_t>(dim)] == 0 && ir::numel(shape) > 0)
    ctx.fail("cannot gather from an empty dimension");
  ctx.set_tensor_output(0, out);
}

// gather(self, dim, index, sparse_grad=False)
void lower_gather(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  const ir::Value& index = ctx.value(2);
  check_index_dtype(ctx, ctx.value(2).dtype);
  int xid = ctx.tensor(0), iid = ctx.tensor(2);
  if (x.shape.empty()) xid = ctx.graph.add_alias(xid, {1});
  if (index.shape.empty()) iid = ctx.graph.add_alias(iid, {1});
  const ir::Shape& xs = ctx.graph.value(xid).shape;
  const ir::Shape& is = ctx.graph.value(iid).shape;
  if (xs.size() != is.size())
    ctx.fail("index " + ir::shape_str(index.shape) + " and input " + ir::shape_str(x.shape) +
             " must have the same number of dimensions");
  const int64_t dim = normalize_dim(ctx, ctx.int_arg(1), static_cast<int64_t>(xs.size()));
  for (size_t d = 0; d < xs.size(); ++d)
    if (static_cast<int64_t>(d) != dim && is[d] > xs[d])
      ctx.fail("index " + ir::shape_str(index.shape) + " is larger than input " + ir::shape_str(x.shape) +
               " outside dimension " + std::to_string(dim));
  add_gather(ctx, xid, iid, dim, dense_strides(xs));
  if (index.shape.empty()) ctx.set_tensor_output(0, ctx.graph.add_alias(ctx.outputs[0].tensor, {}));
}

// take_along_dim(self, indices, dim=None): without dim, on the flattened input; else
// input and indices broadcast against each other outside dim.
void lower_take_along_dim(LowerContext& ctx) {
  check_index_dtype(ctx, ctx.value(1).dtype);
  if (ctx.is_none(2)) {
    const int x = ctx.graph.add_alias(ctx.tensor(0), {ir::numel(ctx.value(0).shape)});
    const int index = ctx.graph.add_alias(ctx.tensor(1), {ir::numel(ctx.value(1).shape)});
    return add_gather(ctx, x, index, 0, {1});
  }
  const ir::Shape xs = ctx.value(0).shape, is = ctx.value(1).shape;
  if (xs.size() != is.size())
    ctx.fail("input " + ir::shape_str(xs) + " and indices " + ir::shape_str(is) +
             " should have the same number of dimensions");
  const int64_t dim = normalize_dim(ctx, ctx.int_arg(2), static_cast<int64_t>(xs.size()));
  ir::Shape x_other = xs, i_other = is;
  x_other[static_cast<size_t>(dim)] = i_other[static_cast<size_t>(dim)] = 1;
  ir::Shape out = broadcast_shapes(ctx, x_other, i_other);
  out[static_cast<size_t>(dim)] = is[static_cast<size_t>(dim)];
  std::vector<int64_t> x_strides = dense_strides(xs);
  for (size_t d = 0; d < xs.size(); ++d)
    if (static_cast<int64_t>(d) != dim && xs[d] != out[d]) x_strides[d] = 0;
  int index = ctx.tensor(1);
  if (is != out) index = materialize(ctx, expand_view(view_of(ctx.graph, index), out), -1);
  add_gather(ctx, ctx.tensor(0), index, dim, x_strides);
}

}  // namespace

void register_gather(Registry& r) {
  r.add_lowering("aten::gather", lower_gather);
  r.add_lowering("aten::take_along_dim", lower_take_along_dim);
  r.add_ir_op(ir::kind::gather, emit_gather);
}

}  // namespace aotc::ops
