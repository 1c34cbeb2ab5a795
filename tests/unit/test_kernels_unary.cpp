// unary_f32 (every UnaryOp) and channel_affine_f32 against double-precision formulas.
#include <doctest/doctest.h>

#include <string>

#include "kernel_reference.h"

namespace {

using aotc::rt::ThreadPool;
using aotc::rt::UnaryOp;
using namespace aotc::test;

struct OpCase {
  UnaryOp op;
  float a, b;
  const char* name;
};

const OpCase kOps[] = {
    {UnaryOp::Identity, 0, 0, "identity"},
    {UnaryOp::Relu, 0, 0, "relu"},
    {UnaryOp::Clamp, 0.0f, 6.0f, "relu6"},
    {UnaryOp::Clamp, -0.5f, 0.7f, "clamp"},
    {UnaryOp::LeakyRelu, 0.01f, 0, "leaky_relu 0.01"},
    {UnaryOp::LeakyRelu, 0.2f, 0, "leaky_relu 0.2"},
    {UnaryOp::Sigmoid, 0, 0, "sigmoid"},
    {UnaryOp::Tanh, 0, 0, "tanh"},
    {UnaryOp::GeluErf, 0, 0, "gelu"},
    {UnaryOp::GeluTanh, 0, 0, "gelu tanh"},
    {UnaryOp::Silu, 0, 0, "silu"},
    {UnaryOp::Hardswish, 0, 0, "hardswish"},
    {UnaryOp::Hardsigmoid, 0, 0, "hardsigmoid"},
};

}  // namespace

TEST_CASE("unary_f32: every op against its formula in double") {
  const int64_t sizes[] = {1, 7, 33, 1000, 50003};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 41;
    for (const OpCase& oc : kOps)
      for (int64_t n : sizes)
        for (float range : {1.0f, 8.0f}) {
          const auto x = random_floats(static_cast<size_t>(n), ++seed, -range, range);
          Guarded y(static_cast<size_t>(n));
          aotc::rt::unary_f32(pool, oc.op, oc.a, oc.b, n, x.data(), y.data());
          std::vector<double> want(static_cast<size_t>(n));
          for (size_t i = 0; i < want.size(); ++i) want[i] = ref_unary(oc.op, oc.a, oc.b, x[i]);
          INFO(std::string(oc.name) << " n=" << n << " range=" << range << " threads=" << threads);
          CHECK(rel_l2(y.values(), want) <= kTolerance);
          CHECK(y.guards_intact());
        }
  }
}

TEST_CASE("unary_f32: in place, extreme inputs, NaN") {
  ThreadPool pool(3);
  for (const OpCase& oc : kOps) {
    std::vector<float> x = random_floats(40000, 77, -100.0f, 100.0f);
    x[0] = 1e30f;
    x[1] = -1e30f;
    x[2] = 0.0f;
    std::vector<double> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = ref_unary(oc.op, oc.a, oc.b, x[i]);
    Guarded y(x.size(), x);
    aotc::rt::unary_f32(pool, oc.op, oc.a, oc.b, static_cast<int64_t>(x.size()), y.data(), y.data());
    INFO(std::string(oc.name));
    CHECK(rel_l2(y.values(), want) <= kTolerance);
    CHECK(y.guards_intact());
    // NaN in, NaN out (hardswish/hardsigmoid/clamp included: torch propagates NaN).
    float nan_in = NAN, out = 0.0f;
    aotc::rt::unary_f32(pool, oc.op, oc.a, oc.b, 1, &nan_in, &out);
    CHECK(std::isnan(out));
  }
}

TEST_CASE("channel_affine_f32: per-channel scale/shift with clamp") {
  struct Case {
    int64_t n, c, spatial;
  };
  const Case cases[] = {{1, 3, 1}, {2, 5, 7}, {4, 16, 1}, {3, 1, 33}, {2, 64, 3136}, {1000, 17, 1}};
  const float clamps[][2] = {{-INFINITY, INFINITY}, {0.0f, INFINITY}, {0.0f, 6.0f}};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 51;
    for (const Case& c : cases)
      for (const auto& cl : clamps)
        for (bool in_place : {false, true}) {
          const size_t total = static_cast<size_t>(c.n * c.c * c.spatial);
          const auto x = random_floats(total, ++seed, -4.0f, 4.0f);
          const auto scale = random_floats(static_cast<size_t>(c.c), ++seed, -2.0f, 2.0f);
          const auto shift = random_floats(static_cast<size_t>(c.c), ++seed);
          Guarded y(total, in_place ? x : std::vector<float>{});
          aotc::rt::channel_affine_f32(pool, c.n, c.c, c.spatial, scale.data(), shift.data(), cl[0], cl[1],
                                       in_place ? y.data() : x.data(), y.data());
          std::vector<double> want(total);
          for (size_t i = 0; i < total; ++i) {
            const size_t ch = (i / static_cast<size_t>(c.spatial)) % static_cast<size_t>(c.c);
            const double v = double(x[i]) * scale[ch] + shift[ch];
            want[i] = std::fmin(std::fmax(v, double(cl[0])), double(cl[1]));
          }
          INFO("n=" << c.n << " c=" << c.c << " spatial=" << c.spatial << " in_place=" << in_place
                    << " threads=" << threads);
          CHECK(rel_l2(y.values(), want) <= kTolerance);
          CHECK(y.guards_intact());
        }
  }
}
