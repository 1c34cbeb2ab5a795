// index_put.cpp: aten::index_put and index_put_(self, Tensor?[] indices, values,
// accumulate=False), x[indices] = values, composed of other ops:
//   - one boolean mask (the other entries None: x[mask], x[:, mask]) and a single value:
//     where(mask, value, self), or with accumulate self + where(mask, value, 0); the mask may
//     be computed at run time, the commonest case (x[x > t] = 0);
//   - integer index tensors, and constant masks turned into their positions, on adjacent
//     dims: the indexed dims merged into one, each index wrapped (i < 0: i + size) and
//     combined into a position along it, and aten::scatter writes the values there (a
//     repeated position: the last write in index order wins, as on torch's CPU; a position
//     out of range is clamped, where torch raises).
//   - with accumulate=True, the same positions and values through a scatter-add
//     (add_scatter_reduce, scatter_reduce.cpp: repeated positions all add, in index order).
// Refused with the reason: a mask computed at run time with several values (their count is
// known only at run time), index tensors on dims that are not adjacent.
// index_copy(self, dim, index, source) and index_fill(self, dim, index, value), in place too:
// aten::scatter along dim with the 1-d index expanded across the other dims (a repeated
// index: the last write wins). index_add(..., alpha) and index_reduce(..., reduce,
// include_self): the same expansion into a scatter_reduce.
#include <algorithm>

#include "elementwise.h"
#include "indexing.h"

namespace aotc::ops {
namespace {

// x[mask] = value (mask covering dims [at, at + mask rank) of x), or += with accumulate.
int put_where(LowerContext& ctx, int mask, int64_t at, int value, bool accumulate) {
  const ir::Shape& x_shape = ctx.value(0).shape;
  const ir::Shape& m_shape = ctx.graph.value(mask).shape;
  for (size_t d = 0; d < m_shape.size(); ++d)
    if (at + static_cast<int64_t>(d) >= static_cast<int64_t>(x_shape.size()) ||
        x_shape[static_cast<size_t>(at) + d] != m_shape[d])
      ctx.fail("the mask's shape " + ir::shape_str(m_shape) + " does not match the indexed tensor's shape " +
               ir::shape_str(x_shape) + " at dim " + std::to_string(at + static_cast<int64_t>(d)));
  ir::Shape aligned(static_cast<size_t>(at), 1);
  aligned.insert(aligned.end(), m_shape.begin(), m_shape.end());
  aligned.resize(x_shape.size(), 1);
  const int m = ctx.graph.add_alias(mask, aligned);
  const ir::DType t = ctx.value(0).dtype;
  if (!accumulate) return add_where_op(ctx, m, value, ctx.tensor(0));
  return add_binary_op(ctx, rt::BinaryOp::Add, ctx.tensor(0),
                       add_where_op(ctx, m, value, constant_scalar(ctx.graph, t, 0)));
}

void lower_index_put(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  const ir::Shape x_shape = x.shape;
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  const Operand& list = ctx.arg(1);
  if (list.kind != Operand::Kind::TensorList)
    ctx.fail("indices must be a list of tensors, got " + list.describe());
  const bool accumulate = ctx.num_inputs() > 3 && !ctx.is_none(3) && ctx.bool_arg(3);
  const ElemArg values_arg = elem_arg(ctx, 2);
  const int values = as_dtype(ctx, values_arg, x.dtype);
  const ir::Shape v_shape = ctx.graph.value(values).shape;

  // One boolean mask and a single value: a where, whatever the mask's values.
  int entries = 0, mask = -1;
  int64_t mask_at = 0;
  for (int id : list.tensors) {
    if (id < 0) {
      if (mask < 0) ++mask_at;
      continue;
    }
    ++entries;
    if (ctx.graph.value(id).dtype == ir::DType::Bool) mask = id;
  }
  if (entries == 1 && mask >= 0 && ir::numel(v_shape) == 1) {
    if (ctx.graph.value(mask).shape.empty()) ctx.fail("a 0-d boolean index (x[True] = v) is not supported");
    ctx.set_tensor_output(0, put_where(ctx, mask, mask_at, ctx.graph.add_alias(values, {}), accumulate));
    return;
  }

  // Index tensors per dim of x (-1: a full slice); constant masks become their positions.
  const std::vector<int> per_dim = index_tensors_per_dim(ctx, list, x_shape, [&] {
    ctx.fail("x[mask] = values with a mask computed at run time needs a single value, got values of shape " +
             ir::shape_str(v_shape) + ": how many elements the mask selects is known only at run time");
  });
  std::vector<int64_t> indexed;
  for (int64_t d = 0; d < rank; ++d)
    if (per_dim[static_cast<size_t>(d)] >= 0) indexed.push_back(d);
  if (indexed.empty()) {  // x[...] = values: every element
    const ir::Shape b = broadcast_shapes(ctx, v_shape, x_shape);
    if (b != x_shape)
      ctx.fail("values of shape " + ir::shape_str(v_shape) + " cannot be broadcast to " +
               ir::shape_str(x_shape));
    const int whole = materialize(ctx, expand_view(view_of(ctx.graph, values), x_shape), -1);
    ctx.set_tensor_output(0,
                          accumulate ? add_binary_op(ctx, rt::BinaryOp::Add, ctx.tensor(0), whole) : whole);
    return;
  }
  const int64_t first = indexed.front(), last = indexed.back();
  if (last - first + 1 != static_cast<int64_t>(indexed.size()))
    ctx.fail("index tensors on dims that are not adjacent (x[i, :, j] = v) are not supported");

  // The positions along the merged dims [first, last]: sum of wrapped index * stride.
  ir::Shape b_shape;
  for (int64_t d : indexed)
    b_shape = broadcast_shapes(ctx, b_shape, ctx.graph.value(per_dim[static_cast<size_t>(d)]).shape);
  int64_t merged = 1;
  for (int64_t d = first; d <= last; ++d) merged *= x_shape[static_cast<size_t>(d)];
  int position = -1;
  int64_t stride = merged;
  for (int64_t d : indexed) {
    const int64_t size = x_shape[static_cast<size_t>(d)];
    stride /= size;
    int i = cast_to(ctx, per_dim[static_cast<size_t>(d)], ir::DType::Int64);
    const int negative =
        add_binary_op(ctx, rt::BinaryOp::Lt, i, constant_scalar(ctx.graph, ir::DType::Int64, 0));
    i = add_where_op(ctx, negative,
                     add_binary_op(ctx, rt::BinaryOp::Add, i,
                                   constant_scalar(ctx.graph, ir::DType::Int64, static_cast<double>(size))),
                     i);
    if (stride != 1)
      i = add_binary_op(ctx, rt::BinaryOp::Mul, i,
                        constant_scalar(ctx.graph, ir::DType::Int64, static_cast<double>(stride)));
    position = position < 0 ? i : add_binary_op(ctx, rt::BinaryOp::Add, position, i);
  }
  if (ctx.graph.value(position).shape != b_shape)
    position = materialize(ctx, expand_view(view_of(ctx.graph, position), b_shape), -1);

  // x as [pre, merged, post], the values as [pre, n, post] (broadcast to the indexing
  // result's shape first, torch's rule), the positions expanded to the same.
  int64_t pre = 1, post = 1;
  for (int64_t d = 0; d < first; ++d) pre *= x_shape[static_cast<size_t>(d)];
  for (int64_t d = last + 1; d < rank; ++d) post *= x_shape[static_cast<size_t>(d)];
  const int64_t n = ir::numel(b_shape);
  ir::Shape result_shape(x_shape.begin(), x_shape.begin() + first);
  result_shape.insert(result_shape.end(), b_shape.begin(), b_shape.end());
  result_shape.insert(result_shape.end(), x_shape.begin() + last + 1, x_shape.end());
  if (broadcast_shapes(ctx, v_shape, result_shape) != result_shape)
    ctx.fail("values of shape " + ir::shape_str(v_shape) +
             " cannot be broadcast to the indexing result's shape " + ir::shape_str(result_shape));
  int v3 = values;
  if (v_shape != result_shape)
    v3 = materialize(ctx, expand_view(view_of(ctx.graph, values), result_shape), -1);
  v3 = ctx.graph.add_alias(v3, {pre, n, post});
  const StridedView p3 =
      expand_view(view_of(ctx.graph, ctx.graph.add_alias(position, {1, n, 1})), {pre, n, post});
  const int x3 = ctx.graph.add_alias(ctx.tensor(0), {pre, merged, post});
  const int y3 = accumulate
                     ? add_scatter_reduce(ctx, x3, 1, p3, v3, rt::ScatterReduceOp::Sum, true)
                     : lower_as(ctx, "aten::scatter",
                                {Operand::of_tensor(x3), Operand::of_int(1),
                                 Operand::of_tensor(materialize(ctx, p3, -1)), Operand::of_tensor(v3)});
  ctx.set_tensor_output(0, ctx.graph.add_alias(y3, x_shape));
}

// self's dims with dim's size replaced by the index's length, and the index (0-d or 1-d)
// seen with 1 for every other dim, for a scatter along dim.
struct AlongDim {
  int64_t dim;
  ir::Shape shape;
  int column;  // the index as it is, with 1 for every other dim
};
AlongDim index_along_dim(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  const ir::Value& index = ctx.value(2);
  check_dim_index(ctx, index);
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(x.shape.size()));
  const int64_t dim = normalize_dim(ctx, ctx.int_arg(1), rank);
  const int64_t n = ir::numel(index.shape);
  ir::Shape shape = x.shape.empty() ? ir::Shape{1} : x.shape, column(shape.size(), 1);
  shape[static_cast<size_t>(dim)] = n;
  column[static_cast<size_t>(dim)] = n;
  return {dim, shape, ctx.graph.add_alias(ctx.tensor(2), column)};
}

// Scatters src (of a.shape) into self (seen with at least one dim) at a's positions.
void scatter_along(LowerContext& ctx, const AlongDim& a, int src) {
  const ir::Value& x = ctx.value(0);
  const int self = x.shape.empty() ? ctx.graph.add_alias(ctx.tensor(0), {1}) : ctx.tensor(0);
  const int index = materialize(ctx, expand_view(view_of(ctx.graph, a.column), a.shape), -1);
  const int y = lower_as(
      ctx, "aten::scatter",
      {Operand::of_tensor(self), Operand::of_int(a.dim), Operand::of_tensor(index), Operand::of_tensor(src)});
  ctx.set_tensor_output(0, x.shape.empty() ? ctx.graph.add_alias(y, {}) : y);
}

// index_copy(self, dim, index, source): source has self's shape with dim's size the index's
// length.
void lower_index_copy(LowerContext& ctx) {
  const AlongDim a = index_along_dim(ctx);
  const ir::Value& source = ctx.value(3);
  const ir::Shape s_shape = source.shape.empty() ? ir::Shape{1} : source.shape;
  if (s_shape != a.shape)
    ctx.fail("source has shape " + ir::shape_str(source.shape) + ", expected " + ir::shape_str(a.shape) +
             " (self's with dim " + std::to_string(a.dim) + " the index's length)");
  int src = as_dtype(ctx, elem_arg(ctx, 3), ctx.value(0).dtype);
  if (source.shape.empty()) src = ctx.graph.add_alias(src, {1});
  scatter_along(ctx, a, src);
}

// source of index_add / index_reduce: self's shape with dim's size the index's length, and
// self's dtype.
int source_along(LowerContext& ctx, const AlongDim& a) {
  const ir::Value& source = ctx.value(3);
  if ((source.shape.empty() ? ir::Shape{1} : source.shape) != a.shape)
    ctx.fail("source has shape " + ir::shape_str(source.shape) + ", expected " + ir::shape_str(a.shape) +
             " (self's with dim " + std::to_string(a.dim) + " the index's length)");
  if (source.dtype != ctx.value(0).dtype)
    ctx.fail(std::string("source has dtype ") + ir::dtype_name(source.dtype) + ", self " +
             ir::dtype_name(ctx.value(0).dtype) + " (they must match)");
  return source.shape.empty() ? ctx.graph.add_alias(ctx.tensor(3), {1}) : ctx.tensor(3);
}

// The 1-d index is read in place, broadcast over the other dims (not expanded as
// scatter_along's is: a graph network's index_add would copy it per feature).
void reduce_along(LowerContext& ctx, const AlongDim& a, int src, rt::ScatterReduceOp reduce,
                  bool include_self) {
  const ir::Value& x = ctx.value(0);
  const int self = x.shape.empty() ? ctx.graph.add_alias(ctx.tensor(0), {1}) : ctx.tensor(0);
  const int y = add_scatter_reduce(ctx, self, a.dim, expand_view(view_of(ctx.graph, a.column), a.shape), src,
                                   reduce, include_self);
  ctx.set_tensor_output(0, x.shape.empty() ? ctx.graph.add_alias(y, {}) : y);
}

// index_add(self, dim, index, source, *, alpha=1): a scatter-add of source (times alpha).
void lower_index_add(LowerContext& ctx) {
  const AlongDim a = index_along_dim(ctx);
  int src = source_along(ctx, a);
  if (ctx.num_inputs() > 4 && !ctx.is_none(4)) {
    const ElemArg alpha = elem_arg(ctx, 4);
    if (!alpha.is_number()) ctx.fail("alpha must be a number");
    if (alpha.number != 1)
      src = add_binary_op(ctx, rt::BinaryOp::Mul, src,
                          constant_scalar(ctx.graph, ctx.value(0).dtype, alpha.number));
  }
  reduce_along(ctx, a, src, rt::ScatterReduceOp::Sum, true);
}

// index_reduce(self, dim, index, source, reduce, *, include_self=True): reduce "prod",
// "mean", "amax" or "amin".
void lower_index_reduce(LowerContext& ctx) {
  const AlongDim a = index_along_dim(ctx);
  const int src = source_along(ctx, a);
  const Operand& r = ctx.arg(4);
  if (r.kind != Operand::Kind::String) ctx.fail("reduce must be a string, got " + r.describe());
  rt::ScatterReduceOp reduce = rt::ScatterReduceOp::Prod;
  if (r.s == "mean")
    reduce = rt::ScatterReduceOp::Mean;
  else if (r.s == "amax")
    reduce = rt::ScatterReduceOp::Amax;
  else if (r.s == "amin")
    reduce = rt::ScatterReduceOp::Amin;
  else if (r.s != "prod")
    ctx.fail("reduce must be \"prod\", \"mean\", \"amax\" or \"amin\", got \"" + r.s + "\"");
  reduce_along(ctx, a, src, reduce, ctx.is_none(5) || ctx.bool_arg(5));
}

// index_fill(self, dim, index, value): value a number or a 0-d tensor.
void lower_index_fill(LowerContext& ctx) {
  const AlongDim a = index_along_dim(ctx);
  const ElemArg value = elem_arg(ctx, 3);
  if (!value.is_number() && !value.zero_dim)
    ctx.fail("index_fill needs a number or a 0-d tensor as the value, got " +
             ir::shape_str(ctx.graph.value(value.tensor).shape));
  const int v = as_dtype(ctx, value, ctx.value(0).dtype);
  scatter_along(ctx, a,
                materialize(ctx, expand_view(view_of(ctx.graph, ctx.graph.add_alias(v, {})), a.shape), -1));
}

}  // namespace

void register_index_put(Registry& r) {
  r.add_lowering("aten::index_put", lower_index_put);
  r.add_lowering("aten::index_put_", lower_index_put);
  r.add_lowering("aten::index_copy", lower_index_copy);
  r.add_lowering("aten::index_copy_", lower_index_copy);
  r.add_lowering("aten::index_fill", lower_index_fill);
  r.add_lowering("aten::index_fill_", lower_index_fill);
  r.add_lowering("aten::index_add", lower_index_add);
  r.add_lowering("aten::index_add_", lower_index_add);
  r.add_lowering("aten::index_reduce", lower_index_reduce);
  r.add_lowering("aten::index_reduce_", lower_index_reduce);
}

}  // namespace aotc::ops
