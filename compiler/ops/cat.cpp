// cat / concat / concatenate and stack -> IR "assemble" (assemble.h): one copy_strided per
// part into its slice of the output. Parts are read through view_of, so cat of slices or of
// transposed tensors reads the original tensors without intermediate copies.
#include "assemble.h"

namespace aotc::ops {
namespace {

void require_same_dtype(const LowerContext& ctx, const std::vector<int>& parts) {
  for (int id : parts)
    if (ctx.graph.value(id).dtype != ctx.graph.value(parts[0]).dtype)
      ctx.fail(std::string("tensors of different dtypes (") +
               ir::dtype_name(ctx.graph.value(parts[0]).dtype) + ", " +
               ir::dtype_name(ctx.graph.value(id).dtype) +
               ") cannot be concatenated yet; convert them first");
}

void lower_cat(LowerContext& ctx) {
  const std::vector<int>& list = tensor_list_arg(ctx);
  const int64_t dim_arg = ctx.num_inputs() > 1 ? ctx.int_arg(1) : 0;
  // torch skips 1-d empty tensors in cat (legacy behaviour).
  std::vector<int> parts;
  for (int id : list) {
    const ir::Shape& s = ctx.graph.value(id).shape;
    if (!(s.size() == 1 && s[0] == 0)) parts.push_back(id);
  }
  if (parts.empty()) parts.push_back(list[0]);
  require_same_dtype(ctx, list);
  const ir::Value& first = ctx.graph.value(parts[0]);
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  if (rank == 0) ctx.fail("zero-dimensional tensors cannot be concatenated");
  const int64_t dim = normalize_dim(ctx, dim_arg, rank);
  const size_t d = static_cast<size_t>(dim);
  Assembly a;
  a.dtype = first.dtype;
  a.shape = first.shape;
  a.shape[d] = 0;
  for (int id : parts) {
    const ir::Value& v = ctx.graph.value(id);
    bool ok = v.shape.size() == first.shape.size();
    for (size_t i = 0; ok && i < v.shape.size(); ++i) ok = i == d || v.shape[i] == first.shape[i];
    if (!ok)
      ctx.fail("shapes " + ir::shape_str(first.shape) + " and " + ir::shape_str(v.shape) +
               " differ outside dimension " + std::to_string(dim));
    a.shape[d] += v.shape[d];
  }
  std::vector<int64_t> starts(static_cast<size_t>(rank), 0);
  for (int id : parts) {
    a.pieces.push_back(region_piece(view_of(ctx.graph, id), a.shape, starts));
    starts[d] += ctx.graph.value(id).shape[d];
  }
  ctx.set_tensor_output(0, add_assembly(ctx, a));
}

// stack(tensors, dim=0): same shapes, joined along a new dim.
void lower_stack(LowerContext& ctx) {
  const std::vector<int>& list = tensor_list_arg(ctx);
  require_same_dtype(ctx, list);
  const ir::Value& first = ctx.graph.value(list[0]);
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  const int64_t dim = normalize_dim(ctx, ctx.num_inputs() > 1 ? ctx.int_arg(1) : 0, rank + 1);
  for (int id : list)
    if (ctx.graph.value(id).shape != first.shape)
      ctx.fail("stack expects each tensor to be equal size, but got " + ir::shape_str(first.shape) + " and " +
               ir::shape_str(ctx.graph.value(id).shape));
  Assembly a;
  a.dtype = first.dtype;
  a.shape = first.shape;
  a.shape.insert(a.shape.begin() + dim, static_cast<int64_t>(list.size()));
  std::vector<int64_t> starts(static_cast<size_t>(rank + 1), 0);
  for (int id : list) {
    a.pieces.push_back(region_piece(unsqueeze_view(view_of(ctx.graph, id), dim), a.shape, starts));
    ++starts[static_cast<size_t>(dim)];
  }
  ctx.set_tensor_output(0, add_assembly(ctx, a));
}

}  // namespace

void register_cat(Registry& r) {
  r.add_lowering("aten::cat", lower_cat);
  r.add_lowering("aten::concat", lower_cat);
  r.add_lowering("aten::concatenate", lower_cat);
  r.add_lowering("aten::stack", lower_stack);
}

}  // namespace aotc::ops
