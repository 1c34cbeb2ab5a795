// quantized_cat.cpp: quantized::cat (FloatFunctional's cat) and aten::cat of quantized
// tensors: each input requantized to the output's scale and zero point (a 256-entry table,
// qlookup; none where they already match), then concatenated by the float cat's byte
// copies, in NHWC order when the inputs are channels_last.
#include <cmath>

#include "quantized.h"

namespace aotc::ops {
namespace {

// torch's requantization of one integer: dequantized in float (by a fused multiply-add
// with the premultiplied zero point, as its vectorised cat kernel does), quantized again.
std::vector<uint8_t> requantize_table(const ir::QuantParams& from, const ir::QuantParams& to) {
  std::vector<uint8_t> table(256);
  const float s = scale_f32(from.scale);
  const float premul = s * static_cast<float>(-from.zero_point);
  for (int q = 0; q < 256; ++q) {
    const float x = std::fma(s, static_cast<float>(q), premul);
    table[static_cast<size_t>(q)] = static_cast<uint8_t>(quantize_number(x, to));
  }
  return table;
}

// cat(tensors, dim) with the output quantized as out (scale and zero point; its layout is
// the first input's).
void lower_qcat_to(LowerContext& ctx, const std::vector<int>& list, int64_t dim_arg, ir::QuantParams out) {
  const ir::Value& first = ctx.graph.value(list.at(0));
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  if (rank == 0) ctx.fail("zero-dimensional tensors cannot be concatenated");
  const int64_t dim = normalize_dim(ctx, dim_arg, rank);
  out.channels_last = first.quant->channels_last;
  std::vector<int> parts;
  for (int id : list) {
    if (!ctx.graph.value(id).quant) ctx.fail("cannot concatenate a quantized tensor with one that is not");
    if (ctx.graph.value(id).shape.size() != first.shape.size()) ctx.fail("the tensors have different ranks");
    int part = quantized_in_layout(ctx, id, out.channels_last);
    const ir::QuantParams& q = *ctx.graph.value(part).quant;
    if (q.scale != out.scale || q.zero_point != out.zero_point)
      part = add_quantized_lookup(ctx, part, requantize_table(q, out), out);
    // Concatenated in memory order: NHWC's channel dim is the last.
    if (out.channels_last) {
      const ir::Shape& s = ctx.graph.value(part).shape;
      part = ctx.graph.add_alias(part, {s[0], s[2], s[3], s[1]});
    }
    parts.push_back(part);
  }
  static const int64_t kNhwcDim[4] = {0, 3, 1, 2};
  const int64_t memory_dim = out.channels_last ? kNhwcDim[dim] : dim;
  const LowerFn* cat = Registry::get().find_lowering("aten::cat");
  if (!cat) ctx.fail("internal: no lowering of aten::cat");
  LowerContext bytes(ctx.graph, ctx.op_name, {Operand::of_tensors(parts), Operand::of_int(memory_dim)}, 1,
                     ctx.loc);
  (*cat)(bytes);
  int result = bytes.outputs.at(0).tensor;
  if (out.channels_last) {
    const ir::Shape& s = ctx.graph.value(result).shape;
    result = ctx.graph.add_alias(result, {s[0], s[3], s[1], s[2]});
  }
  ctx.graph.value(result).quant = out;
  ctx.set_tensor_output(0, result);
}

// quantized::cat(Tensor[] qx, int dim, float? scale, int? zero_point): the first input's
// scale and zero point where none are given.
void lower_quantized_cat(LowerContext& ctx) {
  const std::vector<int>& list = tensor_list_arg(ctx);
  ir::QuantParams out = *ctx.graph.value(list[0]).quant;
  if (!ctx.is_none(2)) out.scale = ctx.double_arg(2);
  if (!ctx.is_none(3)) out.zero_point = ctx.int_arg(3);
  if (!(out.scale > 0) || !std::isfinite(out.scale) || out.zero_point < 0 || out.zero_point > 255)
    ctx.fail("the output scale must be positive and the zero point in [0, 255]");
  lower_qcat_to(ctx, list, ctx.int_arg(1), out);
}

// aten::cat(Tensor[] tensors, int dim=0): quantized as the first tensor.
void lower_aten_cat(LowerContext& ctx) {
  const std::vector<int>& list = tensor_list_arg(ctx);
  const ir::Value& first = ctx.graph.value(list[0]);
  if (!first.quant) ctx.fail("cannot concatenate a quantized tensor with one that is not");
  lower_qcat_to(ctx, list, ctx.num_inputs() > 1 ? ctx.int_arg(1) : 0, *first.quant);
}

}  // namespace

void register_quantized_cat(Registry& r) {
  r.add_quantized_lowering("quantized::cat", lower_quantized_cat);
  r.add_quantized_lowering("aten::cat", lower_aten_cat);
}

}  // namespace aotc::ops
