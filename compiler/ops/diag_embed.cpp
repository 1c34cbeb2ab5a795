// diag_embed.cpp: aten::diag_embed(self, offset=0, dim1=-2, dim2=-1), aten::diagflat(self,
// offset=0) and aten::diag(self, diagonal=0): a vector laid on a diagonal of a square matrix
// of zeros (diag of a 2-d tensor is its diagonal: diagonal_unfold.cpp's view, copied). The
// matrix is a selection (where.cpp) between the vector, padded to the side and broadcast
// along rows (offset >= 0: row i holds x[i]) or columns, and zeros, on a constant mask of
// the diagonal: exact for every dtype, infinities and NaNs off the diagonal stay off it.
#include <cstring>

#include "elementwise.h"

namespace aotc::ops {
namespace {

// x [.., n] on diagonal `offset` of [.., n + |offset|, n + |offset|].
int embed(LowerContext& ctx, int x, int64_t offset) {
  const ir::Value& v = ctx.graph.value(x);
  if (v.shape.empty()) ctx.fail("needs a tensor of at least 1 dimension, got a 0-d one");
  const int64_t n = v.shape.back(), size = n + (offset < 0 ? -offset : offset);
  const int64_t rank = static_cast<int64_t>(v.shape.size());
  int padded = x;
  if (size != n) {
    padded = lower_as(ctx, "aten::constant_pad_nd",
                      {Operand::of_tensor(x), Operand::of_ints({0, size - n}), Operand::of_double(0.0)});
  }
  // offset >= 0: entry (i, i + offset) holds x[i], by row (padded as a column, broadcast
  // along the rows); offset < 0: entry (j - offset, j) holds x[j], by column.
  const int spread = lower_as(ctx, "aten::unsqueeze",
                              {Operand::of_tensor(padded), Operand::of_int(offset >= 0 ? rank : rank - 1)});
  std::vector<uint8_t> mask(static_cast<size_t>(size * size), 0);
  for (int64_t i = 0; i < size; ++i)
    if (i + offset >= 0 && i + offset < size) mask[static_cast<size_t>(i * size + i + offset)] = 1;
  const int on_diagonal =
      ctx.graph.add_constant(ir::DType::Bool, {size, size}, std::move(mask), "diagonal_mask");
  return add_where_op(ctx, on_diagonal, spread, constant_scalar(ctx.graph, v.dtype, 0.0));
}

void lower_diag_embed(LowerContext& ctx) {
  const int64_t offset = ctx.num_inputs() > 1 ? ctx.int_arg(1) : 0;
  const int64_t out_rank = static_cast<int64_t>(ctx.value(0).shape.size()) + 1;
  const int64_t dim1 = normalize_dim(ctx, ctx.num_inputs() > 2 ? ctx.int_arg(2) : -2, out_rank);
  const int64_t dim2 = normalize_dim(ctx, ctx.num_inputs() > 3 ? ctx.int_arg(3) : -1, out_rank);
  if (dim1 != out_rank - 2 || dim2 != out_rank - 1)
    ctx.fail("diag_embed into dims other than the last two (dim1=-2, dim2=-1) is not supported, got dim1=" +
             std::to_string(dim1) + ", dim2=" + std::to_string(dim2));
  ctx.set_tensor_output(0, embed(ctx, ctx.tensor(0), offset));
}

void lower_diagflat(LowerContext& ctx) {
  const int flat =
      lower_as(ctx, "aten::reshape", {Operand::of_tensor(ctx.tensor(0)), Operand::of_ints({-1})});
  ctx.set_tensor_output(0, embed(ctx, flat, ctx.num_inputs() > 1 ? ctx.int_arg(1) : 0));
}

void lower_diag(LowerContext& ctx) {
  const size_t rank = ctx.value(0).shape.size();
  const int64_t k = ctx.num_inputs() > 1 ? ctx.int_arg(1) : 0;
  if (rank == 1) {
    ctx.set_tensor_output(0, embed(ctx, ctx.tensor(0), k));
    return;
  }
  if (rank != 2) ctx.fail("diag takes a 1-d or 2-d tensor, got " + ir::shape_str(ctx.value(0).shape));
  const int view = lower_as(
      ctx, "aten::diagonal",
      {Operand::of_tensor(ctx.tensor(0)), Operand::of_int(k), Operand::of_int(0), Operand::of_int(1)});
  ctx.set_tensor_output(0, lower_as(ctx, "aten::clone", {Operand::of_tensor(view), Operand::none()}));
}

}  // namespace

void register_diag_embed(Registry& r) {
  r.add_lowering("aten::diag_embed", lower_diag_embed);
  r.add_lowering("aten::diagflat", lower_diagflat);
  r.add_lowering("aten::diag", lower_diag);
}

}  // namespace aotc::ops
