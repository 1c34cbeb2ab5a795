// block_diag.cpp: aten::block_diag(tensors) -> the tensors (0-d, 1-d or 2-d, read as 1 x 1,
// 1 x n and m x n blocks) on the diagonal of a matrix of zeros: each block padded with
// zeros to the left and right (pad.cpp), the padded rows concatenated (cat.cpp), in the
// promoted dtype of the tensors.
#include "elementwise.h"

namespace aotc::ops {
namespace {

void lower_block_diag(LowerContext& ctx) {
  const std::vector<int>& tensors = tensor_list_arg(ctx);
  std::vector<ElemArg> args;
  int64_t columns = 0;
  for (int t : tensors) {
    const ir::Shape& s = ctx.graph.value(t).shape;
    if (s.size() > 2) ctx.fail("block_diag takes tensors of at most 2 dims, got " + ir::shape_str(s));
    columns += s.empty() ? 1 : s.back();
    args.push_back(elem_tensor(ctx, t));
  }
  const ir::DType type = result_type(args);
  std::vector<int> rows;
  int64_t left = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const ir::Shape& s = ctx.graph.value(tensors[i]).shape;
    const int64_t height = s.size() == 2 ? s[0] : 1, width = s.empty() ? 1 : s.back();
    const int block =
        lower_as(ctx, "aten::reshape",
                 {Operand::of_tensor(as_dtype(ctx, args[i], type)), Operand::of_ints({height, width})});
    rows.push_back(lower_as(ctx, "aten::constant_pad_nd",
                            {Operand::of_tensor(block), Operand::of_ints({left, columns - left - width}),
                             Operand::of_double(0.0)}));
    left += width;
  }
  ctx.set_tensor_output(0, lower_as(ctx, "aten::cat", {Operand::of_tensors(rows), Operand::of_int(0)}));
}

}  // namespace

void register_block_diag(Registry& r) { r.add_lowering("aten::block_diag", lower_block_diag); }

}  // namespace aotc::ops
