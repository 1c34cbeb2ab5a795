// A squeeze-and-excitation gate in one launch (squeeze_excitation.cu) against a sum in double:
// EfficientNet's shapes (SiLU, sigmoid, both biases), a relu as the first layer's clamp with
// a hardsigmoid and no first bias, channel counts across several blocks of 1024 and not a
// multiple of 32 or of 4 (rows read as floats, not float4), a hidden layer of one value and
// of the largest size, and a NaN and an infinity among the pooled inputs (NaN stays NaN
// through the relu and either gate, as in torch).
#include <cmath>

#include "kernel_table.h"

namespace aotc::test {
namespace {

struct SeCase {
  int64_t n, c, r;
  bool silu, relu, hardsigmoid, bias1, bias2, specials;
};

// s[i][ch] = gate(w2[ch] . h + b2[ch]), h = clamp(act(w1 x[i] + b1)); w1 r x c, w2 c x r.
std::vector<float> se_reference(const SeCase& s, const std::vector<float>& x, const std::vector<float>& w1,
                                const std::vector<float>& b1, const std::vector<float>& w2,
                                const std::vector<float>& b2) {
  std::vector<float> out(static_cast<size_t>(s.n * s.c));
  std::vector<double> h(static_cast<size_t>(s.r));
  for (int64_t i = 0; i < s.n; ++i) {
    for (int64_t j = 0; j < s.r; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < s.c; ++k)
        acc +=
            static_cast<double>(w1[static_cast<size_t>(j * s.c + k)]) * x[static_cast<size_t>(i * s.c + k)];
      if (s.bias1) acc += b1[static_cast<size_t>(j)];
      if (s.silu) acc = acc / (1.0 + std::exp(-acc));
      if (s.relu && acc < 0.0) acc = 0.0;
      h[static_cast<size_t>(j)] = acc;
    }
    for (int64_t ch = 0; ch < s.c; ++ch) {
      double acc = 0.0;
      for (int64_t j = 0; j < s.r; ++j)
        acc += static_cast<double>(w2[static_cast<size_t>(ch * s.r + j)]) * h[static_cast<size_t>(j)];
      if (s.bias2) acc += b2[static_cast<size_t>(ch)];
      const double g = s.hardsigmoid ? (acc != acc ? acc : std::fmin(std::fmax(acc + 3.0, 0.0), 6.0) / 6.0)
                                     : 1.0 / (1.0 + std::exp(-acc));
      out[static_cast<size_t>(i * s.c + ch)] = static_cast<float>(g);
    }
  }
  return out;
}

void squeeze_excitation_gate_cases(KernelTable& t) {
  const std::vector<SeCase> cases = {
      {32, 32, 8, true, false, false, true, true, false},     // EfficientNet's first block
      {32, 1152, 48, true, false, false, true, true, false},  // and its last
      {1, 672, 28, true, false, false, true, true, false},    // batch 1
      {3, 2100, 37, false, true, true, false, true, true},    // MobileNetV3's form, 3 blocks of channels
      {2, 5, 1, false, false, false, false, false, false},    // one hidden value, no biases
      {2, 40, 4096, true, false, false, true, true, false},   // the largest hidden layer
      {4, 96, 24, true, false, false, true, true, true},      // a NaN and an infinity in x
      {5, 1150, 46, true, false, false, true, true, false},   // channels not a multiple of 4
  };
  for (const SeCase& s : cases) {
    std::vector<float> x = t.floats(static_cast<size_t>(s.n * s.c), false, 2.0f);
    if (s.specials) {
      x[3] = NAN;                                      // image 0: every gate NaN
      x[static_cast<size_t>(2 * s.c + 1)] = INFINITY;  // image 2: infinities through the layers
    }
    const float scale1 = 1.0f / std::sqrt(static_cast<float>(s.c)),
                scale2 = 1.0f / std::sqrt(static_cast<float>(s.r));
    const std::vector<float> w1 = t.floats(static_cast<size_t>(s.r * s.c), false, scale1);
    const std::vector<float> w2 = t.floats(static_cast<size_t>(s.c * s.r), false, scale2);
    const std::vector<float> b1 = t.floats(static_cast<size_t>(s.r)), b2 = t.floats(static_cast<size_t>(s.c));
    std::vector<float> w2t(w2.size());
    for (int64_t ch = 0; ch < s.c; ++ch)
      for (int64_t j = 0; j < s.r; ++j)
        w2t[static_cast<size_t>(j * s.c + ch)] = w2[static_cast<size_t>(ch * s.r + j)];
    rt::cuda::SqueezeExcitationParams p;
    p.n = s.n, p.c = s.c, p.r = s.r;
    p.act = s.silu ? rt::GemmActivation::Silu : rt::GemmActivation::None;
    if (s.relu) p.lo = 0.0f;
    p.gate = s.hardsigmoid ? rt::UnaryOp::Hardsigmoid : rt::UnaryOp::Sigmoid;
    float* out = t.device<float>(static_cast<size_t>(s.n * s.c));
    rt::cuda::squeeze_excitation_gate(t.stream(), p, t.upload(x), t.upload(w1),
                                      s.bias1 ? t.upload(b1) : nullptr, t.upload(w2t),
                                      s.bias2 ? t.upload(b2) : nullptr, out);
    const std::string what = "n" + std::to_string(s.n) + " c" + std::to_string(s.c) + " r" +
                             std::to_string(s.r) + (s.silu ? " silu" : "") + (s.relu ? " relu" : "") +
                             (s.hardsigmoid ? " hardsigmoid" : " sigmoid") + (s.bias1 ? "" : " no b1") +
                             (s.bias2 ? "" : " no b2") + (s.specials ? " specials" : "");
    t.expect_close("squeeze_excitation_gate", what, se_reference(s, x, w1, b1, w2, b2),
                   t.download(out, static_cast<size_t>(s.n * s.c)), 1e-5);
  }
}

}  // namespace

void squeeze_excitation_cases(KernelTable& t) { squeeze_excitation_gate_cases(t); }

}  // namespace aotc::test
