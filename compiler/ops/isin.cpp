// isin.cpp: aten::isin(elements, test_elements, *, assume_unique=False, invert=False) (and
// its Tensor_Scalar and Scalar_Tensor forms) -> whether each element equals any test
// element: every element compared with every test element (a broadcast comparison, then an
// any over the test elements: compare.cpp, reduce.cpp), so it costs elements x test
// elements of bool memory; invert negates. Values compare in their promoted dtype (NaN
// equals nothing, as in torch).
#include "elementwise.h"

namespace aotc::ops {
namespace {

void lower_isin(LowerContext& ctx) {
  const ElemArg elements = elem_arg(ctx, 0), tests = elem_arg(ctx, 1);
  const ir::DType type = result_type({elements, tests});
  const int x = as_dtype(ctx, elements, type);
  const int t = lower_as(ctx, "aten::reshape",
                         {Operand::of_tensor(as_dtype(ctx, tests, type)), Operand::of_ints({-1})});
  const int64_t rank = static_cast<int64_t>(ctx.graph.value(x).shape.size());
  const int spread = lower_as(ctx, "aten::unsqueeze", {Operand::of_tensor(x), Operand::of_int(rank)});
  const int equal = lower_as(ctx, "aten::eq", {Operand::of_tensor(spread), Operand::of_tensor(t)});
  int found =
      lower_as(ctx, "aten::any", {Operand::of_tensor(equal), Operand::of_int(rank), Operand::of_bool(false)});
  if (ctx.num_inputs() > 3 && ctx.bool_arg(3))
    found = lower_as(ctx, "aten::logical_not", {Operand::of_tensor(found)});
  ctx.set_tensor_output(0, found);
}

}  // namespace

void register_isin(Registry& r) { r.add_lowering("aten::isin", lower_isin); }

}  // namespace aotc::ops
