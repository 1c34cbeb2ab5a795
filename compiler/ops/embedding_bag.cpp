// aten::embedding_bag / aten::_embedding_bag(weight, indices, offsets, scale_grad_by_freq,
// mode, sparse, per_sample_weights, include_last_offset[, padding_idx]) -> IR
// "embedding_bag" -> embedding_bag_f32: per bag of ids (offsets[b] up to the next offset),
// the sum (mode 0), mean (1) or maximum (2) of their table rows, ids equal to padding_idx
// skipped. nn.EmbeddingBag and F.embedding_bag call it with 1-d ids (a 2-d batch of
// fixed-length bags flattened, its offsets an arange). The op's other outputs (offset2bag,
// bag sizes, the maxima's indices) serve training only and are not made; the gradient
// flags (scale_grad_by_freq, sparse) only matter in training.
#include <aotc/rt/kernels.h>

#include "op_helpers.h"
#include "sequence_ops.h"

namespace aotc::ops {
namespace {

bool integer(ir::DType t) { return t == ir::DType::Int64 || t == ir::DType::Int32; }

void lower_embedding_bag(LowerContext& ctx) {
  ctx.require_float32({0});
  const ir::Value& w = ctx.value(0);
  const ir::Value& ids = ctx.value(1);
  const ir::Value& offsets = ctx.value(2);
  if (w.shape.size() != 2) ctx.fail("weight must be 2-d, got " + ir::shape_str(w.shape));
  if (!integer(ids.dtype) || ids.shape.size() != 1)
    ctx.fail("indices must be a 1-d int64 or int32 tensor (F.embedding_bag flattens a 2-d batch), got " +
             std::string(ir::dtype_name(ids.dtype)) + ir::shape_str(ids.shape));
  if (!integer(offsets.dtype) || offsets.shape.size() != 1)
    ctx.fail("offsets must be a 1-d int64 or int32 tensor, got " +
             std::string(ir::dtype_name(offsets.dtype)) + ir::shape_str(offsets.shape));
  const int64_t mode = ctx.int_arg(4);
  if (mode < 0 || mode > 2)
    ctx.fail("mode must be 0 (sum), 1 (mean) or 2 (max), got " + std::to_string(mode));
  const bool include_last_offset = ctx.num_inputs() > 7 && !ctx.is_none(7) && ctx.bool_arg(7);
  const int64_t bags = offsets.shape[0] - (include_last_offset ? 1 : 0);
  if (bags < 0) ctx.fail("include_last_offset needs at least one offset, got none");
  std::vector<int> inputs = {ctx.tensor(0), ctx.tensor(1), ctx.tensor(2), -1};
  if (!ctx.is_none(6)) {
    ctx.require_float32({6});
    const ir::Value& psw = ctx.value(6);
    if (mode != 0)
      ctx.fail("per_sample_weights are only allowed with mode 'sum' (torch raises too), got mode " +
               std::string(mode == 1 ? "'mean'" : "'max'"));
    if (psw.shape != ids.shape)
      ctx.fail("per_sample_weights " + ir::shape_str(psw.shape) + " must have the shape of indices " +
               ir::shape_str(ids.shape));
    inputs[3] = ctx.tensor(6);
  }
  // padding_idx: none, or -1 for none (aten's sentinel; F.embedding_bag makes negative ones
  // positive before the call).
  int64_t padding_idx = ctx.num_inputs() > 8 && !ctx.is_none(8) ? ctx.int_arg(8) : -1;
  if (padding_idx < 0) padding_idx = -1;
  if (padding_idx >= w.shape[0])
    ctx.fail("padding_idx " + std::to_string(padding_idx) + " is outside the table's " +
             std::to_string(w.shape[0]) + " rows");
  const int out = ctx.new_value(ir::DType::Float32, {bags, w.shape[1]});
  ir::Op& op = ctx.add_op(ir::kind::embedding_bag, inputs, {out});
  op.attrs = {{"count", ids.shape[0]},
              {"dim", w.shape[1]},
              {"vocab", w.shape[0]},
              {"bags", bags},
              {"offsets_count", offsets.shape[0]},
              {"mode", mode},
              {"padding_idx", padding_idx},
              {"ids_int32", ids.dtype == ir::DType::Int32},
              {"offsets_int32", offsets.dtype == ir::DType::Int32}};
  ctx.set_tensor_output(0, out);
  for (size_t i = 1; i < ctx.outputs.size(); ++i) ctx.set_output(i, Operand::none());
}

std::string emit_embedding_bag(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, embedding_bag_params_code(op).str(),
                     "aotc::rt::embedding_bag_f32(pool, p, " + embedding_bag_operands(e, op) + ");");
}

}  // namespace

ParamsCode embedding_bag_params_code(const ir::Op& op) {
  ParamsCode p("aotc::rt::EmbeddingBagParams");
  p.set("count", op.i("count"))
      .set("dim", op.i("dim"))
      .set("vocab", op.i("vocab"))
      .set("bags", op.i("bags"))
      .set("offsets_count", op.i("offsets_count"))
      .raw("mode", "static_cast<aotc::rt::EmbeddingBagMode>(" + std::to_string(op.i("mode")) + ")")
      .set("padding_idx", op.i("padding_idx"))
      .set_bool("ids_int32", op.b("ids_int32"))
      .set_bool("offsets_int32", op.b("offsets_int32"));
  return p;
}

std::string embedding_bag_operands(const EmitContext& e, const ir::Op& op) {
  return e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " + e.in(op.inputs[0]) + ", " +
         (op.inputs[3] >= 0 ? e.in(op.inputs[3]) : std::string("nullptr")) + ", " + e.out(op.outputs[0]);
}

void register_embedding_bag(Registry& r) {
  r.add_lowering("aten::embedding_bag", lower_embedding_bag);
  r.add_lowering("aten::_embedding_bag", lower_embedding_bag);
  r.add_ir_op(ir::kind::embedding_bag, emit_embedding_bag);
}

}  // namespace aotc::ops
