// aten::linalg_cross(self, other, dim=-1) and aten::cross(self, other, dim=None): cross
// products of 3-vectors along dim, the other dims broadcast: with the components rolled
// one and two places, roll(a, -1) roll(b, -2) - roll(a, -2) roll(b, -1) (flip_roll.cpp,
// binary.cpp). aten::cross without dim takes the first dim of size 3, as torch does.
#include "op_helpers.h"

namespace aotc::ops {
namespace {

void lower_cross(LowerContext& ctx) {
  const ir::Shape& a = ctx.value(0).shape;
  const ir::Shape& b = ctx.value(1).shape;
  if (a.size() != b.size())
    ctx.fail("the operands must have the same number of dims, got " + ir::shape_str(a) + " and " +
             ir::shape_str(b));
  const int64_t rank = static_cast<int64_t>(a.size());
  int64_t dim = -1;
  if (ctx.num_inputs() > 2 && !ctx.is_none(2)) {
    dim = normalize_dim(ctx, ctx.int_arg(2), rank);
  } else if (ctx.op_name == "aten::cross") {
    for (int64_t d = 0; d < rank && dim < 0; ++d)
      if (a[static_cast<size_t>(d)] == 3) dim = d;
    if (dim < 0) ctx.fail("no dim of size 3 in " + ir::shape_str(a));
  } else {
    dim = normalize_dim(ctx, -1, rank);
  }
  if (rank == 0 || a[static_cast<size_t>(dim)] != 3 || b[static_cast<size_t>(dim)] != 3)
    ctx.fail("dim " + std::to_string(dim) + " must have size 3 in both operands, got " + ir::shape_str(a) +
             " and " + ir::shape_str(b));
  broadcast_shapes(ctx, a, b);  // (fails naming both shapes)
  const auto rolled = [&](size_t operand, int64_t shift) {
    return lower_as(
        ctx, "aten::roll",
        {Operand::of_tensor(ctx.tensor(operand)), Operand::of_ints({shift}), Operand::of_ints({dim})});
  };
  const auto mul = [&](int x, int y) {
    return lower_as(ctx, "aten::mul", {Operand::of_tensor(x), Operand::of_tensor(y)});
  };
  const int first = mul(rolled(0, -1), rolled(1, -2)), second = mul(rolled(0, -2), rolled(1, -1));
  ctx.set_tensor_output(
      0, lower_as(ctx, "aten::sub",
                  {Operand::of_tensor(first), Operand::of_tensor(second), Operand::of_int(1)}));
}

}  // namespace

void register_cross(Registry& r) {
  r.add_lowering("aten::linalg_cross", lower_cross);
  r.add_lowering("aten::cross", lower_cross);
}

}  // namespace aotc::ops
