// quantize.cpp: aten::quantize_per_tensor (float32 -> quint8) -> IR "quantize" ->
// aotc::rt::quantize_u8, and aten::dequantize of a quantized tensor -> IR "dequantize" ->
// aotc::rt::dequantize_u8: where a quantized model's int8 part starts and ends.
#include "quantized.h"

namespace aotc::ops {
namespace {

constexpr int64_t kTorchQInt8 = 12, kTorchQUInt8 = 13;  // c10::ScalarType's numbering

// A number argument, or a one-element constant tensor (FX graph mode keeps a layer's
// scale and zero point as tensors).
double number_or_constant(const LowerContext& ctx, size_t i) {
  const Operand& o = ctx.arg(i);
  if (!o.is_tensor()) return ctx.double_arg(i);
  const ir::Value& v = ctx.graph.value(o.tensor);
  if (!ctx.graph.is_constant(o.tensor) || ir::numel(v.shape) != 1)
    ctx.fail("argument " + std::to_string(i) + " must be a number or a one-element constant tensor");
  const ir::Constant& c = ctx.graph.constant_of(o.tensor);
  const int64_t offset = ctx.graph.root_byte_offset(o.tensor);
  const uint8_t* p = c.bytes.data() + offset;
  switch (v.dtype) {
    case ir::DType::Float32:
      return *reinterpret_cast<const float*>(p);
    case ir::DType::Int64:
      return static_cast<double>(*reinterpret_cast<const int64_t*>(p));
    case ir::DType::Int32:
      return *reinterpret_cast<const int32_t*>(p);
    default:
      ctx.fail("argument " + std::to_string(i) + " has dtype " + ir::dtype_name(v.dtype));
  }
}

void lower_quantize_per_tensor(LowerContext& ctx) {
  ctx.require_float32({0});
  const ir::Value& x = ctx.value(0);
  const double scale = number_or_constant(ctx, 1);
  const double zero = number_or_constant(ctx, 2);
  const int64_t dtype = ctx.int_arg(3);
  if (dtype == kTorchQInt8)
    ctx.fail(
        "qint8 activations are not supported; aotc's int8 kernels take quint8 activations (the "
        "default of torch.ao.quantization's x86 and qnnpack qconfigs)");
  if (dtype != kTorchQUInt8) ctx.fail("dtype " + std::to_string(dtype) + " is not supported (quint8 is)");
  if (!(scale > 0) || !std::isfinite(scale))
    ctx.fail("the scale must be positive and finite, got " + std::to_string(scale));
  if (zero < 0 || zero > 255 || zero != std::floor(zero))
    ctx.fail("the zero point must be an integer in [0, 255] for quint8, got " + std::to_string(zero));
  const ir::QuantParams q{scale, static_cast<int64_t>(zero), false};
  const int out = new_quantized_value(ctx, x.shape, q);
  ir::Op& op = ctx.add_op(ir::kind::quantize, {ctx.tensor(0)}, {out});
  op.attrs = {{"count", ir::numel(x.shape)},
              {"inv_scale", static_cast<double>(1.0f / scale_f32(scale))},
              {"zero", q.zero_point}};
  ctx.set_tensor_output(0, out);
}

void lower_dequantize(LowerContext& ctx) {
  const ir::QuantParams q = ctx.quant(0);
  const int x = quantized_in_layout(ctx, ctx.tensor(0), false);
  const ir::Shape shape = ctx.graph.value(x).shape;
  const int out = ctx.new_value(ir::DType::Float32, shape);
  ir::Op& op = ctx.add_op(ir::kind::dequantize, {x}, {out});
  op.attrs = {{"count", ir::numel(shape)},
              {"scale", static_cast<double>(scale_f32(q.scale))},
              {"zero", q.zero_point}};
  ctx.set_tensor_output(0, out);
}

std::string emit_quantize(const EmitContext& e, const ir::Op& op) {
  if (op.has("nhwc")) {  // passes/fuse_quantize_layout.cpp
    const std::vector<int64_t>& d = op.ints("nhwc");
    return kernel_call(op, "",
                       "aotc::rt::quantize_to_nhwc_u8(pool, " + std::to_string(d[0]) + ", " +
                           std::to_string(d[1]) + ", " + std::to_string(d[2]) + ", " +
                           EmitContext::f32(op.f("inv_scale")) + ", " + std::to_string(op.i("zero")) + ", " +
                           e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
  }
  return kernel_call(op, "",
                     "aotc::rt::quantize_u8(pool, " + std::to_string(op.i("count")) + ", " +
                         EmitContext::f32(op.f("inv_scale")) + ", " + std::to_string(op.i("zero")) + ", " +
                         e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
}

std::string emit_dequantize(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, "",
                     "aotc::rt::dequantize_u8(pool, " + std::to_string(op.i("count")) + ", " +
                         EmitContext::f32(op.f("scale")) + ", " + std::to_string(op.i("zero")) + ", " +
                         e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_quantize(Registry& r) {
  r.add_lowering("aten::quantize_per_tensor", lower_quantize_per_tensor);
  r.add_quantized_lowering("aten::dequantize", lower_dequantize);
  r.add_ir_op(ir::kind::quantize, emit_quantize);
  r.add_ir_op(ir::kind::dequantize, emit_dequantize);
}

}  // namespace aotc::ops
