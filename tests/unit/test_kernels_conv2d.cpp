// conv2d_f32 against the naive reference: the implicit-GEMM path (pointwise and general
// column gathering, each thread split, depth and column blocking, ragged micro-tiles) and
// the depthwise paths, with the scratch buffer exactly conv2d_scratch_bytes() long and
// guarded.
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
    {"pointwise 3 images to 13 (few rows)", 3, 32, 13, 11, 13, 1, 1, 1, 1, 0, 0, 1, 1, 1},
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
    {"depthwise 8-lane blocks odd width", 1, 24, 11, 29, 24, 3, 3, 1, 1, 1, 1, 1, 1, 24},
    {"depthwise 8-lane blocks stride 2 ragged", 1, 20, 15, 23, 20, 3, 3, 2, 2, 1, 1, 1, 1, 20},
    {"depthwise 8-lane blocks 7x7 plane", 2, 16, 7, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16},
    {"depthwise 5x5 stride 2 pad 2", 1, 7, 29, 31, 7, 5, 5, 2, 2, 2, 2, 1, 1, 7},
    {"depthwise 5x5 8-lane blocks odd plane", 1, 12, 13, 19, 12, 5, 5, 1, 1, 2, 2, 1, 1, 12},
    {"depthwise 5x5 8-lane blocks 7x7 plane", 2, 16, 7, 7, 16, 5, 5, 1, 1, 2, 2, 1, 1, 16},
    {"depthwise 3x3 stride 3 dilation 2", 1, 3, 20, 37, 3, 3, 3, 3, 3, 2, 2, 2, 2, 3},
    {"depthwise 3x5 no pad odd width", 2, 4, 9, 41, 4, 3, 5, 1, 1, 0, 0, 1, 1, 4},
    {"depthwise too wide for row buffers", 1, 2, 4, 5000, 2, 3, 3, 1, 1, 1, 1, 1, 1, 2},
    {"depthwise pad 3 > kernel, stride (1,2)", 1, 2, 6, 7, 2, 3, 3, 1, 2, 3, 3, 1, 1, 2},
    {"channel multiplier 2", 1, 4, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 4},
    // With AVX-512, planes of at most 16 output and 32 input columns take a row per vector
    // (conv2d_depthwise_rows.cpp): a ymm where at most 8 output and 16 input columns, else a
    // zmm; channel counts past a multiple of the planes done together (8 and 4), groups of
    // planes across two images; input rows of exactly 16 and 32; kernels up to 16 wide;
    // padding that makes the output wider than the input; enough planes for several ranges.
    {"depthwise rows: 16 wide, 13 channels", 2, 13, 11, 16, 13, 3, 3, 1, 1, 1, 1, 1, 1, 13},
    {"depthwise rows: 32 wide stride 2 to 16", 1, 11, 9, 32, 11, 3, 3, 2, 2, 1, 1, 1, 1, 11},
    {"depthwise rows: 9 wide, 5x5 pad 2", 1, 9, 10, 9, 9, 5, 5, 1, 1, 2, 2, 1, 1, 9},
    {"depthwise rows: 16 wide to 8, 5x5 stride 2", 1, 19, 16, 16, 19, 5, 5, 2, 2, 2, 2, 1, 1, 19},
    {"depthwise rows: tall plane, dilation 2 stride 2", 1, 5, 301, 29, 5, 3, 3, 2, 2, 2, 2, 2, 2, 5},
    {"depthwise rows: one column", 1, 17, 6, 1, 17, 3, 3, 1, 1, 1, 1, 1, 1, 17},
    {"depthwise rows: 7x1 kernel no pad", 2, 10, 12, 14, 10, 7, 1, 1, 1, 0, 0, 1, 1, 10},
    {"depthwise rows: 1x7 kernel pad 3 stride (2,3)", 1, 9, 8, 20, 9, 1, 7, 2, 3, 0, 3, 1, 1, 9},
    {"depthwise rows: ymm, 11 channels, 2 images", 2, 11, 7, 7, 11, 3, 3, 1, 1, 1, 1, 1, 1, 11},
    {"depthwise rows: 1x11 kernel pad 5", 1, 6, 5, 12, 6, 1, 11, 1, 1, 0, 5, 1, 1, 6},
    {"depthwise rows: 1x16 kernel no pad", 1, 5, 4, 30, 5, 1, 16, 1, 1, 0, 0, 1, 1, 5},
    {"depthwise rows: output wider than input", 1, 7, 5, 5, 7, 3, 3, 1, 1, 3, 3, 1, 1, 7},
    {"depthwise rows: stride 4 over 32 columns", 1, 6, 9, 32, 6, 3, 3, 4, 4, 1, 1, 1, 1, 6},
    {"depthwise rows: 600 planes of 7x7 (ranges)", 2, 300, 7, 7, 300, 3, 3, 1, 1, 1, 1, 1, 1, 300},
    // Depthwise over 8-channel blocks in strips of output rows (planes over the scratch).
    {"depthwise strips 3x3 stride 2", 1, 9, 113, 111, 9, 3, 3, 2, 2, 1, 1, 1, 1, 9},
    {"depthwise strips 5x5 dilation 2", 1, 3, 97, 71, 3, 5, 5, 1, 1, 4, 4, 2, 2, 3},
    {"depthwise strips 3x3", 2, 8, 80, 75, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8},
    {"im2col large", 2, 16, 33, 33, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    // Implicit GEMM: 6-row tiles with 1..5 rows left, panels of 16 with <= 8 or > 8
    // columns left, depth in 2 or 3 blocks of <= 512, several column blocks, both splits.
    {"gemm 13 x 49 x 720 (2 depth blocks)", 1, 80, 7, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"gemm 50 x 81 x 1098 (3 depth blocks)", 1, 122, 9, 9, 50, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"gemm 13 x 49 x 360 (1 depth block)", 1, 40, 7, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"gemm 200 x 49 x 288 (row split)", 1, 32, 7, 7, 200, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"gemm 511 x 9 x 320 stride 2 (row split)", 1, 80, 6, 6, 511, 2, 2, 2, 2, 0, 0, 1, 1, 1},
    {"gemm 7 x 420 x 300 (column blocks)", 1, 12, 20, 21, 7, 5, 5, 1, 1, 2, 2, 1, 1, 1},
    {"gemm 8 x 1600 x 27 (column blocks)", 1, 3, 40, 40, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"gemm pointwise 70 x 35 x 300", 2, 300, 5, 7, 70, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"gemm pointwise 129 x 23 x 37 (row split)", 1, 37, 1, 23, 129, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"gemm pointwise 22 x 1000 x 17", 1, 17, 40, 25, 22, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"gemm pointwise 200 x 203 x 40 (panels copied as used)", 2, 40, 7, 29, 200, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"gemm groups 2 stride 2 dilation 2", 1, 64, 15, 15, 34, 3, 3, 2, 2, 2, 2, 2, 2, 2},
    {"gemm one output column", 1, 7, 5, 1, 9, 3, 1, 1, 1, 1, 0, 1, 1, 1},
    {"gemm 1x7 then 7x1", 1, 20, 17, 17, 24, 1, 7, 1, 1, 0, 3, 1, 1, 1},
    {"gemm 7x1 stride (2,1) dilation (2,1)", 1, 20, 17, 17, 24, 7, 1, 2, 1, 6, 0, 2, 1, 1},
    {"gemm padding wider than the image", 1, 5, 3, 4, 11, 3, 3, 1, 1, 3, 3, 1, 1, 1},
    // Packing a tap's row whole (row_then_panels): a stride of 3 (the scalar copy), and rows
    // wider than its buffer on one thread (the piecewise copy instead).
    {"gemm 3x3 stride 3", 1, 5, 19, 23, 9, 3, 3, 3, 3, 1, 1, 1, 1, 1},
    {"gemm one input channel over 70x70", 1, 1, 70, 70, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    // A last panel of 1-4 columns as dot products (thin_tile): through the direct 1x1 path
    // (<= 64 outputs), the per-thread block and (row split on 2 threads) the shared packed
    // block, over 1-3 depth blocks with a ragged depth (k % 8 != 0), 0, 1, 2 or 4 rows left.
    {"thin: 1 column left, pointwise 7x7", 1, 40, 7, 7, 30, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"thin: 2 columns left, 3x3 stride 2 to 9x2", 1, 70, 17, 3, 20, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    {"thin: 3 columns left, 1x1 stride 2, depth 603", 1, 603, 13, 9, 70, 1, 1, 2, 2, 0, 0, 1, 1, 1},
    {"thin: 4 columns left, pointwise 14x14, 100 outputs", 1, 48, 14, 14, 100, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"thin: 1 column left, 3x3/2 to 7x7, 3 depth blocks", 2, 130, 14, 14, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    {"thin: 1 column left, 512 outputs over 7x7 (row split)", 1, 36, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    // With AVX-512, 1x1 stride-1 layers of at most 16 outputs take conv2d_pointwise_few_rows:
    // 1, 6, 13 and 16 outputs, depth 1 to 600, ragged last panels (1073 = 67 x 16 + 1,
    // 15 = one partial panel), 2 images; 17 outputs stay on the implicit GEMM.
    {"few rows: 16 outputs, 32 deep, 37x29, 2 images", 2, 32, 37, 29, 16, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"few rows: 1 output, 1 deep", 1, 1, 9, 7, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"few rows: 13 outputs, 600 deep, 5x3", 1, 600, 5, 3, 13, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"few rows: 6 outputs over 112x112", 1, 8, 112, 112, 6, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"few rows: 17 outputs (implicit GEMM)", 1, 24, 19, 21, 17, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    // With AVX-512 and enough thread scratch, at most 4 input channels take
    // conv2d_few_channels: resnet's 7x7/2 stem on a small image, 3x3/2 and 5x5 stems, strides
    // (1, 2) and (2, 1), 1 and 4 channels, output channel counts past a multiple of 8 (8, 13,
    // 3), rows of 16, 17, 31, 32 and 33 positions (one vector, pairs, a masked pair), padding
    // wider than the kernel's reach, several images; 5 channels stay on the implicit GEMM.
    {"few channels: 7x7/2 stem, 64 outputs, 2 images", 2, 3, 37, 41, 64, 7, 7, 2, 2, 3, 3, 1, 1, 1},
    {"few channels: 3x3/2 stem, 13 outputs, 31 wide", 1, 3, 30, 61, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    {"few channels: 5x5 stride 1, 1 channel, 3 outputs, 16 wide", 1, 1, 9, 16, 3, 5, 5, 1, 1, 2, 2, 1, 1, 1},
    {"few channels: 3x5 stride (1, 2), 4 channels, 33 wide", 1, 4, 12, 66, 8, 3, 5, 1, 2, 1, 2, 1, 1, 1},
    {"few channels: 4x4 stride (2, 1), 2 channels, pad 3, 32 wide", 3, 2, 11, 29, 17, 4, 4, 2, 1, 3, 3, 1, 1,
     1},
    {"few channels: 5 channels (implicit GEMM)", 1, 5, 20, 40, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1},
};

struct Clamp {
  float lo, hi;
};
const Clamp kClamps[] = {{-INFINITY, INFINITY}, {0.0f, INFINITY}, {0.0f, 0.3f}};

// One case on one pool, checked against the reference; without thread scratch the
// implicit GEMM packs into a small stack block instead. with_residual adds a residual of
// y's shape before the clamp (the epilogue of passes/fuse_conv_residual.cpp).
void check_case(ThreadPool& pool, const ConvCase& cc, bool has_bias, const Clamp& cl,
                bool thread_scratch_given, uint32_t& seed, bool with_residual = false) {
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
  const auto w =
      random_floats(static_cast<size_t>(p.c_out * (p.c_in / p.groups) * p.kernel_h * p.kernel_w), ++seed);
  const auto bias = random_floats(static_cast<size_t>(p.c_out), ++seed);
  const int64_t scratch_bytes = aotc::rt::conv2d_scratch_bytes(p);
  REQUIRE(scratch_bytes % sizeof(float) == 0);
  Guarded scratch(static_cast<size_t>(scratch_bytes) / sizeof(float));
  const size_t y_size = static_cast<size_t>(p.n * p.c_out * p.h_out * p.w_out);
  Guarded y(y_size);
  Guarded residual(with_residual ? y_size : 0, random_floats(with_residual ? y_size : 0, ++seed));
  PoolScratch thread_scratch(pool, thread_scratch_given ? aotc::rt::conv2d_thread_scratch_bytes(p) : 0);
  aotc::rt::conv2d_f32(pool, p, x.data(), w.data(), has_bias ? bias.data() : nullptr,
                       with_residual ? residual.data() : nullptr, y.data(),
                       scratch_bytes > 0 ? scratch.data() : nullptr);
  CHECK(thread_scratch.guard_intact());
  const auto want = ref_conv2d(p, x.data(), w.data(), bias.data(), with_residual ? residual.data() : nullptr);
  INFO(std::string(cc.name) << " bias=" << has_bias << " clamp=[" << cl.lo << "," << cl.hi
                            << "] threads=" << pool.size() << " thread scratch=" << thread_scratch_given
                            << " residual=" << with_residual);
  CHECK(rel_l2(y.values(), want) <= kTolerance);
  CHECK(y.guards_intact());
  CHECK(scratch.guards_intact());
}

}  // namespace

TEST_CASE("conv2d_f32: all paths, bias, clamp epilogue") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 7;
    for (const ConvCase& cc : kConvCases)
      for (bool has_bias : {false, true})
        for (const Clamp& cl : kClamps) check_case(pool, cc, has_bias, cl, true, seed);
  }
}

// On 8 threads or more a batch's products run in one region (conv2d_gemm.cpp): pieces of
// (image, unit) pairs that cross from one image to the next, M and N splits, groups, a
// thread count that does not divide the work.
const ConvCase kBatchCases[] = {
    {"3 images, 3x3, ragged rows (M split)", 3, 64, 20, 20, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"5 images, 1x1, wide plane (N split)", 5, 24, 40, 37, 16, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"2 images x 2 groups, stride 2", 2, 32, 30, 30, 48, 3, 3, 2, 2, 1, 1, 1, 1, 2},
    {"12 images, more than threads", 12, 16, 14, 14, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"5 images, 1x1 to 16 (few-rows kernel, pieces across images)", 5, 32, 20, 21, 16, 1, 1, 1, 1, 0, 0, 1, 1,
     1},
};

TEST_CASE("conv2d_f32: a batch on 8+ threads in one region") {
  for (int threads : {8, 11}) {
    ThreadPool pool(threads);
    uint32_t seed = 53;
    for (const ConvCase& cc : kBatchCases)
      for (bool given : {true, false})  // with and without the thread scratch
        for (bool with_residual : {false, true})
          check_case(pool, cc, true, kClamps[1], given, seed, with_residual);
  }
}

TEST_CASE("conv2d_f32: a residual added before the clamp, every path") {
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    uint32_t seed = 41;
    for (const ConvCase& cc : kConvCases)
      for (const Clamp& cl : kClamps) check_case(pool, cc, true, cl, true, seed, true);
  }
  ThreadPool pool(2);
  uint32_t seed = 43;
  for (const ConvCase& cc : kConvCases) check_case(pool, cc, false, kClamps[1], false, seed, true);
}

TEST_CASE("conv2d_f32: without thread scratch (stack panel), two threads") {
  ThreadPool pool(2);
  uint32_t seed = 99;
  for (const ConvCase& cc : kConvCases) check_case(pool, cc, true, kClamps[1], false, seed);
}

TEST_CASE("conv2d_f32: NaN and infinity pass through the epilogue") {
  // relu keeps NaN as torch does (clamp_value); -inf inputs meet +inf weights only where
  // the reference also gets inf or NaN.
  ThreadPool pool(2);
  Conv2dParams p;
  p.c_in = 4;
  p.h_in = p.w_in = 9;
  p.c_out = 7;
  p.h_out = p.w_out = 9;
  p.kernel_h = p.kernel_w = 3;
  p.pad_h = p.pad_w = 1;
  p.has_bias = true;
  p.clamp_lo = 0.0f;
  std::vector<float> x(4 * 81, 0.5f), w(7 * 36, 0.25f), bias(7, 0.0f);
  x[40] = NAN;  // channel 0, centre: every output channel sees it in the 3x3 around (4, 4)
  // Channel 1, corner (8, 8): outputs (7..8, 7..8); output 80 = (8, 8) is alone in the last
  // panel (81 = 5 x 16 + 1), which runs as a dot product (thin_tile).
  x[81 + 80] = NAN;
  bias[3] = -100.0f;
  Guarded y(7 * 81);
  PoolScratch thread_scratch(pool, aotc::rt::conv2d_thread_scratch_bytes(p));
  std::vector<float> scratch(static_cast<size_t>(aotc::rt::conv2d_scratch_bytes(p)) / sizeof(float) + 1);
  aotc::rt::conv2d_f32(pool, p, x.data(), w.data(), bias.data(), nullptr, y.data(), scratch.data());
  const auto got = y.values();
  for (int64_t c = 0; c < 7; ++c)
    for (int64_t oh = 0; oh < 9; ++oh)
      for (int64_t ow = 0; ow < 9; ++ow) {
        const float v = static_cast<float>(got[static_cast<size_t>((c * 9 + oh) * 9 + ow)]);
        const bool near = (oh >= 3 && oh <= 5 && ow >= 3 && ow <= 5) || (oh >= 7 && ow >= 7);
        INFO("c=" << c << " oh=" << oh << " ow=" << ow);
        if (near)
          CHECK(std::isnan(v));
        else if (c == 3)
          CHECK(v == 0.0f);
        else
          CHECK(v > 0.0f);
      }
  CHECK(y.guards_intact());
}

TEST_CASE("conv2d_f32: few input channels keep a NaN where it is read, and only there") {
  // 3 channels (conv2d_few_channels with AVX-512): one NaN at channel 1, (10, 10) of a
  // 20 x 40 input; a 3x3 pad-1 convolution with relu reads it at outputs (9..11, 9..11) of
  // every channel.
  ThreadPool pool(2);
  Conv2dParams p;
  p.c_in = 3;
  p.h_in = p.h_out = 20;
  p.w_in = p.w_out = 40;
  p.c_out = 9;
  p.kernel_h = p.kernel_w = 3;
  p.pad_h = p.pad_w = 1;
  p.has_bias = true;
  p.clamp_lo = 0.0f;
  uint32_t seed = 5;
  auto x = random_floats(3 * 20 * 40, ++seed);
  const auto w = random_floats(9 * 27, ++seed);
  const auto bias = random_floats(9, ++seed);
  x[(1 * 20 + 10) * 40 + 10] = NAN;
  Guarded y(9 * 20 * 40);
  PoolScratch thread_scratch(pool, aotc::rt::conv2d_thread_scratch_bytes(p));
  std::vector<float> scratch(static_cast<size_t>(aotc::rt::conv2d_scratch_bytes(p)) / sizeof(float) + 1);
  aotc::rt::conv2d_f32(pool, p, x.data(), w.data(), bias.data(), nullptr, y.data(), scratch.data());
  const auto want = ref_conv2d(p, x.data(), w.data(), bias.data(), nullptr);
  const auto got = y.values();
  for (int64_t c = 0; c < 9; ++c)
    for (int64_t oh = 0; oh < 20; ++oh)
      for (int64_t ow = 0; ow < 40; ++ow) {
        const size_t i = static_cast<size_t>((c * 20 + oh) * 40 + ow);
        INFO("c=" << c << " oh=" << oh << " ow=" << ow);
        if (oh >= 9 && oh <= 11 && ow >= 9 && ow <= 11)
          CHECK(std::isnan(got[i]));
        else
          CHECK(std::abs(got[i] - want[i]) <= 1e-4 * (1.0 + std::abs(want[i])));
      }
  CHECK(y.guards_intact());
}

TEST_CASE("conv2d_scratch_bytes: the packed columns of small products only") {
  Conv2dParams p;
  p.c_in = 8;
  p.c_out = 64;
  p.h_out = p.w_out = 5;
  CHECK(aotc::rt::conv2d_scratch_bytes(p) == 8 * 32 * 4);  // 1x1: depth 8 x 25 positions (32)
  p.c_in = 512;  // 1x1 with many inputs: Eigen's GEMM on AVX2, the packed columns on AVX-512
  CHECK(aotc::rt::conv2d_pointwise_on_eigen(p));
  CHECK(aotc::rt::conv2d_scratch_bytes(p) == 512 * 32 * 4);
  p.c_in = p.c_out = 8;
  p.kernel_h = p.kernel_w = 3;
  p.groups = 8;
  CHECK(aotc::rt::conv2d_scratch_bytes(p) == 0);  // depthwise
  p.groups = 1;
  CHECK(aotc::rt::conv2d_scratch_bytes(p) == 8 * 9 * 32 * 4);
  p.c_in = 64;
  p.h_out = p.w_out = 56;  // 576 x 3136 floats: over the 2 MiB cap, each thread packs its own
  CHECK(aotc::rt::conv2d_scratch_bytes(p) == 0);
}

TEST_CASE("conv2d_winograd_f32: F(2x2, 3x3) and F(4x4, 3x3) against the reference") {
  // Odd and even outputs (tiles hanging over the edge), padding 0..2, channel counts that
  // leave ragged 6-row tiles and depth blocks of the products, batches, bias and clamps;
  // rows of more than 8 tiles and tile counts that split the vector transforms' groups of 8
  // across the 16-tile panels (23 x 37 in 4x4 tiles: 6 x 10, 60 tiles); batches whose images
  // share the products (conv2d_winograd_group), whole (2 images) and not (5 images of 49
  // tiles of 2x2: groups of 3 and 2). 256 > 13 at 7 x 7 (16 tiles of 2x2, one full panel) and
  // 300 > 19 at 6 x 7 (12 tiles, one ragged) run their products' tiles in depth sub-blocks
  // (prepacked_part's prefetch slots).
  struct Case {
    int64_t n, c_in, h, w, c_out, pad;
  };
  const Case cases[] = {{1, 16, 7, 7, 16, 1},   {2, 17, 9, 6, 23, 1},  {1, 32, 5, 5, 40, 0},
                        {1, 20, 3, 4, 18, 2},   {1, 300, 6, 7, 19, 1}, {1, 64, 14, 14, 64, 1},
                        {1, 16, 1, 1, 16, 1},   {1, 24, 30, 2, 16, 1}, {1, 16, 40, 41, 17, 1},
                        {1, 8, 23, 37, 9, 1},   {2, 12, 34, 33, 8, 0}, {1, 9, 4, 70, 7, 2},
                        {5, 10, 14, 14, 12, 1}, {1, 256, 7, 7, 13, 1}};
  uint32_t seed = 500;
  for (int64_t tile : {2, 4})
    for (int threads : kThreadCounts) {
      ThreadPool pool(threads);
      for (const Case& cs : cases)
        for (const Clamp& cl : kClamps)
          for (bool has_bias : {false, true})
            for (bool thread_scratch_given : {true, false})  // vector / scalar input transform
              for (bool with_residual : {false, true}) {
                Conv2dParams p;
                p.n = cs.n;
                p.c_in = cs.c_in;
                p.h_in = cs.h;
                p.w_in = cs.w;
                p.c_out = cs.c_out;
                p.kernel_h = p.kernel_w = 3;
                p.pad_h = p.pad_w = cs.pad;
                p.h_out = cs.h + 2 * cs.pad - 2;
                p.w_out = cs.w + 2 * cs.pad - 2;
                p.has_bias = has_bias;
                p.clamp_lo = cl.lo;
                p.clamp_hi = cl.hi;
                if (p.h_out <= 0 || p.w_out <= 0) continue;  // (the kernel takes any channel count)
                const auto x = random_floats(static_cast<size_t>(p.n * p.c_in * p.h_in * p.w_in), ++seed);
                const auto w = random_floats(static_cast<size_t>(p.c_out * p.c_in * 9), ++seed);
                const auto bias = random_floats(static_cast<size_t>(p.c_out), ++seed);
                std::vector<float> u(
                    static_cast<size_t>(aotc::rt::conv2d_winograd_points(tile) * p.c_out * p.c_in));
                aotc::rt::conv2d_winograd_weights(p, tile, w.data(), u.data());
                Guarded scratch(static_cast<size_t>(aotc::rt::conv2d_winograd_scratch_bytes(p, tile)) /
                                sizeof(float));
                const size_t y_size = static_cast<size_t>(p.n * p.c_out * p.h_out * p.w_out);
                Guarded y(y_size);
                Guarded residual(with_residual ? y_size : 0,
                                 random_floats(with_residual ? y_size : 0, ++seed));
                PoolScratch thread_scratch(
                    pool, thread_scratch_given ? aotc::rt::conv2d_winograd_thread_scratch_bytes(p, tile) : 0);
                aotc::rt::conv2d_winograd_f32(
                    pool, p, tile, x.data(), u.data(), has_bias ? bias.data() : nullptr,
                    with_residual ? residual.data() : nullptr, y.data(), scratch.data());
                const auto want =
                    ref_conv2d(p, x.data(), w.data(), bias.data(), with_residual ? residual.data() : nullptr);
                INFO("tile=" << tile << " n=" << cs.n << " c_in=" << cs.c_in << " " << cs.h << "x" << cs.w
                             << " c_out=" << cs.c_out << " pad=" << cs.pad << " bias=" << has_bias
                             << " clamp=[" << cl.lo << "," << cl.hi << "] threads=" << threads
                             << " thread scratch=" << thread_scratch_given << " residual=" << with_residual);
                // F(4x4, 3x3)'s transforms scale by up to 5 (B^T) and 8 (A^T) where F(2x2, 3x3)'s
                // add and subtract: its rounding error is larger. Measured maxima over these cases:
                // 4.9e-6 (tile 2), 3.1e-5 (tile 4, 300 input channels, clamp [0, 0.3]: the clamp
                // leaves outputs far smaller than the sums whose rounding they carry).
                CHECK(rel_l2(y.values(), want) <= (tile == 4 ? 5 * kTolerance : kTolerance));
                CHECK(y.guards_intact());
                CHECK(scratch.guards_intact());
                CHECK(thread_scratch.guard_intact());
              }
    }
}

TEST_CASE("conv2d_winograd_applies: 3x3, stride 1, undilated, ungrouped, 16+ input channels") {
  Conv2dParams p;
  p.c_in = p.c_out = 64;
  p.kernel_h = p.kernel_w = 3;
  p.pad_h = p.pad_w = 1;
  CHECK(aotc::rt::conv2d_winograd_applies(p));
  p.stride_w = 2;
  CHECK_FALSE(aotc::rt::conv2d_winograd_applies(p));
  p.stride_w = 1;
  p.dilation_h = 2;
  CHECK_FALSE(aotc::rt::conv2d_winograd_applies(p));
  p.dilation_h = 1;
  p.groups = 2;
  CHECK_FALSE(aotc::rt::conv2d_winograd_applies(p));
  p.groups = 1;
  p.c_out = 3;  // a narrow output still gains
  CHECK(aotc::rt::conv2d_winograd_applies(p));
  p.c_in = 16;
  CHECK(aotc::rt::conv2d_winograd_applies(p));
  p.c_in = 8;  // too few input channels: the output transform costs more than it saves
  CHECK_FALSE(aotc::rt::conv2d_winograd_applies(p));
}

TEST_CASE("conv2d_winograd_group and conv2d_winograd_tile: images by columns, the tile by columns") {
  Conv2dParams p;
  p.c_in = p.c_out = 64;
  p.kernel_h = p.kernel_w = 3;
  p.pad_h = p.pad_w = 1;
  p.h_out = p.w_out = 56;
  CHECK(aotc::rt::conv2d_winograd_tile(p) == 4);
  p.h_out = p.w_out = 20;  // 25 tiles of 4x4
  CHECK(aotc::rt::conv2d_winograd_tile(p) == 4);
  p.h_out = p.w_out = 16;  // 16 in one image
  CHECK(aotc::rt::conv2d_winograd_tile(p) == 4);
  p.h_out = p.w_out = 14;  // 16 in one image
  CHECK(aotc::rt::conv2d_winograd_tile(p) == 4);
  p.h_out = p.w_out = 12;  // 9
  CHECK(aotc::rt::conv2d_winograd_tile(p) == 2);
  p.h_out = p.w_out = 7;  // 4 per image: 4 images are 16, 6 are 24, 8 are 32
  CHECK(aotc::rt::conv2d_winograd_tile(p) == 2);
  p.n = 4;
  CHECK(aotc::rt::conv2d_winograd_tile(p) == 2);
  p.n = 6;
  CHECK(aotc::rt::conv2d_winograd_tile(p) == 2);
  p.n = 8;
  CHECK(aotc::rt::conv2d_winograd_tile(p) == 4);
  // 16 tiles of 2x2 per image: all 8 images in one group of 128 columns
  CHECK(aotc::rt::conv2d_winograd_group(p, 2) == 8);
  p.n = 20;
  CHECK(aotc::rt::conv2d_winograd_group(p, 2) == 8);
  CHECK(aotc::rt::conv2d_winograd_scratch_bytes(p, 2) == (16 * (64 * 128 + 64 * 128) + 8) * 4);
  p.h_out = p.w_out = 56;  // 784 tiles: one image at a time
  CHECK(aotc::rt::conv2d_winograd_group(p, 2) == 1);
  p.n = 0;
  CHECK(aotc::rt::conv2d_winograd_group(p, 2) == 1);
}
