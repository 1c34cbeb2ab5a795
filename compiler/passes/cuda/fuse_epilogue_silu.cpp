// fuse_epilogue_silu: a SiLU (a "unary" Silu) that alone reads the result of a GEMM (a 1x1
// convolution in NHWC, a linear layer) or of an NHWC depthwise convolution becomes that op's
// epilogue activation, applied after its bias. EfficientNet's blocks are expansion + SiLU,
// depthwise + SiLU: each SiLU was a pass of its own over the block's widest tensor, written
// and read back. The depthwise kernels apply it as they store; behind cuBLAS the GEMM's
// epilogue pass does (bias_clamp, or epilogue_16bit where the output is kept 16-bit, which
// then writes the activated value in half the bytes), cuBLASLt having no SiLU epilogue.
// Only an op without a residual, clamp or activation yet (the activation comes after the
// bias and before those); GEMMs that unfold a convolution themselves (conv_geometry) keep
// theirs apart, as fuse_gemm_gelu leaves them.
// AOTC_CUDA_FUSE_SILU=0 (read when compiling) leaves every SiLU a pass, for comparisons.
#include <aotc/rt/kernels.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "../passes.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {
namespace {

bool no_clamp(const ir::Op& op) {
  return (!op.has(ir::attr::clamp_lo) || op.f(ir::attr::clamp_lo) == -INFINITY) &&
         (!op.has(ir::attr::clamp_hi) || op.f(ir::attr::clamp_hi) == INFINITY);
}

bool takes_silu(const ir::Op& op) {
  if (op.has(ir::attr::activation) || !no_clamp(op)) return false;
  if (op.kind == ir::kind::depthwise_conv2d_nhwc) return true;
  return op.kind == ir::kind::gemm && !op.has(ir::attr::conv_geometry) &&
         !(op.inputs.size() > 3 && op.inputs[3] >= 0);  // no residual
}

}  // namespace

void fuse_epilogue_silu(ir::Graph& graph) {
  if (const char* env = std::getenv("AOTC_CUDA_FUSE_SILU"); env && std::strcmp(env, "0") == 0) return;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& act = graph.ops[i];
    if (act.kind != ir::kind::unary || static_cast<rt::UnaryOp>(act.i("op")) != rt::UnaryOp::Silu) continue;
    const int p = producer_of(graph, act.inputs[0]);
    if (p < 0) continue;
    ir::Op& producer = graph.ops[static_cast<size_t>(p)];
    if (!takes_silu(producer) || producer.outputs.size() != 1 || producer.outputs[0] != act.inputs[0])
      continue;
    if (readers_of_storage(graph, act.inputs[0]).size() != 1) continue;
    if (graph.value(producer.outputs[0]).shape != graph.value(act.outputs[0]).shape) continue;
    producer.attrs[ir::attr::activation] = static_cast<int64_t>(rt::GemmActivation::Silu);
    producer.outputs[0] = act.outputs[0];
    graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(i));
    --i;
  }
}

}  // namespace aotc::passes::cuda
