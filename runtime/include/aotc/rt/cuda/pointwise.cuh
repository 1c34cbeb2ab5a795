// pointwise.cuh - device functions for the pointwise kernels that aotc generates per model
// (compiler/ops/cuda/unary_cuda.cpp, binary_cuda.cpp): the generated kernels have their
// sizes and broadcast strides as compile-time constants and call these for the math.
// Each formula is the one of the CPU kernels (runtime/src/kernels/unary.cpp), so that both
// targets compute the same function.
#pragma once

#include <aotc/rt/kernels.h>

namespace aotc::rt::cuda {

template <UnaryOp Op>
__device__ __forceinline__ float unary_apply(float x, float a, float b) {
  if constexpr (Op == UnaryOp::Identity) {
    return x;
  } else if constexpr (Op == UnaryOp::Relu) {
    return x < 0.0f ? 0.0f : x;  // NaN stays NaN, as in torch
  } else if constexpr (Op == UnaryOp::Clamp) {
    return x != x ? x : fminf(fmaxf(x, a), b);
  } else if constexpr (Op == UnaryOp::LeakyRelu) {
    return x >= 0.0f ? x : a * x;
  } else if constexpr (Op == UnaryOp::Sigmoid) {
    return 1.0f / (1.0f + expf(-x));
  } else if constexpr (Op == UnaryOp::Tanh) {
    return tanhf(x);
  } else if constexpr (Op == UnaryOp::GeluErf) {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  } else if constexpr (Op == UnaryOp::GeluTanh) {
    const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
  } else if constexpr (Op == UnaryOp::Silu) {
    return x / (1.0f + expf(-x));
  } else if constexpr (Op == UnaryOp::Hardswish) {
    return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
  } else {
    static_assert(Op == UnaryOp::Hardsigmoid, "unknown unary op");
    return fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
  }
}

template <BinaryOp Op>
__device__ __forceinline__ float binary_apply(float a, float b, float alpha) {
  if constexpr (Op == BinaryOp::Add) {
    return a + alpha * b;
  } else if constexpr (Op == BinaryOp::Sub) {
    return a - alpha * b;
  } else if constexpr (Op == BinaryOp::Mul) {
    return a * b;
  } else {
    static_assert(Op == BinaryOp::Div, "unknown binary op");
    return a / b;
  }
}

// The clamp epilogue fused into a pointwise op: NaN passes through, as torch's relu and
// hardtanh let it.
__device__ __forceinline__ float clamp_apply(float x, float lo, float hi) {
  return x != x ? x : fminf(fmaxf(x, lo), hi);
}

}  // namespace aotc::rt::cuda
