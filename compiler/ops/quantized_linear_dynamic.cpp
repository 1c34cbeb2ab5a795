// quantized_linear_dynamic.cpp: quantized::linear_dynamic and linear_relu_dynamic (torch.ao's
// dynamically quantized Linear, as quantize_dynamic makes it) -> IR "qlinear_dynamic" ->
// aotc::rt::qlinear_dynamic_f32: float rows quantized at each run from their own range, int8
// weights packed at compile time, the int32 sums scaled back to float.
#include <aotc/rt/kernels/layouts.h>
#include <aotc/rt/kernels/quantized.h>

#include "quantized.h"

namespace aotc::ops {
namespace {

void lower_qlinear_dynamic(LowerContext& ctx, bool relu) {
  ctx.require_float32({0});
  const int x = ctx.tensor(0);
  const QuantizedWeights& w = ctx.qweights_arg(1);
  const bool reduce_range = ctx.is_none(2) ? false : ctx.bool_arg(2);
  const ir::Shape xs = ctx.graph.value(x).shape;
  const ir::Shape ws = ctx.graph.value(w.weight).shape;
  if (xs.empty()) ctx.fail("input must have at least 1 dimension");
  if (ws.size() != 2) ctx.fail("weight must be 2-d, got " + ir::shape_str(ws));
  if (xs.back() != ws[1])
    ctx.fail("input " + ir::shape_str(xs) + " does not fit weight " + ir::shape_str(ws) + ": expected " +
             std::to_string(ws[1]) + " features, got " + std::to_string(xs.back()));
  const size_t n = static_cast<size_t>(ws[0]);
  if (w.scales.size() != 1 && w.scales.size() != n)
    ctx.fail("the weights have " + std::to_string(w.scales.size()) + " scales for " + std::to_string(n) +
             " output features");
  if (w.bias >= 0 && ir::numel(ctx.graph.value(w.bias).shape) != ws[0])
    ctx.fail("the bias has " + std::to_string(ir::numel(ctx.graph.value(w.bias).shape)) + " values for " +
             std::to_string(n) + " output features");
  rt::QLinearDynamicParams p;
  p.k = ws[1];
  p.n = ws[0];
  p.m = ir::numel(ir::Shape(xs.begin(), xs.end() - 1));  // the leading dims (also where k is 0)
  p.reduce_range = reduce_range;
  p.relu = relu;
  ir::Graph& g = ctx.graph;
  const int weight = w.weight;
  const rt::QLinearParams shape{p.m, p.n, p.k};
  const std::string geometry = " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k);
  const int packed = add_qlinear_packed_weights(ctx, weight, p.n, p.k);
  std::string scales = geometry + " w_scales=";
  for (double s : w.scales) scales += EmitContext::f32(scale_f32(s)) + ",";
  const int colsum =
      g.add_derived_constant("qlinear_dynamic colsum" + geometry, {weight}, ir::DType::Int32, {p.n}, [&] {
        const std::vector<int64_t> sums =
            weight_row_sums(reinterpret_cast<const int8_t*>(g.constant_of(weight).bytes.data()), p.n, p.k);
        std::vector<int32_t> out(sums.begin(), sums.end());
        return bytes_of(out.data(), out.size() * 4);
      });
  const int scale =
      g.add_derived_constant("qlinear_dynamic w_scale" + scales, {-1}, ir::DType::Float32, {p.n}, [&] {
        std::vector<float> out(n);
        for (size_t j = 0; j < n; ++j) out[j] = scale_f32(per_row(w.scales, j));
        return bytes_of(out.data(), out.size() * 4);
      });
  const int zero = add_weight_zero_points(ctx, w, p.n);
  ir::Shape ys = xs;
  ys.back() = p.n;
  const int out = ctx.new_value(ir::DType::Float32, ys);
  ir::Op& op = ctx.add_op(ir::kind::qlinear_dynamic, {x, packed, colsum, scale, zero, w.bias}, {out});
  op.attrs = {{"m", p.m}, {"n", p.n}, {"k", p.k}, {"reduce_range", reduce_range}, {"relu", relu}};
  op.scratch_bytes = rt::qlinear_dynamic_scratch_bytes(p);
  op.thread_scratch_bytes = rt::qlinear_thread_scratch_bytes(shape);
  ctx.set_tensor_output(0, out);
}

std::string emit_qlinear_dynamic(const EmitContext& e, const ir::Op& op) {
  ParamsCode p("aotc::rt::QLinearDynamicParams");
  p.set("m", op.i("m"))
      .set("n", op.i("n"))
      .set("k", op.i("k"))
      .set_bool("reduce_range", op.b("reduce_range"))
      .set_bool("relu", op.b("relu"));
  ParamsCode w("aotc::rt::QLinearDynamicWeights", "dw");
  w.raw("packed", e.in(op.inputs[1]))
      .raw("colsum", e.in(op.inputs[2]))
      .raw("scale", e.in(op.inputs[3]))
      .raw("zero", e.in(op.inputs[4]))
      .raw("bias", e.in(op.inputs[5]));
  return kernel_call(op, p.str() + "\n    " + w.str(),
                     "aotc::rt::qlinear_dynamic_f32(pool, p, " + e.in(op.inputs[0]) + ", dw, " +
                         e.out(op.outputs[0]) + ", reinterpret_cast<uint8_t*>(" + e.scratch(op) + "));");
}

}  // namespace

void register_quantized_linear_dynamic(Registry& r) {
  // quantized::linear_dynamic(Tensor X, LinearPackedParamsBase W_prepack, bool reduce_range=False),
  // and linear_relu_dynamic alike. X is float: these are plain lowerings.
  r.add_lowering("quantized::linear_dynamic", [](LowerContext& ctx) { lower_qlinear_dynamic(ctx, false); });
  r.add_lowering("quantized::linear_relu_dynamic",
                 [](LowerContext& ctx) { lower_qlinear_dynamic(ctx, true); });
  r.add_ir_op(ir::kind::qlinear_dynamic, emit_qlinear_dynamic);
}

}  // namespace aotc::ops
