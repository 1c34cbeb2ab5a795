// aten::rms_norm (nn.RMSNorm, F.rms_norm): y = x / sqrt(mean(x^2 over the trailing
// normalized_shape dims) + eps) * weight, composed of IR ops (square, mean, add, rsqrt,
// mul): no kernel of its own. eps None is torch's default, float32's machine epsilon.
#include <limits>

#include "elementwise.h"
#include "sequence_ops.h"

namespace aotc::ops {
namespace {

// rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float? eps=None)
void lower_rms_norm(LowerContext& ctx) {
  ctx.require_float32({0});
  const ir::Shape x = ctx.value(0).shape;
  const std::vector<int64_t> normalized = ctx.ints_arg(1);
  check_normalized_shape(ctx, x, normalized);
  if (!ctx.is_none(2)) {
    ctx.require_float32({2});
    if (ctx.value(2).shape != normalized)
      ctx.fail("weight of shape " + ir::shape_str(ctx.value(2).shape) + " does not match normalized_shape " +
               ir::shape_str(normalized));
  }
  const double eps = ctx.is_none(3) ? std::numeric_limits<float>::epsilon() : ctx.double_arg(3);
  std::vector<int64_t> dims;
  for (size_t d = x.size() - normalized.size(); d < x.size(); ++d) dims.push_back(static_cast<int64_t>(d));
  const int squares = add_unary_op(ctx, rt::UnaryOp::Square, ctx.tensor(0));
  const int mean = add_reduce_op(ctx, rt::ReduceOp::Mean, squares, reduce_shape(ctx, x, dims, true));
  const int shifted =
      add_binary_op(ctx, rt::BinaryOp::Add, mean, constant_scalar(ctx.graph, ir::DType::Float32, eps));
  int y =
      add_binary_op(ctx, rt::BinaryOp::Mul, ctx.tensor(0), add_unary_op(ctx, rt::UnaryOp::Rsqrt, shifted));
  if (!ctx.is_none(2)) y = add_binary_op(ctx, rt::BinaryOp::Mul, y, ctx.tensor(2));
  ctx.set_tensor_output(0, y);
}

}  // namespace

void register_rms_norm(Registry& r) { r.add_lowering("aten::rms_norm", lower_rms_norm); }

}  // namespace aotc::ops
