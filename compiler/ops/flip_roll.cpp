// flip and rot90 (views with negative strides, one copy) and roll (an assembly of up to 2^k
// pieces for k rolled dims: each dim splits into the part that wraps and the rest).
#include "assemble.h"

namespace aotc::ops {
namespace {

std::vector<int64_t> unique_dims(const LowerContext& ctx, const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    const int64_t n = normalize_dim(ctx, d, rank);
    if (std::find(out.begin(), out.end(), n) != out.end())
      ctx.fail("dim " + std::to_string(n) + " appears twice");
    out.push_back(n);
  }
  return out;
}

void lower_flip(LowerContext& ctx) {
  StridedView v = view_of(ctx.graph, ctx.tensor(0));
  for (int64_t d : unique_dims(ctx, ctx.ints_arg(1), v.rank())) v = flip_view(v, d);
  set_view_output(ctx, v);
}

// fliplr (dim 1) and flipud (dim 0).
void flip_dim(LowerContext& ctx, int64_t dim, int64_t min_rank) {
  StridedView v = view_of(ctx.graph, ctx.tensor(0));
  if (v.rank() < min_rank)
    ctx.fail("expects a tensor of at least " + std::to_string(min_rank) + " dimensions");
  set_view_output(ctx, flip_view(v, dim));
}
void lower_fliplr(LowerContext& ctx) { flip_dim(ctx, 1, 2); }
void lower_flipud(LowerContext& ctx) { flip_dim(ctx, 0, 1); }

// roll(self, shifts, dims=[]): without dims, the flattened tensor rolls and keeps its shape.
void lower_roll(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  const std::vector<int64_t> shifts = ctx.ints_arg(1);
  std::vector<int64_t> dims =
      ctx.num_inputs() > 2 && !ctx.is_none(2) ? ctx.ints_arg(2) : std::vector<int64_t>{};
  StridedView src = view_of(ctx.graph, ctx.tensor(0));
  ir::Shape shape = x.shape;
  const bool flat = dims.empty();
  if (flat) {
    if (shifts.size() != 1)
      ctx.fail("roll without dims takes exactly one shift, got " + ir::shape_str(shifts));
    shape = {ir::numel(x.shape)};
    src = view_of(ctx.graph, ctx.graph.add_alias(ctx.tensor(0), shape));
    dims = {0};
  }
  if (shifts.size() != dims.size())
    ctx.fail("shifts " + ir::shape_str(shifts) + " and dims " + ir::shape_str(dims) + " differ in length");
  dims = unique_dims(ctx, dims, static_cast<int64_t>(shape.size()));
  // Per rolled dim: the output starts with the last `s` elements, then the first size - s.
  std::vector<int64_t> shift(shape.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t size = shape[static_cast<size_t>(dims[i])];
    shift[static_cast<size_t>(dims[i])] = size == 0 ? 0 : ((shifts[i] % size) + size) % size;
  }
  Assembly a;
  a.dtype = x.dtype;
  a.shape = shape;
  for (int64_t combo = 0; combo < (int64_t{1} << dims.size()); ++combo) {
    StridedView piece = src;
    std::vector<int64_t> starts(shape.size(), 0);
    for (size_t i = 0; i < dims.size(); ++i) {
      const int64_t d = dims[i], size = shape[static_cast<size_t>(d)], s = shift[static_cast<size_t>(d)];
      if ((combo >> i) & 1) {  // the head of x moves to [s, size)
        piece = slice_view(piece, d, 0, size - s, 1);
        starts[static_cast<size_t>(d)] = s;
      } else {  // the tail of x wraps to [0, s)
        piece = slice_view(piece, d, size - s, s, 1);
      }
    }
    a.pieces.push_back(region_piece(piece, shape, starts));
  }
  int out = add_assembly(ctx, a);
  if (flat) out = ctx.graph.add_alias(out, x.shape);
  ctx.set_tensor_output(0, out);
}

// rot90(self, k=1, dims=[0, 1]): flips and a transpose of the two dims, as torch builds it.
void lower_rot90(LowerContext& ctx) {
  StridedView v = view_of(ctx.graph, ctx.tensor(0));
  const int64_t k = ctx.num_inputs() > 1 ? ctx.int_arg(1) : 1;
  const std::vector<int64_t> dims_arg = ctx.num_inputs() > 2 ? ctx.ints_arg(2) : std::vector<int64_t>{0, 1};
  if (dims_arg.size() != 2 || v.rank() < 2)
    ctx.fail("rot90 needs two dims and a tensor of at least 2 dimensions");
  const std::vector<int64_t> dims = unique_dims(ctx, dims_arg, v.rank());
  std::vector<int64_t> order(static_cast<size_t>(v.rank()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::swap(order[static_cast<size_t>(dims[0])], order[static_cast<size_t>(dims[1])]);
  switch (((k % 4) + 4) % 4) {
    case 1:
      v = permute_view(flip_view(v, dims[1]), order);
      break;
    case 2:
      v = flip_view(flip_view(v, dims[0]), dims[1]);
      break;
    case 3:
      v = permute_view(flip_view(v, dims[0]), order);
      break;
    default:
      break;
  }
  set_view_output(ctx, v);
}

}  // namespace

void register_flip_roll(Registry& r) {
  r.add_lowering("aten::flip", lower_flip);
  r.add_lowering("aten::fliplr", lower_fliplr);
  r.add_lowering("aten::flipud", lower_flipud);
  r.add_lowering("aten::roll", lower_roll);
  r.add_lowering("aten::rot90", lower_rot90);
}

}  // namespace aotc::ops
