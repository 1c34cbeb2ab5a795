// unary.cpp - elementwise activations. sigmoid/silu use the vectorised exp of
// kernel_util.h, tanh goes through Eigen's vectorised tanh; GELU (erf) uses std::erf.
// y may alias x.
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

#if AOTC_KERNELS_AVX2
// 1 + exp(-x), the denominator of sigmoid and silu.
inline __m256 one_plus_exp_neg(__m256 x) {
  const __m256 neg = _mm256_xor_ps(x, _mm256_set1_ps(-0.0f));
  return _mm256_add_ps(_mm256_set1_ps(1.0f), detail::exp_f32x8(neg));
}
#endif

// Activations built on exp: a scalar form, and an 8-lane form where AVX2 is there.
struct SigmoidOp {
  static float scalar(float v) { return 1.0f / (1.0f + detail::exp_f32(-v)); }
#if AOTC_KERNELS_AVX2
  static __m256 vec(__m256 v) { return _mm256_div_ps(_mm256_set1_ps(1.0f), one_plus_exp_neg(v)); }
#endif
};
struct SiluOp {
  static float scalar(float v) { return v / (1.0f + detail::exp_f32(-v)); }
#if AOTC_KERNELS_AVX2
  static __m256 vec(__m256 v) { return _mm256_div_ps(v, one_plus_exp_neg(v)); }
#endif
};

template <class Op>
void map_exp_op(const float* x, float* y, int64_t count) {
  int64_t i = 0;
#if AOTC_KERNELS_AVX2
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(y + i, Op::vec(_mm256_loadu_ps(x + i)));
#endif
  for (; i < count; ++i) y[i] = Op::scalar(x[i]);
}

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
      map_exp_op<SigmoidOp>(x, y, count);
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
      map_exp_op<SiluOp>(x, y, count);
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

void unary_f32(ThreadPool& pool, UnaryOp op, float a, float b, int64_t count, const float* x, float* y) {
  if (count <= 0) return;
  if (op == UnaryOp::Identity && x == y) return;
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t begin, int64_t end) {
    unary_range(op, a, b, end - begin, x + begin, y + begin);
  });
}

}  // namespace aotc::rt
