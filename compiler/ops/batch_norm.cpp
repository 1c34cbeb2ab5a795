// aten::batch_norm in eval mode -> IR "channel_affine": the running statistics are
// folded at compile time into one scale and shift per channel. When it follows a
// convolution, passes/fold_batch_norm.cpp folds it further into the conv's weights.
#include <cmath>

#include "op_helpers.h"
#include "spatial.h"

namespace aotc::ops {

// The arguments of aten::batch_norm(input, weight?, bias?, running_mean?, running_var?,
// training, momentum, eps, cudnn_enabled), whatever `training` says (the caller checks it).
void lower_batch_norm_eval(LowerContext& ctx) {
  ctx.require_float32({0, 1, 2, 3, 4});
  const ir::Shape x = ctx.value(0).shape;
  if (x.size() < 2) ctx.fail("input must have at least 2 dimensions, got " + ir::shape_str(x));
  const int64_t channels = x[1];
  if (ctx.is_none(3) || ctx.is_none(4)) ctx.fail("running statistics are required in eval mode");
  auto constant = [&](size_t i, float fill) {
    std::vector<float> v(static_cast<size_t>(channels), fill);
    if (ctx.is_none(i)) return v;
    const int id = ctx.tensor(i);
    if (!ctx.graph.is_constant(id))
      ctx.fail("argument " + std::to_string(i) + " must be a constant (a frozen parameter or buffer)");
    if (ir::numel(ctx.graph.value(id).shape) != channels)
      ctx.fail("argument " + std::to_string(i) + " has " +
               std::to_string(ir::numel(ctx.graph.value(id).shape)) + " values for " +
               std::to_string(channels) + " channels");
    const float* data = ctx.graph.constant_of(id).f32();
    v.assign(data, data + channels);
    return v;
  };
  const std::vector<float> weight = constant(1, 1.0f), bias = constant(2, 0.0f);
  const std::vector<float> mean = constant(3, 0.0f), var = constant(4, 1.0f);
  const double eps = ctx.double_arg(7);
  std::vector<float> scale(static_cast<size_t>(channels)), shift(static_cast<size_t>(channels));
  for (size_t c = 0; c < scale.size(); ++c) {
    // In double so that folding adds no error of its own.
    const double s = weight[c] / std::sqrt(static_cast<double>(var[c]) + eps);
    scale[c] = static_cast<float>(s);
    shift[c] = static_cast<float>(bias[c] - mean[c] * s);
  }
  const int scale_id = ctx.graph.add_f32_constant({channels}, std::move(scale));
  const int shift_id = ctx.graph.add_f32_constant({channels}, std::move(shift));
  const int out = ctx.new_value(ir::DType::Float32, x);
  ir::Op& op = ctx.add_op(ir::kind::channel_affine, {ctx.tensor(0), scale_id, shift_id}, {out});
  op.attrs = {{"n", x[0]},
              {"c", channels},
              {"spatial", ir::numel(x) / (x[0] * channels)},
              {ir::attr::clamp_lo, -INFINITY},
              {ir::attr::clamp_hi, INFINITY}};
  ctx.set_tensor_output(0, out);
}

namespace {

void lower_batch_norm(LowerContext& ctx) {
  if (ctx.bool_arg(5))
    ctx.fail("batch_norm in training mode is not supported; call model.eval() before saving");
  lower_batch_norm_eval(ctx);
}

std::string emit_channel_affine(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, "",
                     "aotc::rt::channel_affine_f32(pool, " + std::to_string(op.i("n")) + ", " +
                         std::to_string(op.i("c")) + ", " + std::to_string(op.i("spatial")) + ", " +
                         e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " +
                         EmitContext::f32(op.f(ir::attr::clamp_lo)) + ", " +
                         EmitContext::f32(op.f(ir::attr::clamp_hi)) + ", " + e.in(op.inputs[0]) + ", " +
                         e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_batch_norm(Registry& r) {
  r.add_lowering("aten::batch_norm", lower_batch_norm);
  r.add_ir_op(ir::kind::channel_affine, emit_channel_affine);
}

}  // namespace aotc::ops
