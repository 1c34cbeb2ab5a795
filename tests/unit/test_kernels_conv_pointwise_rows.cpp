// conv2d_pointwise_rows_f32 (a 1x1 stride-1 convolution with the positions as the tile's
// rows, its weight packed transposed) against the naive reference: planes whose size is a
// multiple of 7 or 14 and planes that leave 1-13 positions for the last tile, fewer positions than
// one tile, outputs in whole 32-channel groups, a last group of one panel, ragged panels
// (1, 15, 17, 33, 47 outputs), depths over several depth blocks, batches, every thread
// count, with and without bias, residual and clamp; sentinels around the output. The file's
// name puts it in unit_avx2 too (the portable tiles).
#include <doctest/doctest.h>

#include <string>

#include "kernel_reference.h"

namespace {

using aotc::rt::Conv2dParams;
using aotc::rt::ThreadPool;
using namespace aotc::test;

struct Case {
  const char* name;
  int64_t n, c_in, c_out, h, w;
};

const Case kCases[] = {
    {"7x7, 160 outputs (5 panels: last group of one)", 1, 96, 160, 7, 7},
    {"14x14, 64 outputs", 1, 200, 64, 14, 14},
    {"5x3: two tiles, 1 position left", 1, 40, 48, 5, 3},
    {"2x2: fewer positions than a tile", 1, 9, 32, 2, 2},
    {"1 output", 1, 30, 1, 6, 6},
    {"15 outputs, 13x13 (169 = 24 x 7 + 1)", 1, 17, 15, 13, 13},
    {"17 outputs, 3 images", 3, 11, 17, 4, 5},
    {"33 outputs, 1x1 plane", 2, 64, 33, 1, 1},
    {"47 outputs, depth 700 (3 depth blocks)", 1, 700, 47, 3, 11},
    {"1 deep, 6 positions", 1, 1, 40, 2, 3},
    {"320 outputs, depth 960, 7x7", 1, 960, 320, 7, 7},
    {"12x11 (132 = 18 x 7 + 6)", 1, 33, 96, 12, 11},
    {"3x9 (27 = 14 + 13)", 1, 50, 64, 3, 9},
    {"4x6 (24 = 14 + 10), 2 images", 2, 21, 32, 4, 6},
};

struct Clamp {
  float lo, hi;
};
const Clamp kClamps[] = {{-INFINITY, INFINITY}, {0.0f, INFINITY}, {0.0f, 0.3f}};

Conv2dParams params_of(const Case& c, bool has_bias, const Clamp& cl) {
  Conv2dParams p;
  p.n = c.n;
  p.c_in = c.c_in;
  p.c_out = c.c_out;
  p.h_in = p.h_out = c.h;
  p.w_in = p.w_out = c.w;
  p.has_bias = has_bias;
  p.clamp_lo = cl.lo;
  p.clamp_hi = cl.hi;
  return p;
}

std::vector<float> pack_transposed(const Conv2dParams& p, const std::vector<float>& w) {
  std::vector<float> packed(static_cast<size_t>(aotc::rt::conv2d_pointwise_rows_packed_floats(p)));
  aotc::rt::conv2d_pointwise_rows_pack(p, w.data(), packed.data());
  return packed;
}

void check_case(ThreadPool& pool, const Case& c, bool has_bias, const Clamp& cl, bool with_residual,
                uint32_t& seed) {
  const Conv2dParams p = params_of(c, has_bias, cl);
  REQUIRE(aotc::rt::conv2d_pointwise_rows_applies(p));
  const size_t y_size = static_cast<size_t>(p.n * p.c_out * p.h_out * p.w_out);
  const auto x = random_floats(static_cast<size_t>(p.n * p.c_in * p.h_in * p.w_in), ++seed);
  const auto w = random_floats(static_cast<size_t>(p.c_out * p.c_in), ++seed);
  const auto bias = random_floats(static_cast<size_t>(p.c_out), ++seed);
  const auto residual = random_floats(with_residual ? y_size : 0, ++seed);
  const auto packed = pack_transposed(p, w);
  Guarded y(y_size);
  aotc::rt::conv2d_pointwise_rows_f32(pool, p, x.data(), packed.data(), has_bias ? bias.data() : nullptr,
                                      with_residual ? residual.data() : nullptr, y.data());
  const auto want = ref_conv2d(p, x.data(), w.data(), bias.data(), with_residual ? residual.data() : nullptr);
  INFO(std::string(c.name) << " bias=" << has_bias << " clamp=[" << cl.lo << "," << cl.hi
                           << "] residual=" << with_residual << " threads=" << pool.size());
  CHECK(rel_l2(y.values(), want) <= kTolerance);
  CHECK(y.guards_intact());
}

}  // namespace

TEST_CASE("conv2d_pointwise_rows_f32: every tile size, panel count and depth, bias, residual, clamp") {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    uint32_t seed = 11;
    for (const Case& c : kCases)
      for (bool has_bias : {false, true})
        for (bool with_residual : {false, true})
          for (const Clamp& cl : kClamps) check_case(pool, c, has_bias, cl, with_residual, seed);
  }
}

TEST_CASE("conv2d_pointwise_rows_f32: NaN reaches only its position's outputs; relu keeps it") {
  ThreadPool pool(2);
  Conv2dParams p;
  p.c_in = 20;
  p.c_out = 40;
  p.h_in = p.h_out = 7;
  p.w_in = p.w_out = 7;
  p.has_bias = true;
  p.clamp_lo = 0.0f;
  std::vector<float> x(20 * 49, 0.5f), w(40 * 20, 0.25f), bias(40, 0.0f);
  x[3 * 49 + 48] = NAN;  // channel 3, the last position: alone in the last tile (49 = 7 x 7)
  bias[5] = -100.0f;
  const auto packed = pack_transposed(p, w);
  Guarded y(40 * 49);
  aotc::rt::conv2d_pointwise_rows_f32(pool, p, x.data(), packed.data(), bias.data(), nullptr, y.data());
  const auto got = y.values();
  for (int64_t c = 0; c < 40; ++c)
    for (int64_t q = 0; q < 49; ++q) {
      const float v = got[static_cast<size_t>(c * 49 + q)];
      INFO("c=" << c << " q=" << q);
      if (q == 48)
        CHECK(std::isnan(v));
      else if (c == 5)
        CHECK(v == 0.0f);
      else
        CHECK(v == doctest::Approx(2.5));
    }
  CHECK(y.guards_intact());
}

TEST_CASE(
    "conv2d_pointwise_rows_prefers: small planes, deep, whole panels, few threads; applies: 1x1 stride 1") {
  Conv2dParams p;
  p.c_in = 960;
  p.c_out = 160;
  p.h_in = p.h_out = p.w_in = p.w_out = 7;
  CHECK(aotc::rt::conv2d_pointwise_rows_prefers(p));
  p.h_in = p.h_out = p.w_in = p.w_out = 28;
  CHECK(aotc::rt::conv2d_pointwise_rows_prefers(p));
  p.h_in = p.h_out = p.w_in = p.w_out = 56;  // large planes stay on the implicit GEMM
  CHECK_FALSE(aotc::rt::conv2d_pointwise_rows_prefers(p));
  p.h_in = p.h_out = p.w_in = p.w_out = 14;
  p.c_out = 40;  // a panel of 8 in 16 lanes
  CHECK_FALSE(aotc::rt::conv2d_pointwise_rows_prefers(p));
  p.c_out = 64;
  p.c_in = 64;  // shallow: the transposed store is paid once per depth
  CHECK_FALSE(aotc::rt::conv2d_pointwise_rows_prefers(p));
  p.c_in = 384;
  CHECK(aotc::rt::conv2d_pointwise_rows_prefers(p));
  // A model for many threads (aotc --cpu-threads) keeps them on the implicit GEMM.
  CHECK(aotc::rt::conv2d_pointwise_rows_prefers(p, 2));
  CHECK(aotc::rt::conv2d_pointwise_rows_prefers(p, 7));
  CHECK_FALSE(aotc::rt::conv2d_pointwise_rows_prefers(p, 8));
  CHECK_FALSE(aotc::rt::conv2d_pointwise_rows_prefers(p, 16));
  Conv2dParams q = p;
  q.stride_h = q.stride_w = 2;
  q.h_out = q.w_out = 7;
  CHECK_FALSE(aotc::rt::conv2d_pointwise_rows_applies(q));
  q = p;
  q.kernel_h = q.kernel_w = 3;
  q.pad_h = q.pad_w = 1;
  CHECK_FALSE(aotc::rt::conv2d_pointwise_rows_applies(q));
  q = p;
  q.groups = 2;
  CHECK_FALSE(aotc::rt::conv2d_pointwise_rows_applies(q));
}
