// permute, transpose, t, mT, .T, movedim, swapaxes: strided views (strided_view.h) that
// reorder dims; materialised by one copy_strided, or none when the order is the identity.
#include "strided_view.h"

namespace aotc::ops {
namespace {

void add_permute(LowerContext& ctx, const std::vector<int64_t>& order) {
  set_view_output(ctx, permute_view(view_of(ctx.graph, ctx.tensor(0)), order));
}

std::vector<int64_t> identity_order(int64_t rank) {
  std::vector<int64_t> order(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) order[static_cast<size_t>(i)] = i;
  return order;
}

int64_t rank_of(const LowerContext& ctx) { return static_cast<int64_t>(ctx.value(0).shape.size()); }

void lower_permute(LowerContext& ctx) {
  const int64_t rank = rank_of(ctx);
  std::vector<int64_t> order = ctx.ints_arg(1);
  if (static_cast<int64_t>(order.size()) != rank)
    ctx.fail("permutation " + ir::shape_str(order) + " does not match rank " + std::to_string(rank));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& d : order) {
    d = normalize_dim(ctx, d, rank);
    if (seen[static_cast<size_t>(d)]) ctx.fail("dimension repeated in permutation " + ir::shape_str(order));
    seen[static_cast<size_t>(d)] = true;
  }
  add_permute(ctx, order);
}

// Swaps two dims (transpose, swapaxes, swapdims).
void lower_transpose(LowerContext& ctx) {
  const int64_t rank = rank_of(ctx);
  std::vector<int64_t> order = identity_order(rank);
  if (rank > 0)
    std::swap(order[static_cast<size_t>(normalize_dim(ctx, ctx.int_arg(1), rank))],
              order[static_cast<size_t>(normalize_dim(ctx, ctx.int_arg(2), rank))]);
  add_permute(ctx, order);
}

void lower_t(LowerContext& ctx) {
  const int64_t rank = rank_of(ctx);
  if (rank > 2) ctx.fail("t() expects a tensor with at most 2 dimensions, got " + std::to_string(rank));
  add_permute(ctx, rank == 2 ? std::vector<int64_t>{1, 0} : identity_order(rank));
}

// x.mT, x.mH and x.adjoint() (real tensors): the last two dims swapped.
void lower_matrix_transpose(LowerContext& ctx) {
  const int64_t rank = rank_of(ctx);
  if (rank < 2) ctx.fail("expects a tensor with at least 2 dimensions, got " + std::to_string(rank));
  std::vector<int64_t> order = identity_order(rank);
  std::swap(order[static_cast<size_t>(rank - 1)], order[static_cast<size_t>(rank - 2)]);
  add_permute(ctx, order);
}

// x.T: all dims reversed.
void lower_numpy_t(LowerContext& ctx) {
  std::vector<int64_t> order = identity_order(rank_of(ctx));
  std::reverse(order.begin(), order.end());
  add_permute(ctx, order);
}

// movedim(self, source, destination), int or int[]: the moved dims land at their
// destinations, the others keep their relative order in the remaining places.
void lower_movedim(LowerContext& ctx) {
  const int64_t rank = rank_of(ctx);
  std::vector<int64_t> src = ctx.ints_arg(1), dst = ctx.ints_arg(2);
  if (src.size() != dst.size())
    ctx.fail("movedim: source " + ir::shape_str(src) + " and destination " + ir::shape_str(dst) +
             " differ in length");
  std::vector<int64_t> order(static_cast<size_t>(rank), -1);
  std::vector<bool> used(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < src.size(); ++i) {
    const int64_t s = normalize_dim(ctx, src[i], rank), d = normalize_dim(ctx, dst[i], rank);
    if (used[static_cast<size_t>(s)] || order[static_cast<size_t>(d)] >= 0)
      ctx.fail("movedim: repeated dim in source " + ir::shape_str(src) + " or destination " +
               ir::shape_str(dst));
    order[static_cast<size_t>(d)] = s;
    used[static_cast<size_t>(s)] = true;
  }
  int64_t next = 0;
  for (int64_t& o : order) {
    if (o >= 0) continue;
    while (used[static_cast<size_t>(next)]) ++next;
    o = next++;
  }
  add_permute(ctx, order);
}

}  // namespace

void register_permute(Registry& r) {
  r.add_lowering("aten::permute", lower_permute);
  r.add_lowering("aten::transpose", lower_transpose);
  r.add_lowering("aten::swapaxes", lower_transpose);
  r.add_lowering("aten::swapdims", lower_transpose);
  r.add_lowering("aten::t", lower_t);
  r.add_lowering("aten::mT", lower_matrix_transpose);
  r.add_lowering("aten::mH", lower_matrix_transpose);
  r.add_lowering("aten::adjoint", lower_matrix_transpose);
  r.add_lowering("aten::numpy_T", lower_numpy_t);
  r.add_lowering("aten::movedim", lower_movedim);
  r.add_lowering("aten::moveaxis", lower_movedim);
  r.add_lowering("aten::transpose_", lower_transpose);
  r.add_lowering("aten::t_", lower_t);
  r.add_lowering("aten::permute_copy", lower_permute);
  r.add_lowering("aten::transpose_copy", lower_transpose);
  r.add_lowering("aten::t_copy", lower_t);
}

}  // namespace aotc::ops
