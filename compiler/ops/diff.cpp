// aten::diff(self, n=1, dim=-1, prepend=None, append=None): the n-th forward difference along
// dim of prepend, self and append concatenated there: n times x[1:] - x[:-1] (logical xor for
// bool, as torch), each step two slices and one binary op (cat.cpp, slice.cpp, binary.cpp).
#include "op_helpers.h"

namespace aotc::ops {
namespace {

void lower_diff(LowerContext& ctx) {
  const ir::Value& self = ctx.value(0);
  const int64_t rank = static_cast<int64_t>(self.shape.size());
  if (rank == 0) ctx.fail("diff expects a tensor of at least 1 dimension, got a 0-d one");
  const int64_t n = ctx.num_inputs() > 1 && !ctx.is_none(1) ? ctx.int_arg(1) : 1;
  if (n < 0) ctx.fail("order n must be non-negative, got " + std::to_string(n));
  const int64_t dim = normalize_dim(ctx, ctx.num_inputs() > 2 && !ctx.is_none(2) ? ctx.int_arg(2) : -1, rank);
  std::vector<int> parts;
  if (!ctx.is_none(3)) parts.push_back(ctx.tensor(3));
  parts.push_back(ctx.tensor(0));
  if (!ctx.is_none(4)) parts.push_back(ctx.tensor(4));
  int x = parts.size() == 1 ? parts[0]
                            : lower_as(ctx, "aten::cat", {Operand::of_tensors(parts), Operand::of_int(dim)});
  const bool boolean = ctx.graph.value(x).dtype == ir::DType::Bool;
  for (int64_t step = 0; step < n; ++step) {
    const int64_t length = ctx.graph.value(x).shape[static_cast<size_t>(dim)];
    if (length == 0) break;  // (differences of nothing stay empty)
    const auto slice = [&](int64_t start, int64_t end) {
      return lower_as(ctx, "aten::slice",
                      {Operand::of_tensor(x), Operand::of_int(dim), Operand::of_int(start),
                       Operand::of_int(end), Operand::of_int(1)});
    };
    const int later = slice(1, length), earlier = slice(0, length - 1);
    x = boolean ? lower_as(ctx, "aten::logical_xor", {Operand::of_tensor(later), Operand::of_tensor(earlier)})
                : lower_as(ctx, "aten::sub",
                           {Operand::of_tensor(later), Operand::of_tensor(earlier), Operand::of_int(1)});
  }
  ctx.set_tensor_output(0, x);
}

}  // namespace

void register_diff(Registry& r) { r.add_lowering("aten::diff", lower_diff); }

}  // namespace aotc::ops
