// Ops that only change how the same bytes are seen: flatten, unflatten, view, reshape,
// squeeze, unsqueeze, contiguous, detach, alias, and dropout in eval mode (clone copies).
// Every tensor aotc computes is dense (strided_view.h materialises the views that are not),
// so these are aliases in the IR and cost nothing at run time.
#include "op_helpers.h"

namespace aotc::ops {
namespace {

void set_view(LowerContext& ctx, ir::Shape shape) {
  ctx.set_tensor_output(0, ctx.graph.add_alias(ctx.tensor(0), std::move(shape)));
}

// Resolves one -1 in a requested shape, as view and reshape do.
ir::Shape infer_shape(const LowerContext& ctx, std::vector<int64_t> shape, int64_t count) {
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) ctx.fail("only one dimension can be -1 in " + ir::shape_str(shape));
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      ctx.fail("invalid dimension " + std::to_string(shape[i]) + " in " + ir::shape_str(shape));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || count % known)
      ctx.fail("shape " + ir::shape_str(shape) + " is invalid for " + std::to_string(count) + " elements");
    shape[static_cast<size_t>(infer)] = count / known;
  }
  if (ir::numel(shape) != count)
    ctx.fail("shape " + ir::shape_str(shape) + " is invalid for " + std::to_string(count) +
             " elements (input " + ir::shape_str(ctx.value(0).shape) + ")");
  return shape;
}

void lower_reshape(LowerContext& ctx) {
  set_view(ctx, infer_shape(ctx, ctx.ints_arg(1), ir::numel(ctx.value(0).shape)));
}

void lower_reshape_as(LowerContext& ctx) {
  set_view(ctx, infer_shape(ctx, ctx.value(1).shape, ir::numel(ctx.value(0).shape)));
}

// flatten(self, start_dim=0, end_dim=-1)
void lower_flatten(LowerContext& ctx) {
  const ir::Shape x = ctx.value(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank == 0) return set_view(ctx, {1});
  const int64_t start = normalize_dim(ctx, ctx.num_inputs() > 1 ? ctx.int_arg(1) : 0, rank);
  const int64_t end = normalize_dim(ctx, ctx.num_inputs() > 2 ? ctx.int_arg(2) : -1, rank);
  if (start > end)
    ctx.fail("flatten start_dim " + std::to_string(start) + " is after end_dim " + std::to_string(end));
  ir::Shape y(x.begin(), x.begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= x[static_cast<size_t>(d)];
  y.push_back(merged);
  y.insert(y.end(), x.begin() + end + 1, x.end());
  set_view(ctx, y);
}

// squeeze(self), squeeze(self, dim), squeeze(self, dims)
void lower_squeeze(LowerContext& ctx) {
  const ir::Shape x = ctx.value(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<bool> drop(x.size(), false);
  if (ctx.num_inputs() < 2 || ctx.is_none(1)) {
    for (size_t d = 0; d < x.size(); ++d) drop[d] = x[d] == 1;
  } else {
    for (int64_t dim : ctx.ints_arg(1)) {
      if (rank == 0) continue;
      const int64_t d = normalize_dim(ctx, dim, rank);
      drop[static_cast<size_t>(d)] = x[static_cast<size_t>(d)] == 1;
    }
  }
  ir::Shape y;
  for (size_t d = 0; d < x.size(); ++d)
    if (!drop[d]) y.push_back(x[d]);
  set_view(ctx, y);
}

// unflatten(self, dim, sizes): dim becomes sizes (one of them may be -1).
void lower_unflatten(LowerContext& ctx) {
  const ir::Shape x = ctx.value(0).shape;
  if (x.empty()) ctx.fail("unflatten() cannot be applied to a 0-dim tensor");
  const int64_t d = normalize_dim(ctx, ctx.int_arg(1), static_cast<int64_t>(x.size()));
  const std::vector<int64_t> sizes = ctx.ints_arg(2);
  if (sizes.empty()) ctx.fail("unflatten: sizes must be non-empty");
  const ir::Shape inner = infer_shape(ctx, sizes, x[static_cast<size_t>(d)]);
  ir::Shape y(x.begin(), x.begin() + d);
  y.insert(y.end(), inner.begin(), inner.end());
  y.insert(y.end(), x.begin() + d + 1, x.end());
  set_view(ctx, y);
}

void lower_unsqueeze(LowerContext& ctx) {
  ir::Shape y = ctx.value(0).shape;
  const int64_t d = normalize_dim(ctx, ctx.int_arg(1), static_cast<int64_t>(y.size()) + 1);
  y.insert(y.begin() + d, 1);
  set_view(ctx, y);
}

void lower_identity(LowerContext& ctx) { set_view(ctx, ctx.value(0).shape); }

// clone() is a new tensor in torch (unlike contiguous() of a dense tensor, which is the same
// one): a real copy keeps an in-place update of the clone from reaching the original.
void lower_clone(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  const int out = ctx.new_value(x.dtype, x.shape);
  ir::Op& op = ctx.add_op(ir::kind::copy, {ctx.tensor(0)}, {out});
  op.attrs = {{"dims", x.shape},
              {"src_strides", dense_strides(x.shape)},
              {"dst_strides", dense_strides(x.shape)},
              {"elem_size", ir::dtype_size(x.dtype)}};
  ctx.set_tensor_output(0, out);
}

// dropout(input, p, train): identity in eval mode.
void lower_dropout(LowerContext& ctx) {
  if (ctx.bool_arg(2)) ctx.fail("dropout in training mode is not supported; call model.eval() before saving");
  lower_identity(ctx);
}

}  // namespace

void register_views(Registry& r) {
  r.add_lowering("aten::view", lower_reshape);
  r.add_lowering("aten::reshape", lower_reshape);
  r.add_lowering("aten::_unsafe_view", lower_reshape);
  r.add_lowering("aten::view_as", lower_reshape_as);
  r.add_lowering("aten::reshape_as", lower_reshape_as);
  r.add_lowering("aten::flatten", lower_flatten);
  r.add_lowering("aten::unflatten", lower_unflatten);
  r.add_lowering("aten::squeeze", lower_squeeze);
  r.add_lowering("aten::squeeze_", lower_squeeze);
  r.add_lowering("aten::unsqueeze", lower_unsqueeze);
  r.add_lowering("aten::unsqueeze_", lower_unsqueeze);
  // The _copy variants (what functionalized graphs hold) compute the same values.
  r.add_lowering("aten::view_copy", lower_reshape);
  r.add_lowering("aten::squeeze_copy", lower_squeeze);
  r.add_lowering("aten::unsqueeze_copy", lower_unsqueeze);
  r.add_lowering("aten::alias_copy", lower_identity);
  r.add_lowering("aten::contiguous", lower_identity);
  r.add_lowering("aten::clone", lower_clone);
  r.add_lowering("aten::detach", lower_identity);
  r.add_lowering("aten::detach_", lower_identity);
  r.add_lowering("aten::alias", lower_identity);
  r.add_lowering("aten::lift_fresh", lower_identity);
  r.add_lowering("aten::dropout", lower_dropout);
  r.add_lowering("aten::dropout_", lower_dropout);
  r.add_lowering("aten::feature_dropout", lower_dropout);
  r.add_lowering("aten::alpha_dropout", lower_dropout);
}

}  // namespace aotc::ops
