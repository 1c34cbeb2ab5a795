// gemm.h - what the matrix-product lowerings share: one call that adds a gemm IR op.
#pragma once

#include <aotc/rt/kernels.h>

#include "op_helpers.h"
#include "op_registry.h"

namespace aotc::ops {

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  double alpha = 1.0, beta = 1.0;
  rt::BiasKind bias_kind = rt::BiasKind::None;
  int64_t batch = 1, stride_a = 0, stride_b = 0;  // batched when batch > 1
  int64_t stride_bias = 0;                        // per-matrix bias (baddbmm)
};

// The attributes of a "gemm" (or, batched, "batched_gemm") op computing g: dense operands,
// no clamp. make_gemm sets them; the passes that build a GEMM themselves use them too.
std::map<std::string, ir::Attr> gemm_attrs(const GemmShape& g);

// y = alpha * op(a) op(b) + beta * bias (+ residual) with dense operands; bias and residual
// may be -1. A residual (m x n, dense) is added in the GEMM's epilogue (not for batches).
ir::Op& make_gemm(LowerContext& ctx, const GemmShape& g, int a, int b, int bias, int y, int residual = -1);

// The code generators' shared pieces (the CPU's in gemm.cpp, CUDA's in cuda/gemm_cuda.cpp):
// a "gemm" op's rt::GemmParams and a "batched_gemm" op's rt::BatchedGemmParams as C++
// (with the residual, the optional 4th input, in the parameters), and the four operands
// "a, b, bias, c".
ParamsCode gemm_params_code(const EmitContext& e, const ir::Op& op);
// A "gemm" op's sizes, layout, alpha, beta, bias kind and clamp as rt::GemmParams (no
// residual pointer), for the passes and generators that reason about the product.
rt::GemmParams gemm_params_of(const ir::Op& op);
ParamsCode batched_gemm_params_code(const ir::Op& op);
std::string gemm_operands(const EmitContext& e, const ir::Op& op);

}  // namespace aotc::ops
