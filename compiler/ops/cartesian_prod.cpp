// cartesian_prod.cpp: aten::cartesian_prod(tensors) -> every combination of the 1-d tensors'
// values, one row each, the last tensor varying fastest (itertools.product's order): each
// tensor viewed along its own dim of the grid, expanded over it, flattened (views.cpp,
// expand.cpp), the columns stacked (cat.cpp). One tensor is returned as it is.
#include "elementwise.h"

namespace aotc::ops {
namespace {

void lower_cartesian_prod(LowerContext& ctx) {
  const std::vector<int>& tensors = tensor_list_arg(ctx);
  std::vector<int64_t> grid;
  std::vector<ElemArg> args;
  for (int t : tensors) {
    const ir::Shape& s = ctx.graph.value(t).shape;
    if (s.size() != 1) ctx.fail("cartesian_prod takes 1-d tensors, got " + ir::shape_str(s));
    grid.push_back(s[0]);
    args.push_back(elem_tensor(ctx, t));
  }
  if (tensors.size() == 1) {
    ctx.set_tensor_output(0, tensors[0]);
    return;
  }
  const ir::DType type = result_type(args);
  std::vector<int> columns;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<int64_t> along(grid.size(), 1);
    along[i] = grid[i];
    const int view = lower_as(ctx, "aten::reshape",
                              {Operand::of_tensor(as_dtype(ctx, args[i], type)), Operand::of_ints(along)});
    const int full = lower_as(ctx, "aten::expand",
                              {Operand::of_tensor(view), Operand::of_ints(grid), Operand::of_bool(false)});
    columns.push_back(lower_as(ctx, "aten::reshape", {Operand::of_tensor(full), Operand::of_ints({-1})}));
  }
  ctx.set_tensor_output(0, lower_as(ctx, "aten::stack", {Operand::of_tensors(columns), Operand::of_int(1)}));
}

}  // namespace

void register_cartesian_prod(Registry& r) { r.add_lowering("aten::cartesian_prod", lower_cartesian_prod); }

}  // namespace aotc::ops
