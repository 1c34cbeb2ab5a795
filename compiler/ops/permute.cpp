// permute, transpose, t -> IR "copy" that writes the permuted tensor densely.
#include "op_helpers.h"

namespace aotc::ops {
namespace {

void add_permute(LowerContext& ctx, const std::vector<int64_t>& order) {
  const ir::Value& x = ctx.value(0);
  const std::vector<int64_t> in_strides = dense_strides(x.shape);
  ir::Shape y;
  std::vector<int64_t> src;
  for (int64_t d : order) {
    y.push_back(x.shape[static_cast<size_t>(d)]);
    src.push_back(in_strides[static_cast<size_t>(d)]);
  }
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) identity &= order[i] == static_cast<int64_t>(i);
  if (identity) return ctx.set_tensor_output(0, ctx.graph.add_alias(ctx.tensor(0), y));
  const int out = ctx.new_value(x.dtype, y);
  ir::Op& op = ctx.add_op("copy", {ctx.tensor(0)}, {out});
  op.attrs = {{"dims", y},
              {"src_strides", src},
              {"dst_strides", dense_strides(y)},
              {"elem_size", ir::dtype_size(x.dtype)}};
  ctx.set_tensor_output(0, out);
}

void lower_permute(LowerContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.value(0).shape.size());
  std::vector<int64_t> order = ctx.ints_arg(1);
  if (static_cast<int64_t>(order.size()) != rank)
    ctx.fail("permutation " + ir::shape_str(order) + " does not match rank " + std::to_string(rank));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& d : order) {
    d = normalize_dim(ctx, d, rank);
    if (seen[static_cast<size_t>(d)]) ctx.fail("dimension repeated in permutation");
    seen[static_cast<size_t>(d)] = true;
  }
  add_permute(ctx, order);
}

void lower_transpose(LowerContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.value(0).shape.size());
  std::vector<int64_t> order(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) order[static_cast<size_t>(i)] = i;
  if (rank == 0) return add_permute(ctx, order);
  std::swap(order[static_cast<size_t>(normalize_dim(ctx, ctx.int_arg(1), rank))],
            order[static_cast<size_t>(normalize_dim(ctx, ctx.int_arg(2), rank))]);
  add_permute(ctx, order);
}

void lower_t(LowerContext& ctx) {
  const size_t rank = ctx.value(0).shape.size();
  if (rank > 2) ctx.fail("t() expects a tensor with at most 2 dimensions");
  add_permute(ctx, rank == 2 ? std::vector<int64_t>{1, 0} : std::vector<int64_t>(rank == 1 ? 1 : 0, 0));
}

}  // namespace

void register_permute(Registry& r) {
  r.add_lowering("aten::permute", lower_permute);
  r.add_lowering("aten::transpose", lower_transpose);
  r.add_lowering("aten::t", lower_t);
}

}  // namespace aotc::ops
