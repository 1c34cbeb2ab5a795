// softmax / log_softmax over one dim (negative dims too, dtype argument) -> IR "softmax"
// -> softmax_f32 on an [outer, axis, inner] view of the tensor.
#include "elementwise.h"

namespace aotc::ops {
namespace {

LowerFn softmax_lowering(bool log) {
  return [log](LowerContext& ctx) {
    // softmax(self, dim, dtype=None) and _softmax(self, dim, half_to_float): the dtype
    // argument converts the input first, as torch does.
    int x_id = ctx.tensor(0);
    const bool internal = ctx.op_name == "aten::_softmax" || ctx.op_name == "aten::_log_softmax";
    if (!internal && ctx.num_inputs() > 2 && !ctx.is_none(2)) {
      const ir::DType t = dtype_from_torch(ctx, ctx.int_arg(2));
      if (t != ir::DType::Float32) ctx.fail("softmax with a dtype other than float32 is not supported");
      x_id = cast_to(ctx, x_id, t);
    }
    if (ctx.graph.value(x_id).dtype != ir::DType::Float32)
      ctx.fail(std::string("softmax of a ") + ir::dtype_name(ctx.graph.value(x_id).dtype) +
               " tensor needs dtype=torch.float32");
    const ir::Shape x = ctx.graph.value(x_id).shape;
    const int64_t rank = static_cast<int64_t>(x.size());
    const int64_t dim = normalize_dim(ctx, ctx.int_arg(1), rank);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= x[static_cast<size_t>(d)];
    for (int64_t d = dim + 1; d < rank; ++d) inner *= x[static_cast<size_t>(d)];
    const int out = ctx.new_value(ir::DType::Float32, x);
    ir::Op& op = ctx.add_op(ir::kind::softmax, {x_id}, {out});
    op.attrs = {
        {"outer", outer}, {"axis", rank ? x[static_cast<size_t>(dim)] : 1}, {"inner", inner}, {"log", log}};
    ctx.set_tensor_output(0, out);
  };
}

std::string emit_softmax(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, "",
                     "aotc::rt::softmax_f32(pool, " + std::to_string(op.i("outer")) + ", " +
                         std::to_string(op.i("axis")) + ", " + std::to_string(op.i("inner")) + ", " +
                         (op.b("log") ? "true" : "false") + ", " + e.in(op.inputs[0]) + ", " +
                         e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_softmax(Registry& r) {
  r.add_lowering("aten::softmax", softmax_lowering(false));
  r.add_lowering("aten::_softmax", softmax_lowering(false));
  r.add_lowering("aten::log_softmax", softmax_lowering(true));
  r.add_lowering("aten::_log_softmax", softmax_lowering(true));
  r.add_ir_op(ir::kind::softmax, emit_softmax);
}

}  // namespace aotc::ops
