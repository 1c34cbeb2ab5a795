// max_pool2d_f32, avg_pool2d_f32 and adaptive_avg_pool2d_f32 against the references,
// with output sizes computed as torch does (ceil_mode included).
#include <doctest/doctest.h>

#include <string>

#include "kernel_reference.h"

namespace {

using aotc::rt::Pool2dParams;
using aotc::rt::ThreadPool;
using namespace aotc::test;

struct PoolCase {
  const char* name;
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode;
};

const PoolCase kPoolCases[] = {
    {"2x2 stride 2", 1, 3, 7, 7, 2, 2, 2, 2, 0, 0, 1, 1, false},
    {"2x2 stride 2 ceil", 1, 3, 7, 7, 2, 2, 2, 2, 0, 0, 1, 1, true},
    {"resnet 3x3 s2 p1", 2, 4, 17, 17, 3, 3, 2, 2, 1, 1, 1, 1, false},
    {"3x3 s2 ceil", 1, 2, 8, 8, 3, 3, 2, 2, 0, 0, 1, 1, true},
    {"3x3 s2 p1 ceil", 1, 2, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, true},
    {"3x3 s2 p1 ceil odd", 1, 2, 7, 7, 3, 3, 2, 2, 1, 1, 1, 1, true},
    {"non-square", 1, 2, 9, 13, 2, 4, 1, 3, 1, 2, 1, 1, true},
    {"kernel 1", 1, 2, 5, 5, 1, 1, 1, 1, 0, 0, 1, 1, false},
    {"3x3 s1 p1", 1, 3, 13, 1, 3, 1, 1, 1, 1, 0, 1, 1, false},
    {"large", 2, 8, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1, false},
    {"wide 3x3 s2 p1", 1, 3, 9, 70, 3, 3, 2, 2, 1, 1, 1, 1, false},
    {"wide 3x3 s2 ceil", 1, 2, 5, 51, 3, 3, 2, 2, 0, 0, 1, 1, true},
    {"1x1 input", 1, 2, 1, 1, 3, 3, 2, 2, 1, 1, 1, 1, true},
};

Pool2dParams make_params(const PoolCase& pc, bool with_dilation) {
  Pool2dParams p;
  p.n = pc.n;
  p.c = pc.c;
  p.h_in = pc.h;
  p.w_in = pc.w;
  p.kernel_h = pc.kh;
  p.kernel_w = pc.kw;
  p.stride_h = pc.sh;
  p.stride_w = pc.sw;
  p.pad_h = pc.ph;
  p.pad_w = pc.pw;
  p.dilation_h = with_dilation ? pc.dh : 1;
  p.dilation_w = with_dilation ? pc.dw : 1;
  p.h_out = pool_out_size(pc.h, pc.kh, pc.ph, pc.sh, p.dilation_h, pc.ceil_mode);
  p.w_out = pool_out_size(pc.w, pc.kw, pc.pw, pc.sw, p.dilation_w, pc.ceil_mode);
  return p;
}

}  // namespace

TEST_CASE("max_pool2d_f32: padding never wins, dilation, ceil_mode") {
  const PoolCase dilated[] = {
      {"dilation 2", 1, 3, 13, 13, 3, 3, 1, 1, 2, 2, 2, 2, false},
      {"dilation (2,3) s2 ceil", 2, 2, 17, 19, 3, 2, 2, 2, 1, 1, 2, 3, true},
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 11;
    auto run = [&](const PoolCase& pc, float shift) {
      const Pool2dParams p = make_params(pc, true);
      auto x = random_floats(static_cast<size_t>(p.n * p.c * p.h_in * p.w_in), ++seed);
      for (float& v : x) v += shift;  // all-negative input: a zero pad would win
      Guarded y(static_cast<size_t>(p.n * p.c * p.h_out * p.w_out));
      aotc::rt::max_pool2d_f32(pool, p, x.data(), y.data());
      INFO(std::string(pc.name) << " shift=" << shift << " threads=" << threads);
      CHECK(rel_l2(y.values(), ref_max_pool2d(p, x.data())) == 0.0);
      CHECK(y.guards_intact());
    };
    for (const PoolCase& pc : kPoolCases) {
      run(pc, 0.0f);
      run(pc, -5.0f);
    }
    for (const PoolCase& pc : dilated) {
      run(pc, 0.0f);
      run(pc, -5.0f);
    }
  }
}

TEST_CASE("max_pool2d_f32: NaN propagates") {
  ThreadPool pool(1);
  Pool2dParams p;
  p.c = 1;
  p.h_in = p.w_in = 4;
  p.kernel_h = p.kernel_w = 2;
  p.stride_h = p.stride_w = 2;
  p.h_out = p.w_out = 2;
  auto x = random_floats(16, 5);
  x[5] = NAN;  // window (0, 0)
  Guarded y(4);
  aotc::rt::max_pool2d_f32(pool, p, x.data(), y.data());
  CHECK(std::isnan(y.data()[0]));
  for (int i = 1; i < 4; ++i) CHECK(!std::isnan(y.data()[i]));
}

TEST_CASE("max_pool2d_f32: NaN propagates through the vector paths (stride 1 and 2, wide rows)") {
  for (int64_t stride : {1, 2}) {
    ThreadPool pool(2);
    Pool2dParams p;
    p.n = 2;
    p.c = 3;
    p.h_in = 23;
    p.w_in = 45;
    p.kernel_h = p.kernel_w = 3;
    p.stride_h = p.stride_w = stride;
    p.pad_h = p.pad_w = 1;
    p.h_out = pool_out_size(p.h_in, 3, 1, stride, 1, false);
    p.w_out = pool_out_size(p.w_in, 3, 1, stride, 1, false);
    auto x = random_floats(static_cast<size_t>(p.n * p.c * p.h_in * p.w_in), 17);
    for (size_t i = 7; i < x.size(); i += 97) x[i] = NAN;  // rows, columns and planes vary
    Guarded y(static_cast<size_t>(p.n * p.c * p.h_out * p.w_out));
    aotc::rt::max_pool2d_f32(pool, p, x.data(), y.data());
    const auto ref = ref_max_pool2d(p, x.data());
    int nans = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      INFO("stride " << stride << " output " << i);
      CHECK(std::isnan(y.data()[i]) == std::isnan(ref[i]));
      if (!std::isnan(ref[i])) CHECK(y.data()[i] == ref[i]);
      nans += std::isnan(ref[i]) ? 1 : 0;
    }
    CHECK(nans > 10);
    CHECK(y.guards_intact());
  }
}

TEST_CASE("avg_pool2d_f32: count_include_pad, ceil_mode border, divisor_override") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 21;
    for (const PoolCase& pc : kPoolCases)
      for (bool include_pad : {true, false})
        for (int64_t divisor : {0, 3}) {
          Pool2dParams p = make_params(pc, false);
          p.count_include_pad = include_pad;
          p.divisor_override = divisor;
          const auto x = random_floats(static_cast<size_t>(p.n * p.c * p.h_in * p.w_in), ++seed);
          Guarded y(static_cast<size_t>(p.n * p.c * p.h_out * p.w_out));
          aotc::rt::avg_pool2d_f32(pool, p, x.data(), y.data());
          INFO(std::string(pc.name) << " include_pad=" << include_pad << " divisor=" << divisor
                                    << " threads=" << threads);
          CHECK(rel_l2(y.values(), ref_avg_pool2d(p, x.data())) <= kTolerance);
          CHECK(y.guards_intact());
        }
  }
}

TEST_CASE("avg_pool2d_f32: torch's divisor at the ceil_mode border") {
  // 1x1x6x6, kernel 3, stride 2, pad 1, ceil_mode: torch gives a 4x4 output whose last
  // window rows/cols cover input [5, 6) plus one padded cell; beyond the padded border
  // nothing counts. With all ones: corners count 4 of 9 padded, 2 of the last window.
  ThreadPool pool(1);
  Pool2dParams p;
  p.c = 1;
  p.h_in = p.w_in = 6;
  p.kernel_h = p.kernel_w = 3;
  p.stride_h = p.stride_w = 2;
  p.pad_h = p.pad_w = 1;
  p.h_out = p.w_out = pool_out_size(6, 3, 1, 2, 1, true);
  REQUIRE(p.h_out == 4);
  const std::vector<float> x(36, 1.0f);
  Guarded y(16);
  aotc::rt::avg_pool2d_f32(pool, p, x.data(), y.data());
  CHECK(y.data()[0] == doctest::Approx(4.0 / 9.0));   // window rows -1..1: 2 real of 3
  CHECK(y.data()[3] == doctest::Approx(2.0 / 6.0));   // rows -1..1, cols 5..6(+pad): 2x1 of 3x2
  CHECK(y.data()[15] == doctest::Approx(1.0 / 4.0));  // rows/cols 5..6: 1 real of 2x2
}

TEST_CASE("adaptive_avg_pool2d_f32: bins as torch computes them") {
  struct Case {
    int64_t n, c, h, w, oh, ow;
  };
  const Case cases[] = {{1, 3, 7, 7, 1, 1},    {2, 4, 13, 17, 3, 5}, {1, 2, 5, 5, 7, 7},
                        {1, 1, 10, 10, 3, 3},  {2, 8, 33, 33, 1, 1}, {1, 2, 6, 9, 6, 9},
                        {4, 64, 14, 14, 1, 1}, {1, 3, 1, 1, 2, 3},   {2, 16, 33, 31, 7, 7}};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 31;
    for (const Case& c : cases) {
      const auto x = random_floats(static_cast<size_t>(c.n * c.c * c.h * c.w), ++seed);
      Guarded y(static_cast<size_t>(c.n * c.c * c.oh * c.ow));
      aotc::rt::adaptive_avg_pool2d_f32(pool, c.n, c.c, c.h, c.w, c.oh, c.ow, x.data(), y.data());
      INFO("in " << c.h << "x" << c.w << " out " << c.oh << "x" << c.ow << " threads=" << threads);
      CHECK(rel_l2(y.values(), ref_adaptive_avg_pool2d(c.n, c.c, c.h, c.w, c.oh, c.ow, x.data())) <=
            kTolerance);
      CHECK(y.guards_intact());
    }
  }
}
