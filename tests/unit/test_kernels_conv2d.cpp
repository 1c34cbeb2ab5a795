// conv2d_f32 against the naive reference: pointwise, im2col and depthwise paths, with
// the scratch buffer exactly conv2d_scratch_bytes() long and guarded.
#include <doctest/doctest.h>

#include "kernel_reference.h"

namespace {

using aotc::rt::Conv2dParams;
using aotc::rt::ThreadPool;
using namespace aotc::test;

struct ConvCase {
  const char* name;
  int64_t n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, groups;
};

const ConvCase kConvCases[] = {
    {"pointwise", 1, 3, 7, 7, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"pointwise groups 2", 2, 4, 5, 3, 6, 1, 1, 1, 1, 0, 0, 1, 1, 2},
    {"pointwise many images", 8, 32, 17, 17, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"pointwise large", 1, 64, 33, 33, 128, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"1x1 stride 2", 1, 8, 13, 13, 16, 1, 1, 2, 2, 0, 0, 1, 1, 1},
    {"3x3 pad 1", 1, 3, 17, 17, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"3x5 stride (2,1) pad (1,2)", 2, 5, 13, 17, 7, 3, 5, 2, 1, 1, 2, 1, 1, 1},
    {"dilation 2", 1, 4, 13, 13, 6, 3, 3, 1, 1, 2, 2, 2, 2, 1},
    {"dilation (1,2) stride 2", 1, 3, 16, 15, 4, 3, 3, 2, 2, 1, 2, 1, 2, 1},
    {"groups 2", 1, 6, 9, 11, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2},
    {"groups 3 stride 2", 2, 9, 12, 12, 6, 3, 3, 2, 2, 1, 1, 1, 1, 3},
    {"7x7 stride 2 stem", 1, 3, 33, 33, 8, 7, 7, 2, 2, 3, 3, 1, 1, 1},
    {"pad 2 > kernel/2", 1, 2, 5, 5, 3, 3, 3, 1, 1, 2, 2, 1, 1, 1},
    {"1x1 input, padded 3x3", 1, 3, 1, 1, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"no padding 2x2 stride 2", 1, 4, 7, 9, 5, 2, 2, 2, 2, 0, 0, 1, 1, 1},
    {"depthwise 3x3", 2, 8, 13, 13, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8},
    {"depthwise stride 2", 1, 5, 17, 16, 5, 3, 3, 2, 2, 1, 1, 1, 1, 5},
    {"depthwise 5x5 dilation 2", 1, 3, 13, 13, 3, 5, 5, 1, 1, 4, 4, 2, 2, 3},
    {"depthwise 1x1", 1, 4, 5, 5, 4, 1, 1, 1, 1, 0, 0, 1, 1, 4},
    {"depthwise 3x1 stride (1,2)", 1, 6, 7, 9, 6, 3, 1, 1, 2, 1, 0, 1, 1, 6},
    {"depthwise large", 2, 32, 56, 56, 32, 3, 3, 1, 1, 1, 1, 1, 1, 32},
    {"depthwise 5x5 stride 2 pad 2", 1, 7, 29, 31, 7, 5, 5, 2, 2, 2, 2, 1, 1, 7},
    {"depthwise 3x3 stride 3 dilation 2", 1, 3, 20, 37, 3, 3, 3, 3, 3, 2, 2, 2, 2, 3},
    {"depthwise 3x5 no pad odd width", 2, 4, 9, 41, 4, 3, 5, 1, 1, 0, 0, 1, 1, 4},
    {"depthwise too wide for row buffers", 1, 2, 4, 5000, 2, 3, 3, 1, 1, 1, 1, 1, 1, 2},
    {"depthwise pad 3 > kernel, stride (1,2)", 1, 2, 6, 7, 2, 3, 3, 1, 2, 3, 3, 1, 1, 2},
    {"channel multiplier 2", 1, 4, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 4},
    {"im2col large", 2, 16, 33, 33, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1},
};

struct Clamp {
  float lo, hi;
};
const Clamp kClamps[] = {{-INFINITY, INFINITY}, {0.0f, INFINITY}, {0.0f, 0.3f}};

}  // namespace

TEST_CASE("conv2d_f32: all paths, bias, clamp epilogue") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 7;
    for (const ConvCase& cc : kConvCases)
      for (bool has_bias : {false, true})
        for (const Clamp& cl : kClamps) {
          Conv2dParams p;
          p.n = cc.n;
          p.c_in = cc.c_in;
          p.h_in = cc.h;
          p.w_in = cc.w;
          p.c_out = cc.c_out;
          p.kernel_h = cc.kh;
          p.kernel_w = cc.kw;
          p.stride_h = cc.sh;
          p.stride_w = cc.sw;
          p.pad_h = cc.ph;
          p.pad_w = cc.pw;
          p.dilation_h = cc.dh;
          p.dilation_w = cc.dw;
          p.groups = cc.groups;
          p.h_out = (cc.h + 2 * cc.ph - cc.dh * (cc.kh - 1) - 1) / cc.sh + 1;
          p.w_out = (cc.w + 2 * cc.pw - cc.dw * (cc.kw - 1) - 1) / cc.sw + 1;
          p.has_bias = has_bias;
          p.clamp_lo = cl.lo;
          p.clamp_hi = cl.hi;
          const auto x = random_floats(static_cast<size_t>(p.n * p.c_in * p.h_in * p.w_in), ++seed);
          const auto w = random_floats(
              static_cast<size_t>(p.c_out * (p.c_in / p.groups) * p.kernel_h * p.kernel_w), ++seed);
          const auto bias = random_floats(static_cast<size_t>(p.c_out), ++seed);
          const int64_t scratch_bytes = aotc::rt::conv2d_scratch_bytes(p);
          REQUIRE(scratch_bytes % sizeof(float) == 0);
          Guarded scratch(static_cast<size_t>(scratch_bytes) / sizeof(float));
          Guarded y(static_cast<size_t>(p.n * p.c_out * p.h_out * p.w_out));
          PoolScratch thread_scratch(pool, aotc::rt::conv2d_thread_scratch_bytes(p));
          aotc::rt::conv2d_f32(pool, p, x.data(), w.data(), has_bias ? bias.data() : nullptr, y.data(),
                               scratch.data());
          CHECK(thread_scratch.guard_intact());
          const auto want = ref_conv2d(p, x.data(), w.data(), bias.data());
          INFO(cc.name << " bias=" << has_bias << " clamp=[" << cl.lo << "," << cl.hi
                       << "] threads=" << threads);
          CHECK(rel_l2(y.values(), want) <= kTolerance);
          CHECK(y.guards_intact());
          CHECK(scratch.guards_intact());
        }
  }
}

TEST_CASE("conv2d_scratch_bytes: none for pointwise and depthwise") {
  Conv2dParams p;
  p.c_in = p.c_out = 8;
  p.h_out = p.w_out = 5;
  CHECK(aotc::rt::conv2d_scratch_bytes(p) == 0);  // 1x1 stride 1
  p.kernel_h = p.kernel_w = 3;
  p.groups = 8;
  CHECK(aotc::rt::conv2d_scratch_bytes(p) == 0);  // depthwise
  p.groups = 1;
  CHECK(aotc::rt::conv2d_scratch_bytes(p) == 8 * 9 * 25 * 4);
}
