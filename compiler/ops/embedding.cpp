// aten::embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse) -> IR
// "embedding" -> embedding_f32: one table row per index (int64 or int32 indices of any
// shape). padding_idx and the gradient flags only matter in training.
#include <aotc/rt/kernels.h>

#include "op_helpers.h"
#include "sequence_ops.h"

namespace aotc::ops {
namespace {

void lower_embedding(LowerContext& ctx) {
  ctx.require_float32({0});
  const ir::Value& w = ctx.value(0);
  const ir::Value& ids = ctx.value(1);
  if (w.shape.size() != 2) ctx.fail("weight must be 2-d, got " + ir::shape_str(w.shape));
  if (ids.dtype != ir::DType::Int64 && ids.dtype != ir::DType::Int32)
    ctx.fail(std::string("indices must be int64 or int32, got ") + ir::dtype_name(ids.dtype));
  ir::Shape y = ids.shape;
  y.push_back(w.shape[1]);
  const int out = ctx.new_value(ir::DType::Float32, y);
  ir::Op& op = ctx.add_op(ir::kind::embedding, {ctx.tensor(0), ctx.tensor(1)}, {out});
  op.attrs = {{"count", ir::numel(ids.shape)},
              {"dim", w.shape[1]},
              {"vocab", w.shape[0]},
              {"ids_int32", ids.dtype == ir::DType::Int32}};
  ctx.set_tensor_output(0, out);
}

std::string emit_embedding(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, embedding_params_code(op).str(),
                     "aotc::rt::embedding_f32(pool, p, " + e.in(op.inputs[1]) + ", " + e.in(op.inputs[0]) +
                         ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

ParamsCode embedding_params_code(const ir::Op& op) {
  ParamsCode p("aotc::rt::EmbeddingParams");
  p.set("count", op.i("count"))
      .set("dim", op.i("dim"))
      .set("vocab", op.i("vocab"))
      .set_bool("ids_int32", op.b("ids_int32"));
  return p;
}

void register_embedding(Registry& r) {
  r.add_lowering("aten::embedding", lower_embedding);
  r.add_ir_op(ir::kind::embedding, emit_embedding);
}

}  // namespace aotc::ops
