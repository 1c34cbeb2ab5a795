// kron.cpp: aten::kron(self, other) -> the Kronecker product, composed of views and one
// broadcast multiplication: with both operands given the same rank (leading 1s), self as
// [a0, 1, a1, 1, ..] times other as [1, b0, 1, b1, ..] is [a0, b0, a1, b1, ..], which is the
// result [a0 b0, a1 b1, ..] read in row-major order (binary.cpp, views.cpp).
#include "op_helpers.h"

namespace aotc::ops {
namespace {

void lower_kron(LowerContext& ctx) {
  ir::Shape a = ctx.value(0).shape, b = ctx.value(1).shape;
  const size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  std::vector<int64_t> spread_a, spread_b, result;
  for (size_t d = 0; d < rank; ++d) {
    spread_a.insert(spread_a.end(), {a[d], 1});
    spread_b.insert(spread_b.end(), {1, b[d]});
    result.push_back(a[d] * b[d]);
  }
  const auto reshape = [&](int x, std::vector<int64_t> shape) {
    return lower_as(ctx, "aten::reshape", {Operand::of_tensor(x), Operand::of_ints(std::move(shape))});
  };
  const int product = lower_as(ctx, "aten::mul",
                               {Operand::of_tensor(reshape(ctx.tensor(0), spread_a)),
                                Operand::of_tensor(reshape(ctx.tensor(1), spread_b))});
  ctx.set_tensor_output(0, reshape(product, result));
}

}  // namespace

void register_kron(Registry& r) { r.add_lowering("aten::kron", lower_kron); }

}  // namespace aotc::ops
