// fuse_gemm_gelu: a linear layer's GELU (a "unary" GeluErf or GeluTanh that alone reads a
// "gemm"'s result) becomes the GEMM's epilogue activation (GemmParams::activation), so the
// transformer MLP's up-projection writes GELU(x W^T + b) once instead of writing x W^T + b
// and reading it back in a pointwise op (vit_b_16 and BERT-base: 12 of them over 197 or
// 128 x 3072 floats). Only a GEMM without a residual or clamp yet: the activation comes
// after the bias and before those.
// CPU: the prepacked GEMM applies it to each strip of 6 rows as the strip's last depth
// block is written, while it is in L1; CUDA: the own GEMM kernels after the bias, and
// behind cuBLAS the epilogue pass (cuBLASLt's GELU epilogue is the tanh form only).
#include <aotc/rt/kernels.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "passes.h"

namespace aotc::passes {

void fuse_gemm_gelu(ir::Graph& graph, const char* off_switch) {
  if (const char* env = std::getenv(off_switch); env && std::strcmp(env, "0") == 0) return;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& act = graph.ops[i];
    if (act.kind != ir::kind::unary) continue;
    const auto kind = static_cast<rt::UnaryOp>(act.i("op"));
    if (kind != rt::UnaryOp::GeluErf && kind != rt::UnaryOp::GeluTanh) continue;
    const int p = producer_of(graph, act.inputs[0]);
    if (p < 0) continue;
    ir::Op& gemm = graph.ops[static_cast<size_t>(p)];
    if (gemm.kind != ir::kind::gemm || gemm.has(ir::attr::conv_geometry) || gemm.has(ir::attr::activation))
      continue;
    if (gemm.inputs.size() > 3 && gemm.inputs[3] >= 0) continue;  // a residual: it comes before
    if ((gemm.has(ir::attr::clamp_lo) && gemm.f(ir::attr::clamp_lo) != -INFINITY) ||
        (gemm.has(ir::attr::clamp_hi) && gemm.f(ir::attr::clamp_hi) != INFINITY))
      continue;
    if (readers_of_storage(graph, act.inputs[0]).size() != 1) continue;
    if (graph.value(gemm.outputs[0]).shape != graph.value(act.outputs[0]).shape) continue;
    gemm.attrs[ir::attr::activation] = static_cast<int64_t>(
        kind == rt::UnaryOp::GeluErf ? rt::GemmActivation::GeluErf : rt::GemmActivation::GeluTanh);
    gemm.outputs[0] = act.outputs[0];
    graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(i));
    --i;
  }
}

}  // namespace aotc::passes
