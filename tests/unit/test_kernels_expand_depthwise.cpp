// conv2d_expand_depthwise_f32 against the naive reference of its two convolutions (the 1x1
// expansion with its bias and clamp, and a silu on it or not, then the depthwise
// convolution with its own): strides,
// dilation, padding wider than the kernel, a 1x1 depthwise with stride 2 (rows skipped),
// channel counts that are not multiples of 8 or 16, depths over one depth block, planes so
// wide that one chunk holds few units, batches, every thread count; the thread scratch
// exactly conv2d_expand_depthwise_thread_scratch_bytes() long and guarded, sentinels around
// the output (an element not written stays a NaN).
#include <doctest/doctest.h>

#include <string>

#include "kernel_reference.h"

namespace {

using aotc::rt::Conv2dParams;
using aotc::rt::ThreadPool;
using namespace aotc::test;

struct Case {
  const char* name;
  int64_t n, c_in, c_mid, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
};

const Case kCases[] = {
    {"mobilenet first block, odd plane, stride 2", 1, 16, 96, 23, 23, 3, 3, 2, 2, 1, 1, 1, 1},
    {"expansion 6x, stride 1", 1, 24, 144, 19, 17, 3, 3, 1, 1, 1, 1, 1, 1},
    {"channels not a multiple of 8", 2, 5, 37, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1},
    {"5x5 dilation 2", 1, 8, 40, 13, 14, 5, 5, 1, 1, 4, 4, 2, 2},
    {"7x7 plane, 960 channels", 1, 160, 960, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1},
    {"depth over one block", 1, 600, 24, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1},
    {"1x1 depthwise stride 2", 1, 8, 16, 9, 9, 1, 1, 2, 2, 0, 0, 1, 1},
    {"padding wider than the kernel", 1, 4, 16, 6, 5, 3, 3, 1, 1, 3, 2, 1, 1},
    {"wide plane, several chunks", 1, 3, 256, 5, 300, 3, 3, 1, 1, 1, 1, 1, 1},
    {"batch 3, stride (2, 1)", 3, 6, 24, 8, 8, 3, 3, 2, 1, 1, 1, 1, 1},
    {"3x1 stride (1, 2)", 1, 7, 20, 10, 13, 3, 1, 1, 2, 1, 0, 1, 1},
    {"one column", 1, 9, 12, 6, 1, 3, 3, 1, 1, 1, 1, 1, 1},
    // Few units for the threads: each image's output rows in parts (row_parts_for), expanded
    // with the rows they share; on a wide plane, several ring strips a part.
    {"tall plane, 2 units (row parts)", 1, 8, 16, 40, 9, 3, 3, 1, 1, 1, 1, 1, 1},
    {"tall and wide, 2 units (row parts, strips)", 1, 8, 16, 64, 300, 3, 3, 1, 1, 1, 1, 1, 1},
    {"row parts, 5x5 stride 2", 1, 4, 8, 61, 20, 5, 5, 2, 2, 2, 2, 1, 1},
};

struct Clamp {
  float lo, hi;
};
const Clamp kClamps[] = {{-INFINITY, INFINITY}, {0.0f, 6.0f}, {0.0f, 0.3f}};

struct Layer {
  Conv2dParams pw, dw;
};

Layer layer_of(const Case& c, bool has_bias, const Clamp& pw_clamp, const Clamp& dw_clamp) {
  Layer l;
  Conv2dParams& pw = l.pw;
  pw.n = c.n;
  pw.c_in = c.c_in;
  pw.c_out = c.c_mid;
  pw.h_in = pw.h_out = c.h;
  pw.w_in = pw.w_out = c.w;
  pw.has_bias = has_bias;
  pw.clamp_lo = pw_clamp.lo;
  pw.clamp_hi = pw_clamp.hi;
  Conv2dParams& dw = l.dw;
  dw.n = c.n;
  dw.c_in = dw.c_out = dw.groups = c.c_mid;
  dw.h_in = c.h;
  dw.w_in = c.w;
  dw.kernel_h = c.kh;
  dw.kernel_w = c.kw;
  dw.stride_h = c.sh;
  dw.stride_w = c.sw;
  dw.pad_h = c.ph;
  dw.pad_w = c.pw;
  dw.dilation_h = c.dh;
  dw.dilation_w = c.dw;
  dw.h_out = (c.h + 2 * c.ph - c.dh * (c.kh - 1) - 1) / c.sh + 1;
  dw.w_out = (c.w + 2 * c.pw - c.dw * (c.kw - 1) - 1) / c.sw + 1;
  dw.has_bias = has_bias;
  dw.clamp_lo = dw_clamp.lo;
  dw.clamp_hi = dw_clamp.hi;
  return l;
}

std::vector<float> pack_w1(const Conv2dParams& pw, const std::vector<float>& w1) {
  aotc::rt::GemmParams g;
  g.k = pw.c_in;
  g.n = pw.c_out;
  g.trans_b = true;
  g.ldb = pw.c_in;
  std::vector<float> packed(static_cast<size_t>(aotc::rt::gemm_prepacked_floats(g.n, g.k)));
  aotc::rt::gemm_prepack_weights(g, w1.data(), packed.data());
  return packed;
}

// The fused kernel's output and the reference's for x.
void run_case(ThreadPool& pool, const Layer& l, const std::vector<float>& x, uint32_t& seed,
              std::vector<float>& got, std::vector<double>& want, bool& guards, bool silu = false) {
  const Conv2dParams &pw = l.pw, &dw = l.dw;
  REQUIRE(aotc::rt::conv2d_expand_depthwise_applies(pw, dw));
  const auto w1 = random_floats(static_cast<size_t>(pw.c_out * pw.c_in), ++seed);
  const auto b1 = random_floats(static_cast<size_t>(pw.c_out), ++seed);
  const auto w2 = random_floats(static_cast<size_t>(dw.c_out * dw.kernel_h * dw.kernel_w), ++seed);
  const auto b2 = random_floats(static_cast<size_t>(dw.c_out), ++seed);
  const auto packed = pack_w1(pw, w1);
  Guarded y(static_cast<size_t>(dw.n * dw.c_out * dw.h_out * dw.w_out));
  PoolScratch scratch(pool, aotc::rt::conv2d_expand_depthwise_thread_scratch_bytes(pw, dw));
  aotc::rt::conv2d_expand_depthwise_f32(pool, pw, dw, x.data(), packed.data(), b1.data(), w2.data(),
                                        b2.data(), y.data(), silu);
  guards = y.guards_intact() && scratch.guard_intact();
  got = y.values();
  const auto mid = ref_conv2d(pw, x.data(), w1.data(), b1.data());
  std::vector<float> mid_f(mid.begin(), mid.end());
  if (silu)
    for (float& v : mid_f)
      v = static_cast<float>(static_cast<double>(v) / (1.0 + std::exp(-static_cast<double>(v))));
  want = ref_conv2d(dw, mid_f.data(), w2.data(), b2.data());
}

}  // namespace

TEST_CASE("conv2d_expand_depthwise_f32: both convolutions, every geometry, bias, clamp and silu") {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    uint32_t seed = 11;
    for (const Case& c : kCases)
      for (bool has_bias : {false, true})
        for (const Clamp& pw_clamp : kClamps)
          for (const Clamp& dw_clamp : {kClamps[0], kClamps[1]})
            for (bool silu : {false, true}) {
              const Layer l = layer_of(c, has_bias, pw_clamp, dw_clamp);
              const auto x = random_floats(static_cast<size_t>(c.n * c.c_in * c.h * c.w), ++seed);
              std::vector<float> got;
              std::vector<double> want;
              bool guards = false;
              run_case(pool, l, x, seed, got, want, guards, silu);
              INFO(std::string(c.name) << " bias=" << has_bias << " pw clamp=[" << pw_clamp.lo << ","
                                       << pw_clamp.hi << "] dw clamp=[" << dw_clamp.lo << "," << dw_clamp.hi
                                       << "] silu=" << silu << " threads=" << threads);
              CHECK(rel_l2(got, want) <= kTolerance);
              CHECK(guards);
            }
  }
}

TEST_CASE("conv2d_expand_depthwise_f32: a NaN in the input reaches the outputs that read it") {
  ThreadPool pool(2);
  uint32_t seed = 5;
  const Case c{"nan", 1, 4, 24, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1};
  const Layer l = layer_of(c, true, kClamps[1], kClamps[1]);
  auto x = random_floats(static_cast<size_t>(c.c_in * c.h * c.w), ++seed);
  x[static_cast<size_t>(2 * 81 + 4 * 9 + 4)] = NAN;  // channel 2, centre
  std::vector<float> got;
  std::vector<double> want;
  bool guards = false;
  run_case(pool, l, x, seed, got, want, guards);
  CHECK(guards);
  for (int64_t ch = 0; ch < c.c_mid; ++ch)
    for (int64_t oh = 0; oh < 9; ++oh)
      for (int64_t ow = 0; ow < 9; ++ow) {
        const float v = got[static_cast<size_t>((ch * 9 + oh) * 9 + ow)];
        const bool near = oh >= 3 && oh <= 5 && ow >= 3 && ow <= 5;
        INFO("channel " << ch << " at " << oh << "," << ow);
        CHECK(std::isnan(v) == near);
      }
}

TEST_CASE("conv2d_expand_depthwise_applies: only a 1x1 stride-1 expansion into a depthwise convolution") {
  const Layer l = layer_of(kCases[0], true, kClamps[0], kClamps[0]);
  CHECK(aotc::rt::conv2d_expand_depthwise_applies(l.pw, l.dw));
  Layer strided = l;
  strided.pw.stride_h = 2;
  CHECK_FALSE(aotc::rt::conv2d_expand_depthwise_applies(strided.pw, strided.dw));
  Layer grouped = l;
  grouped.pw.groups = 2;
  CHECK_FALSE(aotc::rt::conv2d_expand_depthwise_applies(grouped.pw, grouped.dw));
  Layer mismatch = l;
  mismatch.pw.c_out = l.dw.c_in + 8;
  CHECK_FALSE(aotc::rt::conv2d_expand_depthwise_applies(mismatch.pw, mismatch.dw));
  Layer not_depthwise = l;
  not_depthwise.dw.groups = 1;
  CHECK_FALSE(aotc::rt::conv2d_expand_depthwise_applies(not_depthwise.pw, not_depthwise.dw));
}
