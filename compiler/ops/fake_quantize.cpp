// fake_quantize.cpp: aten::fake_quantize_per_tensor_affine (number or tensor scale and zero
// point) and aten::fake_quantize_per_channel_affine: quantization-aware training's
// quantize-then-dequantize in float, composed of existing ops with torch's arithmetic so
// that a QAT model exported before conversion runs as torch runs it: x times the float32
// reciprocal of the scale, rounded half to even, clamped to [quant_min - zero_point,
// quant_max - zero_point] (the same as clamping q + zero_point to [quant_min, quant_max]
// for these integer values), times the scale. A float zero point (per channel) is added
// before the rounding and taken away after the clamp, as torch does.
#include "elementwise.h"

namespace aotc::ops {
namespace {

int number(LowerContext& ctx, double v) { return constant_scalar(ctx.graph, ir::DType::Float32, v); }

void check_range(LowerContext& ctx, int64_t quant_min, int64_t quant_max) {
  if (quant_min > quant_max)
    ctx.fail("quant_min (" + std::to_string(quant_min) + ") must not exceed quant_max (" +
             std::to_string(quant_max) + ")");
}

// The fake quantization of x with scale and zero point (tensors broadcasting against x, or
// numbers as 0-d constants).
int fake_quantize(LowerContext& ctx, int x, int scale, int zero_point, bool float_zero_point,
                  int64_t quant_min, int64_t quant_max) {
  const int inverse = add_unary_op(ctx, rt::UnaryOp::Reciprocal, scale);  // 1.0f / scale, as torch
  int q = add_binary_op(ctx, rt::BinaryOp::Mul, x, inverse);
  if (float_zero_point) {
    q = add_unary_op(ctx, rt::UnaryOp::Round, add_binary_op(ctx, rt::BinaryOp::Add, q, zero_point));
    q = add_unary_op(ctx, rt::UnaryOp::Clamp, q, static_cast<double>(quant_min),
                     static_cast<double>(quant_max));
    q = add_binary_op(ctx, rt::BinaryOp::Sub, q, zero_point);
  } else {
    q = add_unary_op(ctx, rt::UnaryOp::Round, q);
    const int lo =
        add_binary_op(ctx, rt::BinaryOp::Sub, number(ctx, static_cast<double>(quant_min)), zero_point);
    const int hi =
        add_binary_op(ctx, rt::BinaryOp::Sub, number(ctx, static_cast<double>(quant_max)), zero_point);
    q = add_binary_op(ctx, rt::BinaryOp::Minimum, add_binary_op(ctx, rt::BinaryOp::Maximum, q, lo), hi);
  }
  return add_binary_op(ctx, rt::BinaryOp::Mul, q, scale);
}

// fake_quantize_per_tensor_affine(self, float scale, int zero_point, int quant_min, int quant_max)
// fake_quantize_per_tensor_affine.tensor_qparams(self, Tensor scale, Tensor zero_point, ...)
void lower_per_tensor(LowerContext& ctx) {
  ctx.require_float32({0});
  const int64_t quant_min = ctx.int_arg(3), quant_max = ctx.int_arg(4);
  check_range(ctx, quant_min, quant_max);
  int scale, zero_point;
  if (ctx.arg(1).is_tensor()) {
    if (ir::numel(ctx.value(1).shape) != 1 || ir::numel(ctx.value(2).shape) != 1)
      ctx.fail("per-tensor scale and zero_point must have one element each, got " +
               ir::shape_str(ctx.value(1).shape) + " and " + ir::shape_str(ctx.value(2).shape));
    const auto one = [&](size_t i) {
      return lower_as(
          ctx, "aten::reshape",
          {Operand::of_tensor(cast_to(ctx, ctx.tensor(i), ir::DType::Float32)), Operand::of_ints({})});
    };
    scale = one(1);
    zero_point = one(2);
  } else {
    scale = number(ctx, static_cast<float>(ctx.double_arg(1)));
    zero_point = number(ctx, static_cast<double>(ctx.int_arg(2)));
  }
  set_elementwise_output(ctx,
                         fake_quantize(ctx, ctx.tensor(0), scale, zero_point, false, quant_min, quant_max));
}

// fake_quantize_per_channel_affine(self, Tensor scale, Tensor zero_point, int axis, int quant_min, int
// quant_max)
void lower_per_channel(LowerContext& ctx) {
  ctx.require_float32({0});
  const ir::Shape& x = ctx.value(0).shape;
  const int64_t axis = normalize_dim(ctx, ctx.int_arg(3), static_cast<int64_t>(x.size()));
  const int64_t quant_min = ctx.int_arg(4), quant_max = ctx.int_arg(5);
  check_range(ctx, quant_min, quant_max);
  const int64_t channels = x[static_cast<size_t>(axis)];
  for (size_t i : {size_t{1}, size_t{2}})
    if (ctx.value(i).shape != ir::Shape{channels})
      ctx.fail(std::string(i == 1 ? "scale" : "zero_point") + " must have one value per channel of dim " +
               std::to_string(axis) + " (" + std::to_string(channels) + "), got " +
               ir::shape_str(ctx.value(i).shape));
  ir::Shape along(x.size(), 1);
  along[static_cast<size_t>(axis)] = channels;
  const auto per_channel = [&](size_t i) {
    return lower_as(
        ctx, "aten::reshape",
        {Operand::of_tensor(cast_to(ctx, ctx.tensor(i), ir::DType::Float32)), Operand::of_ints(along)});
  };
  const bool float_zero_point = is_float(ctx.value(2).dtype);
  set_elementwise_output(ctx, fake_quantize(ctx, ctx.tensor(0), per_channel(1), per_channel(2),
                                            float_zero_point, quant_min, quant_max));
}

}  // namespace

void register_fake_quantize(Registry& r) {
  r.add_lowering("aten::fake_quantize_per_tensor_affine", lower_per_tensor);
  r.add_lowering("aten::fake_quantize_per_channel_affine", lower_per_channel);
}

}  // namespace aotc::ops
