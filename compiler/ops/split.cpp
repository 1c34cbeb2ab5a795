// chunk, split, split_with_sizes, tensor_split, hsplit/vsplit/dsplit (and the unsafe_
// forms, the same in inference) and unbind: lists of slices or selects of one dim, each a
// strided view (strided_view.h). Parts along the outermost non-trivial dim are aliases;
// others are one copy each.
#include "strided_view.h"

namespace aotc::ops {
namespace {

// Outputs the list of slices [starts[i], starts[i] + sizes[i]) along dim.
void set_parts(LowerContext& ctx, int64_t dim, const std::vector<int64_t>& starts,
               const std::vector<int64_t>& sizes) {
  const StridedView x = view_of(ctx.graph, ctx.tensor(0));
  std::vector<int> parts;
  for (size_t i = 0; i < sizes.size(); ++i)
    parts.push_back(materialize(ctx, slice_view(x, dim, starts[i], sizes[i], 1), ctx.tensor(0)));
  ctx.set_output(0, Operand::of_tensors(parts));
}

void set_sized_parts(LowerContext& ctx, int64_t dim, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> starts;
  int64_t at = 0;
  for (int64_t s : sizes) {
    starts.push_back(at);
    at += s;
  }
  set_parts(ctx, dim, starts, sizes);
}

struct DimInfo {
  int64_t dim, size;
};
DimInfo dim_arg(const LowerContext& ctx, size_t i, int64_t fallback = 0) {
  const ir::Shape& shape = ctx.value(0).shape;
  if (shape.empty()) ctx.fail("cannot split a 0-dim tensor");
  const int64_t dim = normalize_dim(ctx, ctx.num_inputs() > i ? ctx.int_arg(i) : fallback,
                                    static_cast<int64_t>(shape.size()));
  return {dim, shape[static_cast<size_t>(dim)]};
}

// Parts of split_size each, the last one smaller (torch's split).
std::vector<int64_t> even_split(const LowerContext& ctx, int64_t size, int64_t split_size) {
  if (split_size < 0 || (split_size == 0 && size > 0))
    ctx.fail("split_size must be positive for a dimension of size " + std::to_string(size) + ", got " +
             std::to_string(split_size));
  const int64_t count = split_size == 0 ? 1 : std::max<int64_t>((size + split_size - 1) / split_size, 1);
  std::vector<int64_t> sizes(static_cast<size_t>(count), split_size);
  sizes.back() = size - split_size * (count - 1);
  return sizes;
}

// chunk(self, chunks, dim=0)
void lower_chunk(LowerContext& ctx) {
  const int64_t chunks = ctx.int_arg(1);
  if (chunks <= 0) ctx.fail("chunk expects `chunks` to be greater than 0, got " + std::to_string(chunks));
  const DimInfo d = dim_arg(ctx, 2);
  const int64_t split_size = (d.size + chunks - 1) / chunks;
  if (d.size == 0) return set_sized_parts(ctx, d.dim, std::vector<int64_t>(static_cast<size_t>(chunks), 0));
  set_sized_parts(ctx, d.dim, even_split(ctx, d.size, split_size));
}

// split(self, int split_size | int[] split_sizes, dim=0), split_with_sizes(self, sizes, dim)
void lower_split(LowerContext& ctx) {
  const DimInfo d = dim_arg(ctx, 2);
  if (ctx.arg(1).kind == Operand::Kind::Int)
    return set_sized_parts(ctx, d.dim, even_split(ctx, d.size, ctx.int_arg(1)));
  const std::vector<int64_t> sizes = ctx.ints_arg(1);
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) ctx.fail("split sizes must be non-negative, got " + ir::shape_str(sizes));
    total += s;
  }
  if (total != d.size)
    ctx.fail("split sizes " + ir::shape_str(sizes) + " do not sum to the dimension's size " +
             std::to_string(d.size));
  set_sized_parts(ctx, d.dim, sizes);
}

// Parts between cut points, cut points clamped as slice bounds are.
void set_cut_parts(LowerContext& ctx, const DimInfo& d, const std::vector<int64_t>& cuts) {
  std::vector<int64_t> starts, sizes;
  int64_t prev = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    int64_t start = prev;
    const int64_t end = i < cuts.size() ? cuts[i] : d.size;
    sizes.push_back(clamp_slice(d.size, start, end, 1));
    starts.push_back(start);
    prev = end;
  }
  set_parts(ctx, d.dim, starts, sizes);
}

// tensor_split(self, int sections | int[] indices, dim=0): sections need not divide the size.
void lower_tensor_split(LowerContext& ctx) {
  const DimInfo d = dim_arg(ctx, 2);
  if (ctx.arg(1).kind != Operand::Kind::Int) return set_cut_parts(ctx, d, ctx.ints_arg(1));
  const int64_t sections = ctx.int_arg(1);
  if (sections <= 0) ctx.fail("number of sections must be larger than 0, got " + std::to_string(sections));
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < sections; ++i) sizes.push_back(d.size / sections + (i < d.size % sections ? 1 : 0));
  set_sized_parts(ctx, d.dim, sizes);
}

// hsplit (dim 1, or 0 for 1-d), vsplit (dim 0), dsplit (dim 2): an int must divide the size.
void split_on(LowerContext& ctx, int64_t dim) {
  const DimInfo d{dim, ctx.value(0).shape.at(static_cast<size_t>(dim))};
  if (ctx.arg(1).kind != Operand::Kind::Int) return set_cut_parts(ctx, d, ctx.ints_arg(1));
  const int64_t sections = ctx.int_arg(1);
  if (sections <= 0 || d.size % sections)
    ctx.fail("dimension of size " + std::to_string(d.size) + " cannot be split into " +
             std::to_string(sections) + " equal sections");
  set_sized_parts(ctx, d.dim, std::vector<int64_t>(static_cast<size_t>(sections), d.size / sections));
}
void lower_hsplit(LowerContext& ctx) {
  const size_t rank = ctx.value(0).shape.size();
  if (rank < 1) ctx.fail("hsplit needs a tensor with at least 1 dimension");
  split_on(ctx, rank == 1 ? 0 : 1);
}
void lower_vsplit(LowerContext& ctx) {
  if (ctx.value(0).shape.size() < 2) ctx.fail("vsplit needs a tensor with at least 2 dimensions");
  split_on(ctx, 0);
}
void lower_dsplit(LowerContext& ctx) {
  if (ctx.value(0).shape.size() < 3) ctx.fail("dsplit needs a tensor with at least 3 dimensions");
  split_on(ctx, 2);
}

// unbind(self, dim=0): every index of dim, selected.
void lower_unbind(LowerContext& ctx) {
  const DimInfo d = dim_arg(ctx, 1);
  const StridedView x = view_of(ctx.graph, ctx.tensor(0));
  std::vector<int> parts;
  for (int64_t i = 0; i < d.size; ++i)
    parts.push_back(materialize(ctx, select_view(x, d.dim, i), ctx.tensor(0)));
  ctx.set_output(0, Operand::of_tensors(parts));
}

}  // namespace

void register_split(Registry& r) {
  r.add_lowering("aten::chunk", lower_chunk);
  r.add_lowering("aten::unsafe_chunk", lower_chunk);
  r.add_lowering("aten::split", lower_split);
  r.add_lowering("aten::split_with_sizes", lower_split);
  r.add_lowering("aten::unsafe_split", lower_split);
  r.add_lowering("aten::unsafe_split_with_sizes", lower_split);
  r.add_lowering("aten::tensor_split", lower_tensor_split);
  r.add_lowering("aten::hsplit", lower_hsplit);
  r.add_lowering("aten::vsplit", lower_vsplit);
  r.add_lowering("aten::dsplit", lower_dsplit);
  r.add_lowering("aten::unbind", lower_unbind);
  r.add_lowering("aten::split_copy", lower_split);
  r.add_lowering("aten::split_with_sizes_copy", lower_split);
  r.add_lowering("aten::unbind_copy", lower_unbind);
}

}  // namespace aotc::ops
