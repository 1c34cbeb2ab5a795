// group_norm_f32 (group and instance normalisation) and upsample_f32 (nearest,
// nearest-exact, linear / bilinear / trilinear, bicubic, align_corners both ways) against naive
// double references. The upsampling reference computes torch's source positions in double
// from the same ratios; exact expectations pin the well-known cases.
#include <doctest/doctest.h>

#include "kernel_reference.h"

namespace {

using aotc::rt::GroupNormParams;
using aotc::rt::ThreadPool;
using aotc::rt::UpsampleMode;
using aotc::rt::UpsampleParams;
using namespace aotc::test;

std::vector<double> ref_group_norm(const GroupNormParams& p, const float* x, const float* gamma,
                                   const float* beta) {
  const int64_t count = p.c / p.groups * p.spatial;
  std::vector<double> y(static_cast<size_t>(p.n * p.c * p.spatial));
  for (int64_t item = 0; item < p.n * p.groups; ++item) {
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < count; ++i) mean += x[item * count + i];
    mean /= double(count);
    for (int64_t i = 0; i < count; ++i) var += (x[item * count + i] - mean) * (x[item * count + i] - mean);
    var /= double(count);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t ch = (item % p.groups) * (p.c / p.groups) + i / p.spatial;
      double v = (x[item * count + i] - mean) / std::sqrt(var + p.eps);
      v = v * (gamma ? gamma[ch] : 1.0) + (beta ? beta[ch] : 0.0);
      y[static_cast<size_t>(item * count + i)] =
          std::fmin(std::fmax(v, double(p.clamp_lo)), double(p.clamp_hi));
    }
  }
  return y;
}

}  // namespace

TEST_CASE("group_norm_f32: groups, instance norm, affine or not, clamp, offset data") {
  struct Case {
    int64_t n, c, groups, spatial;
  };
  const Case cases[] = {{1, 4, 2, 25}, {2, 6, 3, 17},    {3, 8, 8, 9},  // instance norm
                        {2, 5, 1, 7},  {1, 32, 4, 4096}, {2, 3, 3, 1}};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 601;
    for (const Case& cc : cases)
      for (bool affine : {false, true})
        for (bool clamp : {false, true}) {
          GroupNormParams p;
          p.n = cc.n;
          p.c = cc.c;
          p.groups = cc.groups;
          p.spatial = cc.spatial;
          p.eps = 1e-5f;
          if (clamp) p.clamp_lo = 0.0f;
          // A large common offset: a one-pass E[x^2] - E[x]^2 would lose the variance.
          const auto x = random_floats(static_cast<size_t>(p.n * p.c * p.spatial), ++seed, 99.0f, 101.0f);
          const auto gamma = random_floats(static_cast<size_t>(p.c), ++seed, 0.5f, 1.5f);
          const auto beta = random_floats(static_cast<size_t>(p.c), ++seed);
          Guarded y(x.size());
          const float* g = affine ? gamma.data() : nullptr;
          const float* b = affine ? beta.data() : nullptr;
          aotc::rt::group_norm_f32(pool, p, x.data(), g, b, y.data());
          INFO("n=" << p.n << " c=" << p.c << " groups=" << p.groups << " spatial=" << p.spatial
                    << " affine=" << affine << " clamp=" << clamp << " threads=" << threads);
          // fp32 statistics of values near 100 with spread 1: relative error ~1e-5.
          CHECK(rel_l2(y.values(), ref_group_norm(p, x.data(), g, b)) <= 1e-4);
          CHECK(y.guards_intact());
        }
  }
}

namespace {

// Source cells and weights along one dim, as torch defines them, in double.
struct RefSource {
  int64_t index[4];
  double weight[4];
  int taps;
};
double ref_cubic(double x) {  // torch's cubic convolution kernel, A = -0.75
  const double a = -0.75;
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}
RefSource ref_source(const UpsampleParams& p, int dim, int64_t o) {
  const int64_t in = p.in[dim], out = p.out[dim];
  const double r = p.ratio[dim];
  // The source position in float, as torch computes it for float tensors (torch's
  // definition: over a few thousand cells, double arithmetic picks visibly other weights).
  const float rf = p.ratio[dim];
  const double position = p.align_corners ? double(rf * float(o)) : double(rf * (float(o) + 0.5f) - 0.5f);
  if (p.mode == UpsampleMode::Nearest) {
    const int64_t i = std::min<int64_t>(static_cast<int64_t>(std::floor(o * r)), in - 1);
    return {{i}, {1.0}, 1};
  }
  if (p.mode == UpsampleMode::NearestExact) {
    const int64_t i = std::min<int64_t>(static_cast<int64_t>(std::floor((o + 0.5) * r)), in - 1);
    return {{i}, {1.0}, 1};
  }
  if (p.mode == UpsampleMode::Cubic) {
    const double real = position;
    const int64_t i = static_cast<int64_t>(std::floor(real));
    RefSource s{{}, {}, 4};
    for (int j = 0; j < 4; ++j) {
      s.index[j] = std::min<int64_t>(std::max<int64_t>(i - 1 + j, 0), in - 1);
      s.weight[j] = ref_cubic(real - double(i - 1 + j));
    }
    return s;
  }
  if (in == out) return {{o}, {1.0}, 1};
  double real = position;
  if (real < 0) real = 0;
  const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(std::floor(real)), in - 1);
  const double l1 = std::min(std::max(real - double(i0), 0.0), 1.0);
  return {{i0, i0 + (i0 < in - 1 ? 1 : 0)}, {1.0 - l1, l1}, 2};
}

std::vector<double> ref_upsample(const UpsampleParams& p, const float* x) {
  const int64_t vi = p.in[0] * p.in[1] * p.in[2], vo = p.out[0] * p.out[1] * p.out[2];
  std::vector<double> y(static_cast<size_t>(p.planes * vo));
  const RefSource none{{0}, {1.0}, 1};
  for (int64_t q = 0; q < p.planes; ++q)
    for (int64_t o = 0; o < vo; ++o) {
      const int64_t od = o / (p.out[1] * p.out[2]), oh = (o / p.out[2]) % p.out[1], ow = o % p.out[2];
      const RefSource sd = p.dims >= 3 ? ref_source(p, 0, od) : none;
      const RefSource sh = p.dims >= 2 ? ref_source(p, 1, oh) : none;
      const RefSource sw = ref_source(p, 2, ow);
      double acc = 0.0;
      for (int a = 0; a < sd.taps; ++a)
        for (int b = 0; b < sh.taps; ++b)
          for (int c = 0; c < sw.taps; ++c)
            acc += sd.weight[a] * sh.weight[b] * sw.weight[c] *
                   x[q * vi + (sd.index[a] * p.in[1] + sh.index[b]) * p.in[2] + sw.index[c]];
      y[static_cast<size_t>(q * vo + o)] = acc;
    }
  return y;
}

// torch's ratio (area_pixel_compute_scale) for a given output size and optional scale.
float torch_ratio(bool linear, bool align_corners, int64_t in, int64_t out, double scale) {
  if (linear && align_corners) return out > 1 ? float(in - 1) / float(out - 1) : 0.0f;
  if (scale > 0) return static_cast<float>(1.0 / scale);
  return float(in) / float(out);
}

}  // namespace

TEST_CASE("upsample_f32: nearest, nearest-exact and linear in 1, 2 and 3 dims") {
  struct Case {
    int dims;
    int64_t planes, in[3], out[3];
    double scale;  // 0: from the sizes
  };
  const Case cases[] = {
      {2, 3, {1, 5, 7}, {1, 10, 14}, 2.0},
      {2, 2, {1, 5, 7}, {1, 7, 10}, 1.5},
      {2, 2, {1, 6, 9}, {1, 11, 13}, 0},
      {2, 2, {1, 8, 9}, {1, 4, 5}, 0},
      {2, 1, {1, 4, 4}, {1, 1, 1}, 0},
      {1, 4, {1, 1, 13}, {1, 1, 19}, 1.5},
      {1, 2, {1, 1, 9}, {1, 1, 9}, 0},
      {3, 2, {3, 4, 5}, {6, 8, 10}, 2.0},
      {3, 1, {4, 5, 3}, {3, 7, 5}, 0},
      {2, 2, {1, 33, 17}, {1, 99, 51}, 3.0},
      {2, 1, {1, 1, 1}, {1, 3, 4}, 0},
      {2, 1, {1, 2, 4100}, {1, 3, 4103}, 0},  // rows longer than the blend buffer
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 701;
    for (const Case& cc : cases)
      for (UpsampleMode mode :
           {UpsampleMode::Nearest, UpsampleMode::NearestExact, UpsampleMode::Linear, UpsampleMode::Cubic})
        for (bool align : {false, true}) {
          const bool takes_align = mode == UpsampleMode::Linear || mode == UpsampleMode::Cubic;
          if ((align && !takes_align) || (mode == UpsampleMode::Cubic && cc.dims > 2)) continue;
          UpsampleParams p;
          p.mode = mode;
          p.align_corners = align;
          p.dims = cc.dims;
          p.planes = cc.planes;
          for (int d = 0; d < 3; ++d) {
            p.in[d] = cc.in[d];
            p.out[d] = cc.out[d];
            p.ratio[d] =
                d < 3 - cc.dims ? 1.0f : torch_ratio(takes_align, align, cc.in[d], cc.out[d], cc.scale);
          }
          const auto x = random_floats(static_cast<size_t>(p.planes * p.in[0] * p.in[1] * p.in[2]), ++seed);
          Guarded y(static_cast<size_t>(p.planes * p.out[0] * p.out[1] * p.out[2]));
          const int64_t scratch_bytes = aotc::rt::upsample_scratch_bytes(p);
          // 8-byte aligned, with a guard of 16 bytes after the planned size.
          std::vector<int64_t> storage(static_cast<size_t>(scratch_bytes / 8 + 3), 0x5a5a5a5a5a5a5a5a);
          auto* scratch = reinterpret_cast<unsigned char*>(storage.data());
          aotc::rt::upsample_f32(pool, p, x.data(), y.data(), scratch);
          INFO("dims=" << cc.dims << " out " << p.out[0] << "x" << p.out[1] << "x" << p.out[2]
                       << " mode=" << static_cast<int>(mode) << " align=" << align << " threads=" << threads);
          CHECK(rel_l2(y.values(), ref_upsample(p, x.data())) <= kTolerance);
          CHECK(y.guards_intact());
          bool guard_intact = true;
          for (int64_t i = scratch_bytes; i < scratch_bytes + 16; ++i) guard_intact &= scratch[i] == 0x5a;
          CHECK(guard_intact);
        }
  }
}

TEST_CASE("upsample_f32: known values") {
  ThreadPool pool(1);
  std::vector<int64_t> scratch(64);
  const std::vector<float> x = {1, 2, 3, 4};  // 2x2
  UpsampleParams p;
  p.planes = 1;
  p.in[1] = p.in[2] = 2;
  p.out[1] = p.out[2] = 4;
  p.ratio[1] = p.ratio[2] = 0.5f;
  Guarded y(16);
  aotc::rt::upsample_f32(pool, p, x.data(), y.data(), scratch.data());  // nearest x2
  CHECK(y.values() == std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  p.mode = UpsampleMode::Linear;
  p.align_corners = true;
  p.ratio[1] = p.ratio[2] = 1.0f / 3.0f;
  aotc::rt::upsample_f32(pool, p, x.data(), y.data(), scratch.data());
  CHECK(y.data()[0] == 1.0f);
  CHECK(y.data()[3] == 2.0f);
  CHECK(y.data()[12] == 3.0f);
  CHECK(y.data()[15] == 4.0f);
  CHECK(y.data()[1] == doctest::Approx(4.0 / 3.0));
  p.align_corners = false;  // half-pixel centres: the first row is 1, 1.25, 1.75, 2
  p.ratio[1] = p.ratio[2] = 0.5f;
  aotc::rt::upsample_f32(pool, p, x.data(), y.data(), scratch.data());
  CHECK(y.data()[0] == 1.0f);
  CHECK(y.data()[1] == 1.25f);
  CHECK(y.data()[2] == 1.75f);
  CHECK(y.data()[3] == 2.0f);
}

namespace {

using aotc::rt::GridSampleMode;
using aotc::rt::GridSamplePadding;
using aotc::rt::GridSampleParams;

// torch's grid_sampler_2d, in double.
double ref_reflect(double in, double twice_low, double twice_high) {
  if (twice_low == twice_high) return 0.0;
  const double min = twice_low / 2, span = (twice_high - twice_low) / 2;
  in = std::fabs(in - min);
  const double extra = std::fmod(in, span);
  const int flips = static_cast<int>(std::floor(in / span));
  return flips % 2 == 0 ? extra + min : span - extra + min;
}
double ref_coordinate(const GridSampleParams& p, double g, int64_t size) {
  double v = p.align_corners ? (g + 1) / 2 * double(size - 1) : ((g + 1) * double(size) - 1) / 2;
  if (p.padding != GridSamplePadding::Zeros) {
    if (p.padding == GridSamplePadding::Reflection)
      v = p.align_corners ? ref_reflect(v, 0, 2.0 * double(size - 1))
                          : ref_reflect(v, -1, 2.0 * double(size) - 1);
    v = std::min(std::max(v, 0.0), double(size - 1));
  }
  return v;
}

std::vector<double> ref_grid_sample(const GridSampleParams& p, const float* x, const float* grid) {
  std::vector<double> y(static_cast<size_t>(p.n * p.c * p.h_out * p.w_out));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oh = 0; oh < p.h_out; ++oh)
      for (int64_t ow = 0; ow < p.w_out; ++ow) {
        const float* g = grid + ((n * p.h_out + oh) * p.w_out + ow) * 2;
        const double ix = ref_coordinate(p, g[0], p.w_in), iy = ref_coordinate(p, g[1], p.h_in);
        for (int64_t c = 0; c < p.c; ++c) {
          const float* plane = x + (n * p.c + c) * p.h_in * p.w_in;
          auto at = [&](int64_t yy, int64_t xx) {
            return yy >= 0 && yy < p.h_in && xx >= 0 && xx < p.w_in ? double(plane[yy * p.w_in + xx]) : 0.0;
          };
          double v;
          if (p.mode == GridSampleMode::Nearest) {
            v = at(static_cast<int64_t>(std::nearbyint(iy)), static_cast<int64_t>(std::nearbyint(ix)));
          } else {
            const int64_t x0 = static_cast<int64_t>(std::floor(ix)),
                          y0 = static_cast<int64_t>(std::floor(iy));
            const double wx = ix - double(x0), wy = iy - double(y0);
            v = at(y0, x0) * (1 - wx) * (1 - wy) + at(y0, x0 + 1) * wx * (1 - wy) +
                at(y0 + 1, x0) * (1 - wx) * wy + at(y0 + 1, x0 + 1) * wx * wy;
          }
          y[static_cast<size_t>(((n * p.c + c) * p.h_out + oh) * p.w_out + ow)] = v;
        }
      }
  return y;
}

}  // namespace

TEST_CASE("grid_sample_f32: bilinear and nearest, every padding, align_corners, grids past the border") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 901;
    for (GridSampleMode mode : {GridSampleMode::Bilinear, GridSampleMode::Nearest})
      for (GridSamplePadding padding :
           {GridSamplePadding::Zeros, GridSamplePadding::Border, GridSamplePadding::Reflection})
        for (bool align : {false, true}) {
          GridSampleParams p;
          p.n = 2;
          p.c = 3;
          p.h_in = 7;
          p.w_in = 9;
          p.h_out = 5;
          p.w_out = 11;
          p.mode = mode;
          p.padding = padding;
          p.align_corners = align;
          const auto x = random_floats(static_cast<size_t>(p.n * p.c * p.h_in * p.w_in), ++seed);
          // Grid values in [-2.5, 2.5], far outside the input too (random values do not sit on
          // the .5 ties where float and double nearest rounding could differ).
          auto grid = random_floats(static_cast<size_t>(p.n * p.h_out * p.w_out * 2), ++seed, -2.5f, 2.5f);
          Guarded y(static_cast<size_t>(p.n * p.c * p.h_out * p.w_out));
          aotc::rt::grid_sample_f32(pool, p, x.data(), grid.data(), y.data());
          INFO("mode=" << int(mode) << " padding=" << int(padding) << " align=" << align
                       << " threads=" << threads);
          CHECK(rel_l2(y.values(), ref_grid_sample(p, x.data(), grid.data())) <= kTolerance);
          CHECK(y.guards_intact());
        }
  }
}
