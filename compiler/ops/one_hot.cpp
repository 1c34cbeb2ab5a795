// aten::one_hot(self, num_classes): int64 [..., num_classes], 1 where the class index is the
// position: the indices (a size-1 last dim added) compared with the constant
// 0 .. num_classes - 1, then cast. An index outside [0, num_classes) gives a row of zeros
// (torch raises at run time; a compiled model does not check its inputs' values).
#include <cstring>

#include "elementwise.h"
#include "strided_view.h"

namespace aotc::ops {
namespace {

// one_hot(Tensor self, int num_classes=-1)
void lower_one_hot(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  if (x.dtype != ir::DType::Int64)
    ctx.fail(std::string("needs an int64 tensor of class indices, got ") + ir::dtype_name(x.dtype));
  const int64_t classes = ctx.num_inputs() > 1 ? ctx.int_arg(1) : -1;
  if (classes < 0)
    ctx.fail(
        "num_classes=-1 takes the class count from the largest index, a value known only at run time; "
        "pass num_classes");
  if (classes == 0 || classes > (int64_t{1} << 24))
    ctx.fail("num_classes must be in 1 .. 2^24, got " + std::to_string(classes));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank >= 8) ctx.fail("needs at most 7 dims, got " + std::to_string(rank));
  const int ids = materialize(ctx, unsqueeze_view(view_of(ctx.graph, ctx.tensor(0)), rank), -1);
  std::vector<uint8_t> bytes(static_cast<size_t>(classes) * sizeof(int64_t));
  for (int64_t c = 0; c < classes; ++c) std::memcpy(bytes.data() + c * sizeof(int64_t), &c, sizeof c);
  const int positions =
      ctx.graph.add_constant(ir::DType::Int64, {classes}, std::move(bytes), "one_hot_classes");
  ctx.set_tensor_output(0,
                        cast_to(ctx, add_binary_op(ctx, rt::BinaryOp::Eq, ids, positions), ir::DType::Int64));
}

}  // namespace

void register_one_hot(Registry& r) { r.add_lowering("aten::one_hot", lower_one_hot); }

}  // namespace aotc::ops
