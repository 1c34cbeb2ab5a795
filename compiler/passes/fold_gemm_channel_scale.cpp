// fold_gemm_channel_scale: a linear layer whose result alone is multiplied by a constant per
// output column (a layer scale: ConvNeXt's gamma, CaiT's and DeiT III's) becomes one GEMM
// with scaled weights and bias:
//   W'[j] = W[j] * s[j],  b'[j] = b[j] * s[j]
// so the product is written once instead of written, read, scaled and written again; a
// residual add after it can then join the GEMM's epilogue (fuse_conv_residual). The CUDA
// pipeline runs it again after its NHWC conversion, which turns torchvision ConvNeXt's
// gamma * x.permute(0, 3, 1, 2) into a scale of the GEMM's own result. Only a GEMM without a
// residual, clamp or activation (the scale comes after those), whose weights and bias are
// float32 constants and whose scale is finite, and a mul without a clamp of its own; a
// scale of one value folds the same way.
#include <aotc/rt/kernels.h>

#include <cmath>
#include <string>
#include <vector>

#include "../ops/gemm.h"
#include "passes.h"

namespace aotc::passes {
namespace {

bool plain_gemm(const ir::Graph& g, const ir::Op& gemm) {
  if (gemm.kind != ir::kind::gemm || gemm.inputs.size() < 3 || gemm.has(ir::attr::activation) ||
      gemm.has(ir::attr::conv_geometry) || gemm.has(ir::attr::prepacked))
    return false;
  if (gemm.inputs.size() > 3 && gemm.inputs[3] >= 0) return false;  // a residual: it comes before the scale
  if (gemm.f(ir::attr::clamp_lo) != -INFINITY || gemm.f(ir::attr::clamp_hi) != INFINITY) return false;
  const rt::GemmParams p = ops::gemm_params_of(gemm);
  if (p.ldc != p.n || p.ldb != (p.trans_b ? p.k : p.n)) return false;
  if (p.bias_kind != rt::BiasKind::None && p.bias_kind != rt::BiasKind::PerColumn) return false;
  if (!constant_floats(g, gemm.inputs[1], p.n * p.k)) return false;
  return p.bias_kind == rt::BiasKind::None || gemm.inputs[2] < 0 || constant_floats(g, gemm.inputs[2], p.n);
}

// The per-column scale of a mul operand: n floats (or one, repeated), all finite; empty if
// the operand is not such a constant.
std::vector<float> column_scale(const ir::Graph& g, int id, int64_t n) {
  const ir::Shape& s = g.value(id).shape;
  const int64_t count = ir::numel(s);
  if (count != 1 && (count != n || s.empty() || s.back() != n)) return {};
  const float* data = constant_floats(g, id, count);
  if (!data) return {};
  std::vector<float> scale(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    scale[static_cast<size_t>(j)] = data[count == 1 ? 0 : j];
    if (!std::isfinite(scale[static_cast<size_t>(j)])) return {};
  }
  return scale;
}

}  // namespace

void fold_gemm_channel_scale(ir::Graph& graph) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& mul = graph.ops[i];
    if (mul.kind != ir::kind::binary || mul.inputs.size() != 2 || mul.outputs.size() != 1 ||
        static_cast<rt::BinaryOp>(mul.i("op")) != rt::BinaryOp::Mul)
      continue;
    // A relu or clamp fused into the mul (CUDA's fuse_activation(binary)) comes after it.
    if ((mul.has(ir::attr::clamp_lo) && mul.f(ir::attr::clamp_lo) != -INFINITY) ||
        (mul.has(ir::attr::clamp_hi) && mul.f(ir::attr::clamp_hi) != INFINITY))
      continue;
    const ir::Shape out_shape = graph.value(mul.outputs[0]).shape;  // (constants are added below)
    if (graph.value(mul.outputs[0]).dtype != ir::DType::Float32) continue;
    for (int side = 0; side < 2; ++side) {
      const int x = mul.inputs[static_cast<size_t>(side)], s = mul.inputs[static_cast<size_t>(1 - side)];
      if (graph.value(x).shape != out_shape || sole_whole_read(graph, x) != x) continue;
      const int p = producer_of(graph, x);
      if (p < 0 || graph.ops[static_cast<size_t>(p)].outputs[0] != x) continue;
      ir::Op& gemm = graph.ops[static_cast<size_t>(p)];
      if (!plain_gemm(graph, gemm)) continue;
      const rt::GemmParams gp = ops::gemm_params_of(gemm);
      const std::vector<float> scale = column_scale(graph, s, gp.n);
      if (scale.empty()) continue;
      const int w = gemm.inputs[1], bias = gemm.inputs[2];
      const std::string recipe = "column scale n=" + std::to_string(gp.n) + " k=" + std::to_string(gp.k) +
                                 " trans_b=" + std::to_string(gp.trans_b);
      gemm.inputs[1] = add_derived_f32_constant(
          graph, recipe, {w, s}, graph.value(w).shape,
          [&] {
            const float* src = constant_floats(graph, w, gp.n * gp.k);
            std::vector<float> data(src, src + gp.n * gp.k);
            for (int64_t j = 0; j < gp.n; ++j)
              for (int64_t q = 0; q < gp.k; ++q)
                data[static_cast<size_t>(gp.trans_b ? j * gp.k + q : q * gp.n + j)] *=
                    scale[static_cast<size_t>(j)];
            return data;
          },
          graph.value(w).name + "_scaled");
      if (gp.bias_kind == rt::BiasKind::PerColumn && bias >= 0)
        gemm.inputs[2] = add_derived_f32_constant(
            graph, "column scale bias", {bias, s}, graph.value(bias).shape,
            [&] {
              const float* src = constant_floats(graph, bias, gp.n);
              std::vector<float> data(src, src + gp.n);
              for (int64_t j = 0; j < gp.n; ++j)
                data[static_cast<size_t>(j)] *= scale[static_cast<size_t>(j)];
              return data;
            },
            graph.value(bias).name + "_scaled");
      gemm.outputs[0] = mul.outputs[0];
      graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(i));
      --i;
      break;
    }
  }
}

}  // namespace aotc::passes
