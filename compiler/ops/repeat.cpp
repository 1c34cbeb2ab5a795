// repeat, tile and repeat_interleave: stride-0 strided views (strided_view.h) with the
// repeats as extra dims, materialised by one copy_strided and reshaped (an alias).
// repeat_interleave with a tensor of repeats needs its values at compile time (they decide
// the output shape): a constant tensor becomes an index_select with constant indices.
#include "indexing.h"

namespace aotc::ops {
namespace {

// x (shape `shape`, read through v) repeated reps[i] times along dim i, as
// [r0, s0, r1, s1, ...] without its size-1 entries, then reshaped to [r0 * s0, ...].
void repeat_view(LowerContext& ctx, const StridedView& v, const std::vector<int64_t>& reps) {
  const size_t lead = reps.size() - v.sizes.size();
  StridedView r;
  r.base = v.base;
  r.offset = v.offset;
  ir::Shape out;
  for (size_t i = 0; i < reps.size(); ++i) {
    const int64_t size = i < lead ? 1 : v.sizes[i - lead];
    const int64_t stride = i < lead ? 0 : v.strides[i - lead];
    if (reps[i] < 0) ctx.fail("repeats cannot be negative, got " + ir::shape_str(reps));
    out.push_back(reps[i] * size);
    if (reps[i] != 1) {
      r.sizes.push_back(reps[i]);
      r.strides.push_back(0);
    }
    if (size != 1) {
      r.sizes.push_back(size);
      r.strides.push_back(stride);
    }
  }
  if (r.rank() > 8)
    ctx.fail("repeating a tensor along this many non-trivial dims (" + std::to_string(r.rank()) +
             " with the repeats) is not supported; at most 8");
  ctx.set_tensor_output(0, ctx.graph.add_alias(materialize(ctx, r, -1), out));
}

// repeat(self, repeats): at least as many repeats as dims; extra repeats add leading dims.
void lower_repeat(LowerContext& ctx) {
  const StridedView v = view_of(ctx.graph, ctx.tensor(0));
  const std::vector<int64_t> reps = ctx.ints_arg(1);
  if (static_cast<int64_t>(reps.size()) < v.rank())
    ctx.fail("the number of repeats " + ir::shape_str(reps) + " cannot be smaller than the tensor's rank " +
             std::to_string(v.rank()));
  repeat_view(ctx, v, reps);
}

// tile(self, dims): fewer dims than the rank are padded with leading 1s.
void lower_tile(LowerContext& ctx) {
  const StridedView v = view_of(ctx.graph, ctx.tensor(0));
  std::vector<int64_t> reps = ctx.ints_arg(1);
  if (static_cast<int64_t>(reps.size()) < v.rank())
    reps.insert(reps.begin(), static_cast<size_t>(v.rank()) - reps.size(), 1);
  repeat_view(ctx, v, reps);
}

// repeat_interleave(self, repeats, dim=None, output_size=None)
void lower_repeat_interleave(LowerContext& ctx) {
  if (ctx.num_inputs() < 2 || ctx.arg(0).kind != Operand::Kind::Tensor ||
      !(ctx.arg(1).is_number() || ctx.arg(1).is_tensor()))
    ctx.fail(
        "repeat_interleave(repeats) without an input tensor builds indices from run-time values; aotc needs "
        "shapes known at compile time");
  int x = ctx.tensor(0);
  if (ctx.is_none(2)) x = ctx.graph.add_alias(x, {ir::numel(ctx.value(0).shape)});  // dim=None: flattened
  const ir::Shape shape = ctx.graph.value(x).shape;
  if (shape.empty()) ctx.fail("repeat_interleave of a 0-dim tensor needs dim=None");
  const int64_t dim =
      ctx.is_none(2) ? 0 : normalize_dim(ctx, ctx.int_arg(2), static_cast<int64_t>(shape.size()));
  const int64_t size = shape[static_cast<size_t>(dim)];
  std::vector<int64_t> repeats;
  if (ctx.arg(1).is_number()) {
    repeats = {ctx.int_arg(1)};
  } else {
    auto values = constant_int_values(ctx.graph, ctx.tensor(1));
    if (!values)
      ctx.fail(
          "the repeats tensor is computed at run time, so the output's shape would depend on its values; "
          "aotc needs it known at compile time (a constant, or an int)");
    repeats = *values;
  }
  for (int64_t r : repeats)
    if (r < 0) ctx.fail("repeats cannot be negative");
  if (repeats.size() == 1) {  // every element the same number of times: a stride-0 view
    StridedView v = unsqueeze_view(view_of(ctx.graph, x), dim + 1);
    ir::Shape expanded = v.sizes;
    expanded[static_cast<size_t>(dim + 1)] = repeats[0];
    ir::Shape out = shape;
    out[static_cast<size_t>(dim)] = size * repeats[0];
    ctx.set_tensor_output(0, ctx.graph.add_alias(materialize(ctx, expand_view(v, expanded), -1), out));
    return;
  }
  if (static_cast<int64_t>(repeats.size()) != size)
    ctx.fail("repeats has " + std::to_string(repeats.size()) + " values for a dimension of size " +
             std::to_string(size));
  std::vector<int64_t> index;
  for (int64_t i = 0; i < size; ++i)
    index.insert(index.end(), static_cast<size_t>(repeats[static_cast<size_t>(i)]), i);
  ctx.set_tensor_output(0, index_select_constant(ctx, x, dim, index));
}

}  // namespace

void register_repeat(Registry& r) {
  r.add_lowering("aten::repeat", lower_repeat);
  r.add_lowering("aten::tile", lower_tile);
  r.add_lowering("aten::repeat_interleave", lower_repeat_interleave);
}

}  // namespace aotc::ops
