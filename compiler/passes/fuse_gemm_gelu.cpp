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
  fuse_unary_into_epilogue(
      graph, off_switch,
      [](rt::UnaryOp kind) {
        return kind == rt::UnaryOp::GeluErf    ? rt::GemmActivation::GeluErf
               : kind == rt::UnaryOp::GeluTanh ? rt::GemmActivation::GeluTanh
                                               : rt::GemmActivation::None;
      },
      [](const ir::Op& gemm, const ir::Op&) {
        // No residual or clamp: the activation comes before them.
        return gemm.kind == ir::kind::gemm && !gemm.has(ir::attr::conv_geometry) &&
               !(gemm.inputs.size() > 3 && gemm.inputs[3] >= 0) &&
               !(gemm.has(ir::attr::clamp_lo) && gemm.f(ir::attr::clamp_lo) != -INFINITY) &&
               !(gemm.has(ir::attr::clamp_hi) && gemm.f(ir::attr::clamp_hi) != INFINITY);
      });
}

}  // namespace aotc::passes
