// quantized.cpp - helpers of the quantized op files (quantized.h).
#include <aotc/rt/kernels/layouts.h>

#include "quantized.h"

#include <algorithm>
#include <cstring>

#include "strided_view.h"

namespace aotc::ops {

int new_quantized_value(LowerContext& ctx, ir::Shape shape, const ir::QuantParams& q) {
  const int id = ctx.new_value(ir::DType::UInt8, std::move(shape));
  ctx.graph.value(id).quant = q;
  return id;
}

int quantized_in_layout(LowerContext& ctx, int id, bool channels_last) {
  const ir::Value& v = ctx.graph.value(id);
  if (!v.quant) ctx.fail("internal: a layout asked of a tensor that is not quantized");
  if (v.quant->channels_last == channels_last) return id;
  if (v.shape.size() != 4)
    ctx.fail("internal: channels_last asked of a rank-" + std::to_string(v.shape.size()) + " tensor");
  ir::QuantParams q = *v.quant;
  q.channels_last = channels_last;
  const ir::Shape nchw = v.shape;
  const int64_t n = nchw[0], c = nchw[1], h = nchw[2], w = nchw[3];
  int out = -1;
  if (c == 1 || h * w == 1) {
    out = ctx.graph.add_alias(id, nchw);
  } else if (channels_last) {
    // NCHW bytes read as NHWC: a permuted view of the dense value, then seen as NCHW again.
    const int nhwc = materialize(ctx, permute_view(view_of(ctx.graph, id), {0, 2, 3, 1}), -1);
    out = ctx.graph.add_alias(nhwc, nchw);
  } else {
    const int as_nhwc = ctx.graph.add_alias(id, {n, h, w, c});
    out = materialize(ctx, permute_view(view_of(ctx.graph, as_nhwc), {0, 3, 1, 2}), -1);
  }
  ctx.graph.value(out).quant = q;
  return out;
}

float scale_f32(double scale) { return static_cast<float>(scale); }

int64_t quantize_number(double x, const ir::QuantParams& q) {
  const float inv = 1.0f / scale_f32(q.scale);
  const float v = std::nearbyint(static_cast<float>(x) * inv) + static_cast<float>(q.zero_point);
  return static_cast<int64_t>(std::clamp(v, 0.0f, 255.0f));
}

std::vector<uint8_t> bytes_of(const void* data, size_t n) {
  std::vector<uint8_t> bytes(n);
  if (n) std::memcpy(bytes.data(), data, n);
  return bytes;
}

bool runs_on_onednn(const LowerContext& ctx, const QuantizedWeights& w) {
  if (ctx.graph.quantized_engine != ir::QuantizedEngine::X86 || w.groups > 100) return false;
  for (int64_t z : w.zero_points)
    if (z != 0) return false;
  return true;
}

namespace {

// The scale oneDNN gets from torch: the reciprocal of a float reciprocal.
float onednn_scale(double scale) { return 1.0f / static_cast<float>(1.0 / scale); }

}  // namespace

int add_qlinear_packed_weights(LowerContext& ctx, int weight, int64_t n, int64_t k) {
  ir::Graph& g = ctx.graph;
  const rt::QLinearParams p{1, n, k};
  const int64_t bytes = rt::qlinear_packed_weight_bytes(p);
  return g.add_derived_constant("qlinear_pack_weights n=" + std::to_string(n) + " k=" + std::to_string(k),
                                {weight}, ir::DType::Int8, {bytes}, [&] {
                                  std::vector<uint8_t> out(static_cast<size_t>(bytes));
                                  rt::qlinear_pack_weights(
                                      p, reinterpret_cast<const int8_t*>(g.constant_of(weight).bytes.data()),
                                      reinterpret_cast<int8_t*>(out.data()));
                                  return out;
                                });
}

std::vector<int64_t> weight_row_sums(const int8_t* q, int64_t rows, int64_t k) {
  std::vector<int64_t> sums(static_cast<size_t>(rows), 0);
  for (size_t j = 0; j < sums.size(); ++j)
    for (int64_t i = 0; i < k; ++i) sums[j] += q[j * static_cast<size_t>(k) + static_cast<size_t>(i)];
  return sums;
}

int add_weight_zero_points(LowerContext& ctx, const QuantizedWeights& w, int64_t rows) {
  bool any = false;
  std::string params = " rows=" + std::to_string(rows) + " w_zeros=";
  for (int64_t z : w.zero_points) {
    params += std::to_string(z) + ",";
    any |= z != 0;
  }
  if (!any) return -1;
  return ctx.graph.add_derived_constant("quantized w_zero" + params, {-1}, ir::DType::Int32, {rows}, [&] {
    std::vector<int32_t> out(static_cast<size_t>(rows));
    for (size_t j = 0; j < out.size(); ++j) out[j] = static_cast<int32_t>(per_row(w.zero_points, j));
    return bytes_of(out.data(), out.size() * 4);
  });
}

RequantInputs add_requant_constants(LowerContext& ctx, const QuantizedWeights& w, int64_t rows, int64_t k,
                                    const ir::QuantParams& in, double out_scale, bool onednn) {
  const size_t n = static_cast<size_t>(rows);
  if (w.scales.size() != 1 && w.scales.size() != n)
    ctx.fail("the weights have " + std::to_string(w.scales.size()) + " scales for " + std::to_string(rows) +
             " output channels");
  if (w.bias >= 0 && ir::numel(ctx.graph.value(w.bias).shape) != rows)
    ctx.fail("the bias has " + std::to_string(ir::numel(ctx.graph.value(w.bias).shape)) + " values for " +
             std::to_string(rows) + " output channels");
  const float s_a = scale_f32(in.scale), s_y = scale_f32(out_scale);
  const int64_t z_a = in.zero_point;
  // Every number that goes into these constants is in the recipe or a source's bytes.
  std::string params = " rows=" + std::to_string(rows) + " k=" + std::to_string(k) +
                       " in_scale=" + EmitContext::f32(s_a) + " in_zero=" + std::to_string(z_a) +
                       " out_scale=" + EmitContext::f32(s_y) + " w_scales=";
  for (double s : w.scales) params += EmitContext::f32(scale_f32(s)) + ",";
  params += " w_zeros=";
  for (int64_t z : w.zero_points) params += std::to_string(z) + ",";
  if (onednn) params += " form=onednn";
  ir::Graph& g = ctx.graph;
  const int weight = w.weight, bias = w.bias;
  RequantInputs r;
  r.acc_offset =
      g.add_derived_constant("quantized acc_offset" + params, {weight}, ir::DType::Int32, {rows}, [&] {
        const std::vector<int64_t> sums =
            weight_row_sums(reinterpret_cast<const int8_t*>(g.constant_of(weight).bytes.data()), rows, k);
        std::vector<int32_t> out(n);
        for (size_t j = 0; j < n; ++j)
          out[j] = static_cast<int32_t>(-z_a * sums[j] + k * z_a * per_row(w.zero_points, j));
        return bytes_of(out.data(), out.size() * 4);
      });
  r.bias_over_scale =
      g.add_derived_constant("quantized bias_over_scale" + params, {bias}, ir::DType::Float32, {rows}, [&] {
        std::vector<float> out(n, 0.0f);
        if (bias >= 0) {
          const float* b = g.constant_of(bias).f32();
          for (size_t j = 0; j < n; ++j)
            out[j] = onednn ? b[j] : b[j] / (s_a * scale_f32(per_row(w.scales, j)));
        }
        return bytes_of(out.data(), out.size() * 4);
      });
  r.multiplier =
      g.add_derived_constant("quantized multiplier" + params, {-1}, ir::DType::Float32, {rows}, [&] {
        std::vector<float> out(n);
        for (size_t j = 0; j < n; ++j)
          out[j] = onednn ? 1.0f / onednn_scale(out_scale) : (s_a * scale_f32(per_row(w.scales, j))) / s_y;
        return bytes_of(out.data(), out.size() * 4);
      });
  if (onednn)
    r.acc_scale =
        g.add_derived_constant("quantized acc_scale" + params, {-1}, ir::DType::Float32, {rows}, [&] {
          std::vector<float> out(n);
          for (size_t j = 0; j < n; ++j) out[j] = onednn_scale(in.scale) * onednn_scale(per_row(w.scales, j));
          return bytes_of(out.data(), out.size() * 4);
        });
  r.w_zero = add_weight_zero_points(ctx, w, rows);
  return r;
}

std::string requant_code(const EmitContext& e, const ir::Op& op, size_t first) {
  auto ptr = [&](size_t i) { return e.in(op.inputs.at(first + i)); };  // "nullptr" for -1
  const int64_t out_zero = op.i("out_zero");
  ParamsCode rq("aotc::rt::QRequant", "rq");
  rq.raw("acc_offset", ptr(0))
      .raw("bias_over_scale", ptr(1))
      .raw("multiplier", ptr(2))
      .raw("w_zero", ptr(3))
      .raw("acc_scale", ptr(4))
      .set("out_zero", out_zero)
      .set("lo", op.b("relu") ? out_zero : 0)
      .set("hi", 255);
  return rq.str();
}

}  // namespace aotc::ops
