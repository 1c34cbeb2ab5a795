// kernels/gemm.h - the GEMM kernels: their parameters, gemm_f32, batched_gemm_f32, gemm_prepacked_f32.
#pragma once

#include <cstdint>

namespace aotc::rt {

class ThreadPool;

// ---------------------------------------------------------------- GEMM
enum class BiasKind : int32_t {
  None = 0,
  PerColumn = 1,  // bias[n], broadcast over rows (linear, addmm with 1-D bias)
  PerRow = 2,     // bias[m], broadcast over columns (convolution: one per output channel)
  Full = 3,       // bias[m * n], row-major m x n
};

// A GELU applied to the product and bias before the residual and the clamp: a linear
// layer's GELU that compiler/passes/fuse_gemm_gelu.cpp put into its GEMM (both targets).
enum class GemmActivation : int32_t {
  None = 0,
  GeluErf = 1,   // 0.5 x (1 + erf(x / sqrt 2)), nn.GELU()
  GeluTanh = 2,  // nn.GELU(approximate="tanh")
  Silu = 3,      // x / (1 + exp(-x)), nn.SiLU(): CUDA only (fuse_epilogue_silu.cpp)
};

struct GemmParams {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false;               // A is stored k x m (row-major) and used transposed
  bool trans_b = false;               // B is stored n x k (row-major) and used transposed
  int64_t lda = 0, ldb = 0, ldc = 0;  // leading dimensions (row strides) as stored
  float alpha = 1.0f;                 // C = alpha * op(A) op(B) + beta * bias, then clamp
  float beta = 1.0f;
  BiasKind bias_kind = BiasKind::None;
  float clamp_lo = -__builtin_inff();
  float clamp_hi = __builtin_inff();
  // Optional residual (m x n, row stride ldr) added before the clamp: C = ... + residual.
  // It may not alias C. (Transformer blocks: out = x + proj(attention(x)).)
  const float* residual = nullptr;
  int64_t ldr = 0;
  // C = clamp(activation(alpha * op(A) op(B) + beta * bias) + residual).
  GemmActivation activation = GemmActivation::None;
};

// C (m x n, row stride ldc) = alpha * op(A) * op(B) + beta * bias, through the activation
// (if any), plus the residual (if any), clamped.
void gemm_f32(ThreadPool& pool, const GemmParams& p, const float* a, const float* b, const float* bias,
              float* c);

// Batched C[i] = A[i] * B[i] for i < batch; a stride of 0 broadcasts that operand.
struct BatchedGemmParams {
  GemmParams gemm;  // per-matrix parameters (bias applies to every batch; no residual)
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between matrices
  int64_t stride_bias = 0;  // elements between the biases of consecutive matrices (baddbmm)
};
void batched_gemm_f32(ThreadPool& pool, const BatchedGemmParams& p, const float* a, const float* b,
                      const float* bias, float* c);

// ---- GEMM on a constant weight packed at compile time (the prepack_gemm_weights pass)
// packed: W = alpha * op(B) as gemm_prepack_weights (layouts.h) lays it out.
// C (m x n, ldc) = A * W + beta * bias, through the activation (if any), plus the residual
// (if any), clamped; p.alpha and p.trans_b are not applied again (the packing did), p.ldb
// is unused.
void gemm_prepacked_f32(ThreadPool& pool, const GemmParams& p, const float* a, const float* packed,
                        const float* bias, float* c);

}  // namespace aotc::rt
