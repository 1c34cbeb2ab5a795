// cumsum(self, dim, *, dtype=None) and cumsum_ -> IR "cumsum" -> cumsum on an
// [outer, axis, inner] view; integer and bool tensors accumulate in int64, as torch.
#include "elementwise.h"

namespace aotc::ops {
namespace {

void lower_cumsum(LowerContext& ctx) {
  const ir::Shape x = ctx.value(0).shape;
  ir::DType t = is_float(ctx.value(0).dtype) ? ir::DType::Float32 : ir::DType::Int64;
  if (ctx.num_inputs() > 2 && !ctx.is_none(2)) t = dtype_from_torch(ctx, ctx.int_arg(2));
  if (t != ir::DType::Float32 && t != ir::DType::Int64)
    ctx.fail("cumsum accumulates in float32 or int64 only");
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t dim = normalize_dim(ctx, ctx.int_arg(1), rank);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x[static_cast<size_t>(d)];
  for (int64_t d = dim + 1; d < rank; ++d) inner *= x[static_cast<size_t>(d)];
  const int in = cast_to(ctx, ctx.tensor(0), t);
  const int out = ctx.new_value(t, x);
  ir::Op& op = ctx.add_op(ir::kind::cumsum, {in}, {out});
  op.attrs = {{"outer", outer}, {"axis", rank ? x[static_cast<size_t>(dim)] : 1}, {"inner", inner}};
  set_elementwise_output(ctx, out);
}

std::string emit_cumsum(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, "", "aotc::rt::cumsum(pool, " + cumsum_arguments(e, op) + ");");
}

}  // namespace

std::string cumsum_arguments(const EmitContext& e, const ir::Op& op) {
  return elem_type_code(e.graph.value(op.outputs[0]).dtype) + ", " + std::to_string(op.i("outer")) + ", " +
         std::to_string(op.i("axis")) + ", " + std::to_string(op.i("inner")) + ", " + e.in(op.inputs[0]) +
         ", " + e.out(op.outputs[0]);
}

void register_cumsum(Registry& r) {
  register_with_inplace(r, "aten::cumsum", lower_cumsum);
  r.add_ir_op(ir::kind::cumsum, emit_cumsum);
}

}  // namespace aotc::ops
