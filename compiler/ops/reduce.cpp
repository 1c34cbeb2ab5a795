// mean and sum over any set of dims (keepdim or not) -> IR "reduce" -> reduce_f32.
#include <aotc/rt/kernels.h>

#include "op_helpers.h"

namespace aotc::ops {
namespace {

// mean(self, dtype=None) / mean.dim(self, dim, keepdim=False, dtype=None), same for sum.
LowerFn reduce_lowering(rt::ReduceOp kind) {
  return [kind](LowerContext& ctx) {
    ctx.require_float32({0});
    const ir::Shape x = ctx.value(0).shape;
    const int64_t rank = static_cast<int64_t>(x.size());
    std::vector<bool> mask(x.size(), true);
    bool keepdim = false;
    size_t dtype_arg = 1;
    const bool has_dims = ctx.num_inputs() > 1 && (ctx.arg(1).kind == Operand::Kind::IntList ||
                                                   ctx.arg(1).kind == Operand::Kind::Int || ctx.is_none(1));
    if (has_dims && ctx.num_inputs() > 2) {
      if (!ctx.is_none(1) && !ctx.ints_arg(1).empty()) {
        mask.assign(x.size(), false);
        for (int64_t d : ctx.ints_arg(1)) {
          if (rank == 0) continue;
          mask[static_cast<size_t>(normalize_dim(ctx, d, rank))] = true;
        }
      }
      keepdim = ctx.bool_arg(2);
      dtype_arg = 3;
    }
    if (ctx.num_inputs() > dtype_arg && !ctx.is_none(dtype_arg) && ctx.int_arg(dtype_arg) != 6)
      ctx.fail("a result dtype other than float32 is not supported yet");
    ir::Shape y;
    for (size_t d = 0; d < x.size(); ++d) {
      if (!mask[d])
        y.push_back(x[d]);
      else if (keepdim)
        y.push_back(1);
    }
    const int out = ctx.new_value(ir::DType::Float32, y);
    ir::Op& op = ctx.add_op("reduce", {ctx.tensor(0)}, {out});
    std::vector<int64_t> mask_ints(mask.begin(), mask.end());
    op.attrs = {{"op", static_cast<int64_t>(kind)}, {"mask", mask_ints}};
    ctx.set_tensor_output(0, out);
  };
}

std::string emit_reduce(const EmitContext& e, const ir::Op& op) {
  const ir::Shape& x = e.graph.value(op.inputs[0]).shape;
  ParamsCode p("aotc::rt::ReduceParams");
  p.raw("op", "static_cast<aotc::rt::ReduceOp>(" + std::to_string(op.i("op")) + ")")
      .set("rank", static_cast<int64_t>(x.size()))
      .set_array("dims", x);
  const auto& mask = op.ints("mask");
  for (size_t d = 0; d < mask.size(); ++d) p.set_bool("reduce_mask[" + std::to_string(d) + "]", mask[d] != 0);
  return kernel_call(
      op, p.str(),
      "aotc::rt::reduce_f32(pool, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_reduce(Registry& r) {
  r.add_lowering("aten::mean", reduce_lowering(rt::ReduceOp::Mean));
  r.add_lowering("aten::sum", reduce_lowering(rt::ReduceOp::Sum));
  r.add_ir_op("reduce", emit_reduce);
}

}  // namespace aotc::ops
