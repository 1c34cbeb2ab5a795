// aten::layer_norm / aten::native_layer_norm -> IR "layer_norm" -> layer_norm_f32: the
// normalized_shape is the trailing dims, so the input is rows x cols with cols their product.
#include <aotc/rt/kernels.h>

#include "op_helpers.h"
#include "sequence_ops.h"

namespace aotc::ops {

namespace {

// Checks layer_norm's arguments; returns cols (the product of normalized_shape).
int64_t check_layer_norm(LowerContext& ctx) {
  ctx.require_float32({0, 2, 3});
  const ir::Shape& x = ctx.value(0).shape;
  const std::vector<int64_t> normalized = ctx.ints_arg(1);
  check_normalized_shape(ctx, x, normalized);
  const int64_t cols = ir::numel(normalized);
  for (size_t i : {size_t{2}, size_t{3}})
    if (!ctx.is_none(i) && ctx.value(i).shape != normalized)
      ctx.fail(std::string(i == 2 ? "weight" : "bias") + " of shape " + ir::shape_str(ctx.value(i).shape) +
               " does not match normalized_shape " + ir::shape_str(normalized));
  return cols;
}

// layer_norm(input, normalized_shape, weight?, bias?, eps, cudnn_enable)
void lower_layer_norm(LowerContext& ctx) {
  const int64_t cols = check_layer_norm(ctx);
  const int gamma = ctx.is_none(2) ? -1 : ctx.tensor(2), beta = ctx.is_none(3) ? -1 : ctx.tensor(3);
  ctx.set_tensor_output(0, make_layer_norm(ctx, ctx.tensor(0), cols, gamma, beta, ctx.double_arg(4)));
}

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd), where
// mean and rstd keep the leading dims and have size 1 in the normalised ones.
void lower_native_layer_norm(LowerContext& ctx) {
  const int64_t cols = check_layer_norm(ctx);
  const int gamma = ctx.is_none(2) ? -1 : ctx.tensor(2), beta = ctx.is_none(3) ? -1 : ctx.tensor(3);
  const int y = make_layer_norm(ctx, ctx.tensor(0), cols, gamma, beta, ctx.double_arg(4));
  ir::Shape stats = ctx.value(0).shape;
  for (size_t i = stats.size() - ctx.ints_arg(1).size(); i < stats.size(); ++i) stats[i] = 1;
  const int mean = ctx.new_value(ir::DType::Float32, stats), rstd = ctx.new_value(ir::DType::Float32, stats);
  ctx.graph.ops.back().outputs = {y, mean, rstd};
  ctx.set_tensor_output(0, y);
  ctx.set_tensor_output(1, mean);
  ctx.set_tensor_output(2, rstd);
}

std::string emit_layer_norm(const EmitContext& e, const ir::Op& op) {
  const bool stats = op.outputs.size() == 3;
  return kernel_call(op, layer_norm_params_code(op).str(),
                     "aotc::rt::layer_norm_f32(pool, p, " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) +
                         ", " + e.in(op.inputs[2]) + ", " + e.out(op.outputs[0]) + ", " +
                         (stats ? e.out(op.outputs[1]) : "nullptr") + ", " +
                         (stats ? e.out(op.outputs[2]) : "nullptr") + ");");
}

}  // namespace

void check_normalized_shape(const LowerContext& ctx, const ir::Shape& x,
                            const std::vector<int64_t>& normalized) {
  if (normalized.empty() || normalized.size() > x.size() ||
      !std::equal(normalized.begin(), normalized.end(),
                  x.end() - static_cast<std::ptrdiff_t>(normalized.size())))
    ctx.fail("normalized_shape " + ir::shape_str(normalized) + " is not the trailing shape of the input " +
             ir::shape_str(x));
}

int make_layer_norm(LowerContext& ctx, int x, int64_t cols, int gamma, int beta, double eps) {
  const ir::Shape shape = ctx.graph.value(x).shape;
  const int y = ctx.new_value(ir::DType::Float32, shape);
  ir::Op& op = ctx.add_op(ir::kind::layer_norm, {x, gamma, beta}, {y});
  op.attrs = {{"rows", cols > 0 ? ir::numel(shape) / cols : 0}, {"cols", cols}, {"eps", eps}};
  return y;
}

ParamsCode layer_norm_params_code(const ir::Op& op) {
  ParamsCode p("aotc::rt::LayerNormParams");
  p.set("rows", op.i("rows")).set("cols", op.i("cols")).set_f32("eps", op.f("eps"));
  return p;
}

void register_layer_norm(Registry& r) {
  r.add_lowering("aten::layer_norm", lower_layer_norm);
  r.add_lowering("aten::native_layer_norm", lower_native_layer_norm);
  r.add_ir_op(ir::kind::layer_norm, emit_layer_norm);
}

}  // namespace aotc::ops
