// tril / triu (diagonal = k) over the last two dims -> IR "tril_triu" (runtime
// tril_triu, any dtype).
#include "indexing.h"

namespace aotc::ops {
namespace {

void lower_triangle(LowerContext& ctx, bool upper) {
  const ir::Value& x = ctx.value(0);
  if (x.shape.size() < 2)
    ctx.fail("expects a tensor with at least 2 dimensions, got shape " + ir::shape_str(x.shape));
  const int64_t diagonal = ctx.num_inputs() > 1 && !ctx.is_none(1) ? ctx.int_arg(1) : 0;
  const int out = ctx.new_value(x.dtype, x.shape);
  ir::Op& op = ctx.add_op(ir::kind::tril_triu, {ctx.tensor(0)}, {out});
  op.attrs = {{"diagonal", diagonal}, {"upper", upper}};
  ctx.set_tensor_output(0, out);
}
void lower_tril(LowerContext& ctx) { lower_triangle(ctx, false); }
void lower_triu(LowerContext& ctx) { lower_triangle(ctx, true); }

std::string emit_tril_triu(const EmitContext& e, const ir::Op& op) {
  return kernel_call(
      op, tril_triu_params_code(e, op).str(),
      "aotc::rt::tril_triu(pool, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

ParamsCode tril_triu_params_code(const EmitContext& e, const ir::Op& op) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  const size_t r = y.shape.size();
  ParamsCode p("aotc::rt::TriangleParams");
  p.set("batch", ir::numel(ir::Shape(y.shape.begin(), y.shape.end() - 2)))
      .set("rows", y.shape[r - 2])
      .set("cols", y.shape[r - 1])
      .set("diagonal", op.i("diagonal"))
      .set_bool("upper", op.b("upper"))
      .set("elem_size", ir::dtype_size(y.dtype));
  return p;
}

void register_tril_triu(Registry& r) {
  r.add_lowering("aten::tril", lower_tril);
  r.add_lowering("aten::tril_", lower_tril);
  r.add_lowering("aten::triu", lower_triu);
  r.add_lowering("aten::triu_", lower_triu);
  r.add_ir_op(ir::kind::tril_triu, emit_tril_triu);
}

}  // namespace aotc::ops
