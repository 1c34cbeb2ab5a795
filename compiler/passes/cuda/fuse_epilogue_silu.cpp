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

#include "../passes.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {
namespace {

bool no_clamp(const ir::Op& op) {
  return (!op.has(ir::attr::clamp_lo) || op.f(ir::attr::clamp_lo) == -INFINITY) &&
         (!op.has(ir::attr::clamp_hi) || op.f(ir::attr::clamp_hi) == INFINITY);
}

// An op without a clamp yet (the activation comes before it) that applies an activation
// after its bias: an NHWC depthwise convolution, or a GEMM without a residual that does not
// unfold a convolution itself, and whose result is the SiLU's input itself.
bool takes_silu(const ir::Op& op, const ir::Op& silu) {
  if (!no_clamp(op) || op.outputs.size() != 1 || op.outputs[0] != silu.inputs[0]) return false;
  if (op.kind == ir::kind::depthwise_conv2d_nhwc) return true;
  return op.kind == ir::kind::gemm && !op.has(ir::attr::conv_geometry) &&
         !(op.inputs.size() > 3 && op.inputs[3] >= 0);  // no residual
}

}  // namespace

void fuse_epilogue_silu(ir::Graph& graph) {
  fuse_unary_into_epilogue(
      graph, "AOTC_CUDA_FUSE_SILU",
      [](rt::UnaryOp kind) {
        return kind == rt::UnaryOp::Silu ? rt::GemmActivation::Silu : rt::GemmActivation::None;
      },
      takes_silu);
}

}  // namespace aotc::passes::cuda
