// aten::instance_norm: with use_input_stats (InstanceNorm without running statistics, or
// in training mode) it is group normalisation with one group per channel (group_norm.cpp);
// otherwise the running statistics make it batch norm in eval mode (batch_norm.cpp).
#include "spatial.h"

namespace aotc::ops {
namespace {

// aten::instance_norm(input, weight?, bias?, running_mean?, running_var?, use_input_stats,
// momentum, eps, cudnn_enabled): the argument layout of aten::batch_norm.
void lower_instance_norm(LowerContext& ctx) {
  if (!ctx.bool_arg(5)) return lower_batch_norm_eval(ctx);
  ctx.require_float32({0, 1, 2});
  const ir::Shape& x = ctx.value(0).shape;
  if (x.size() < 3) ctx.fail("input must be at least 3-d (N, C, ...), got " + ir::shape_str(x));
  ctx.set_tensor_output(0, add_group_norm(ctx, ctx.tensor(0), x[1], ctx.is_none(1) ? -1 : ctx.tensor(1),
                                          ctx.is_none(2) ? -1 : ctx.tensor(2), ctx.double_arg(7)));
}

}  // namespace

void register_instance_norm(Registry& r) { r.add_lowering("aten::instance_norm", lower_instance_norm); }

}  // namespace aotc::ops
