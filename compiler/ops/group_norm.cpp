// aten::group_norm -> IR "group_norm" -> group_norm_f32: statistics per image and group of
// channels computed at run time, then a per-channel affine (instance_norm.cpp uses it too).
#include <aotc/rt/kernels.h>

#include "spatial.h"

namespace aotc::ops {

int add_group_norm(LowerContext& ctx, int x, int64_t groups, int gamma, int beta, double eps) {
  const ir::Shape& shape = ctx.graph.value(x).shape;
  if (shape.size() < 2) ctx.fail("input must have at least 2 dimensions, got " + ir::shape_str(shape));
  const int64_t n = shape[0], c = shape[1];
  if (groups <= 0 || c % groups)
    ctx.fail(std::to_string(c) + " channels cannot be split into " + std::to_string(groups) + " groups");
  for (int affine : {gamma, beta})
    if (affine >= 0 && ir::numel(ctx.graph.value(affine).shape) != c)
      ctx.fail("weight and bias must have one value per channel (" + std::to_string(c) + "), got " +
               ir::shape_str(ctx.graph.value(affine).shape));
  const int64_t spatial = n * c > 0 ? ir::numel(shape) / (n * c) : 0;
  const int out = ctx.new_value(ir::DType::Float32, shape);
  ir::Op& op = ctx.add_op(ir::kind::group_norm, {x, gamma, beta}, {out});
  op.attrs = {{"n", n},
              {"c", c},
              {"groups", groups},
              {"spatial", spatial},
              {"eps", eps},
              {ir::attr::clamp_lo, -INFINITY},
              {ir::attr::clamp_hi, INFINITY}};
  return out;
}

namespace {

// aten::group_norm(input, num_groups, weight?, bias?, eps, cudnn_enabled)
void lower_group_norm(LowerContext& ctx) {
  ctx.require_float32({0, 2, 3});
  ctx.set_tensor_output(
      0, add_group_norm(ctx, ctx.tensor(0), ctx.int_arg(1), ctx.is_none(2) ? -1 : ctx.tensor(2),
                        ctx.is_none(3) ? -1 : ctx.tensor(3), ctx.double_arg(4)));
}

std::string emit_group_norm(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, group_norm_params_code(op).str(),
                     "aotc::rt::group_norm_f32(pool, p, " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) +
                         ", " + e.in(op.inputs[2]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

rt::GroupNormParams group_norm_params_of(const ir::Op& op) {
  rt::GroupNormParams p;
  p.n = op.i("n");
  p.c = op.i("c");
  p.groups = op.i("groups");
  p.spatial = op.i("spatial");
  p.eps = static_cast<float>(op.f("eps"));
  p.clamp_lo = static_cast<float>(op.f(ir::attr::clamp_lo));
  p.clamp_hi = static_cast<float>(op.f(ir::attr::clamp_hi));
  return p;
}

ParamsCode group_norm_params_code(const ir::Op& op) {
  ParamsCode p("aotc::rt::GroupNormParams");
  p.set("n", op.i("n"))
      .set("c", op.i("c"))
      .set("groups", op.i("groups"))
      .set("spatial", op.i("spatial"))
      .set_f32("eps", op.f("eps"))
      .set_f32("clamp_lo", op.f(ir::attr::clamp_lo))
      .set_f32("clamp_hi", op.f(ir::attr::clamp_hi));
  return p;
}

void register_group_norm(Registry& r) {
  r.add_lowering("aten::group_norm", lower_group_norm);
  r.add_ir_op(ir::kind::group_norm, emit_group_norm);
}

}  // namespace aotc::ops
