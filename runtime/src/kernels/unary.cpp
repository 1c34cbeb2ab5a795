// unary.cpp - elementwise activations. Transcendental ones go through Eigen's
// vectorised exp/tanh; GELU (erf) uses std::erf. y may alias x.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <Eigen/Core>
#include <cmath>
#include <cstring>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

void unary_range(UnaryOp op, float a, float b, int64_t count, const float* x, float* y) {
  const ConstArrayMap xa(x, count);
  ArrayMap ya(y, count);
  switch (op) {
    case UnaryOp::Identity:
      if (x != y) std::memmove(y, x, static_cast<size_t>(count) * sizeof(float));
      break;
    case UnaryOp::Relu:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];  // NaN stays NaN
      break;
    case UnaryOp::Clamp:
      for (int64_t i = 0; i < count; ++i) y[i] = detail::clamp_value(x[i], a, b);
      break;
    case UnaryOp::LeakyRelu:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] >= 0.0f ? x[i] : a * x[i];
      break;
    case UnaryOp::Sigmoid:
      ya = (1.0f + (-xa).exp()).inverse();
      break;
    case UnaryOp::Tanh:
      ya = xa.tanh();
      break;
    case UnaryOp::GeluErf: {
      constexpr float kInvSqrt2 = 0.70710678118654752440f;
      for (int64_t i = 0; i < count; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
      break;
    }
    case UnaryOp::GeluTanh: {
      constexpr float kSqrt2OverPi = 0.79788456080286535588f;
      constexpr float kKappa = 0.044715f;
      ya = 0.5f * xa * (1.0f + (kSqrt2OverPi * (xa + kKappa * xa.cube())).tanh());
      break;
    }
    case UnaryOp::Silu:
      ya = xa / (1.0f + (-xa).exp());
      break;
    case UnaryOp::Hardswish:
      for (int64_t i = 0; i < count; ++i) {
        const float r = detail::clamp_value(x[i] + 3.0f, 0.0f, 6.0f);
        y[i] = x[i] * r / 6.0f;
      }
      break;
    case UnaryOp::Hardsigmoid:
      for (int64_t i = 0; i < count; ++i) y[i] = detail::clamp_value(x[i] + 3.0f, 0.0f, 6.0f) / 6.0f;
      break;
  }
}

}  // namespace

void unary_f32(ThreadPool& pool, UnaryOp op, float a, float b, int64_t count, const float* x,
               float* y) {
  if (count <= 0) return;
  if (op == UnaryOp::Identity && x == y) return;
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t begin, int64_t end) {
    unary_range(op, a, b, end - begin, x + begin, y + begin);
  });
}

}  // namespace aotc::rt
