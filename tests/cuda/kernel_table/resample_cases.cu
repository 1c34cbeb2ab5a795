// Resampling and group normalisation (upsample, grid_sample, group_norm) against the CPU
// kernels: nearest modes bit for bit (the source cells must be the CPU's), interpolation and
// normalisation within 1e-5 of the largest output. The interpolating kernels add their terms
// in the CPU's order, so even float32's largest values overflow where the CPU's do.
#include <aotc/rt/cuda/group_norm_plan.h>

#include <cmath>
#include <iterator>
#include <limits>

#include "kernel_table.h"

namespace aotc::test {
namespace {

using rt::GridSampleMode;
using rt::GridSamplePadding;
using rt::UpsampleMode;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---------------------------------------------------------------- upsample
// torch's source ratio, as compiler/ops/upsample.cpp computes it (scale 0: none given).
float source_ratio(bool linear, bool align_corners, int64_t in, int64_t out, double scale) {
  if (linear && align_corners)
    return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  if (scale > 0.0) return static_cast<float>(1.0 / scale);
  return static_cast<float>(in) / static_cast<float>(out);
}

struct UpsampleCase {
  int dims;
  int64_t planes;
  int64_t in[3];   // leading 1s for fewer dims
  int64_t out[3];  // ignored where scale > 0 (the output is in * scale, truncated)
  double scale[3];
};

void run_upsample(KernelTable& t, UpsampleMode mode, bool align_corners, const UpsampleCase& c) {
  const bool linear = mode == UpsampleMode::Linear || mode == UpsampleMode::Cubic;
  rt::UpsampleParams p;
  p.mode = mode;
  p.align_corners = align_corners;
  p.dims = c.dims;
  p.planes = c.planes;
  bool scaled = false;
  for (int d = 0; d < 3; ++d) {
    p.in[d] = c.in[d];
    p.out[d] = c.scale[d] > 0.0 ? static_cast<int64_t>(static_cast<double>(c.in[d]) * c.scale[d]) : c.out[d];
    p.ratio[d] = d < 3 - c.dims ? 1.0f : source_ratio(linear, align_corners, p.in[d], p.out[d], c.scale[d]);
    scaled = scaled || c.scale[d] > 0.0;
  }
  const bool exact = mode == UpsampleMode::Nearest || mode == UpsampleMode::NearestExact;
  const size_t in = static_cast<size_t>(p.planes * p.in[0] * p.in[1] * p.in[2]);
  const size_t out = static_cast<size_t>(p.planes * p.out[0] * p.out[1] * p.out[2]);
  const std::vector<float> x = t.floats(in, true);
  std::vector<float> cpu(out);
  std::vector<int64_t> scratch(static_cast<size_t>(rt::upsample_scratch_bytes(p)) / sizeof(int64_t) + 1);
  rt::upsample_f32(t.pool(), p, x.data(), cpu.data(), scratch.data());
  float* y = t.device<float>(out);
  rt::cuda::upsample_f32(t.stream(), p, t.upload(x), y);
  const char* names[] = {"upsample (nearest)", "upsample (nearest-exact)", "upsample (linear)",
                         "upsample (cubic)"};
  const std::string what = std::to_string(c.dims) + "-d " + dims_str({p.planes, p.in[0], p.in[1], p.in[2]}) +
                           " -> " + dims_str({p.out[0], p.out[1], p.out[2]}) + (scaled ? " (scales)" : "") +
                           (linear ? (align_corners ? " align" : " half-pixel") : "");
  if (exact)
    t.expect_equal(names[static_cast<int>(mode)], what, cpu, t.download(y, out));
  else
    t.expect_close(names[static_cast<int>(mode)], what, cpu, t.download(y, out));
}

void upsample_cases(KernelTable& t) {
  const std::vector<UpsampleCase> cases = {
      // 1-d: sizes up and down, a scale factor, one cell in, one cell out
      {1, 6, {1, 1, 7}, {1, 1, 16}, {0, 0, 0}},
      {1, 3, {1, 1, 13}, {1, 1, 5}, {0, 0, 0}},
      {1, 5, {1, 1, 7}, {1, 1, 0}, {0, 0, 2.5}},
      {1, 2, {1, 1, 1}, {1, 1, 9}, {0, 0, 0}},
      {1, 2, {1, 1, 9}, {1, 1, 1}, {0, 0, 0}},
      // 2-d: odd sizes, scale factors (one below 1), downsampling, one dim unchanged
      {2, 6, {1, 5, 7}, {1, 11, 13}, {0, 0, 0}},
      {2, 4, {1, 9, 11}, {1, 0, 0}, {0, 1.7, 2.3}},
      {2, 3, {1, 9, 11}, {1, 0, 0}, {0, 0.6, 2.0}},
      {2, 2, {1, 17, 13}, {1, 4, 3}, {0, 0, 0}},
      {2, 3, {1, 7, 5}, {1, 7, 12}, {0, 0, 0}},
      {2, 1, {1, 1, 1}, {1, 3, 2}, {0, 0, 0}},
      // a segmentation head's: 21 planes, 33 x 33 up to 257 x 257
      {2, 21, {1, 33, 33}, {1, 257, 257}, {0, 0, 0}},
      // input rows wider than the CPU's blend buffer (4096): summed row by row there
      {2, 2, {1, 3, 4099}, {1, 5, 4111}, {0, 0, 0}},
      // 3-d
      {3, 4, {3, 5, 4}, {7, 9, 6}, {0, 0, 0}},
      {3, 2, {5, 6, 7}, {0, 0, 0}, {1.0, 0.5, 0.5}},
      {3, 3, {2, 3, 5}, {0, 0, 0}, {1.5, 2.0, 1.3}},
  };
  for (const UpsampleMode mode :
       {UpsampleMode::Nearest, UpsampleMode::NearestExact, UpsampleMode::Linear, UpsampleMode::Cubic})
    for (const UpsampleCase& c : cases) {
      if (mode == UpsampleMode::Cubic && c.dims != 2) continue;
      const bool linear = mode == UpsampleMode::Linear || mode == UpsampleMode::Cubic;
      for (const bool align : {false, true}) {
        if (align && !linear) continue;
        run_upsample(t, mode, align, c);
      }
    }
}

// ---------------------------------------------------------------- grid_sample
// Grid coordinates: uniform in [-1.5, 1.5], points of a 1/8 lattice (positions that fall
// exactly on cells and halfway between them: nearest sampling's ties), -1, 1, far out (past
// int's range after unnormalising, for reflection), NaN and infinities.
std::vector<float> grid_values(KernelTable& t, size_t n) {
  std::vector<float> v(n);
  std::uniform_real_distribution<float> uniform(-1.5f, 1.5f);
  const float special[] = {-1.0f, 1.0f, 0.0f, -0.0f, 3e9f, -7e10f, 1e30f, 2.5e8f, kNaN, kInf, -kInf, 1e-30f};
  for (size_t i = 0; i < n; ++i) {
    const int64_t kind = t.ints(1, 0, 9)[0];
    if (kind < 4)
      v[i] = uniform(t.rng());
    else if (kind < 9)
      v[i] = static_cast<float>(t.ints(1, -12, 12)[0]) / 8.0f;
    else
      v[i] = special[t.ints(1, 0, static_cast<int64_t>(std::size(special)) - 1)[0]];
  }
  return v;
}

void grid_sample_cases(KernelTable& t) {
  struct Shape {
    int64_t n, c, h_in, w_in, h_out, w_out;
  };
  for (const Shape s : {Shape{2, 3, 5, 7, 4, 6}, Shape{1, 5, 4, 4, 9, 7}, Shape{2, 2, 8, 3, 9, 5},
                        Shape{1, 3, 1, 1, 3, 3}, Shape{1, 1, 1, 6, 5, 11}, Shape{1, 70, 3, 2, 2, 3}})
    for (const GridSampleMode mode : {GridSampleMode::Bilinear, GridSampleMode::Nearest})
      for (const GridSamplePadding padding :
           {GridSamplePadding::Zeros, GridSamplePadding::Border, GridSamplePadding::Reflection})
        for (const bool align : {false, true}) {
          rt::GridSampleParams p;
          p.n = s.n, p.c = s.c, p.h_in = s.h_in, p.w_in = s.w_in, p.h_out = s.h_out, p.w_out = s.w_out;
          p.mode = mode;
          p.padding = padding;
          p.align_corners = align;
          const bool nearest = mode == GridSampleMode::Nearest;
          const size_t in = static_cast<size_t>(s.n * s.c * s.h_in * s.w_in);
          const size_t cells = static_cast<size_t>(s.n * s.h_out * s.w_out * 2);
          const size_t out = static_cast<size_t>(s.n * s.c * s.h_out * s.w_out);
          const std::vector<float> x = t.floats(in, true);
          const std::vector<float> grid = grid_values(t, cells);
          std::vector<float> cpu(out);
          rt::grid_sample_f32(t.pool(), p, x.data(), grid.data(), cpu.data());
          float* y = t.device<float>(out);
          rt::cuda::grid_sample_f32(t.stream(), p, t.upload(x), t.upload(grid), y);
          const char* paddings[] = {"zeros", "border", "reflection"};
          const std::string op = std::string("grid_sample (") + (nearest ? "nearest" : "bilinear") + ", " +
                                 paddings[static_cast<int>(padding)] + (align ? ", align)" : ")");
          const std::string what =
              dims_str({s.n, s.c, s.h_in, s.w_in}) + " -> " + dims_str({s.h_out, s.w_out});
          if (nearest)
            t.expect_equal(op, what, cpu, t.download(y, out));
          else
            t.expect_close(op, what, cpu, t.download(y, out));
        }
}

// ---------------------------------------------------------------- group_norm
void group_norm_cases(KernelTable& t) {
  struct Case {
    int64_t n, c, spatial, groups;
    bool gamma, beta;
    float lo, hi;   // clamp
    bool specials;  // NaN, inf and float32's largest in some groups
    float offset;   // added to every value: a mean large against the spread
  };
  const float relu6_hi = 6.0f;
  const std::vector<Case> cases = {
      {2, 6, 81, 3, true, true, -kInf, kInf, false, 0.0f},
      {2, 6, 81, 1, false, false, -kInf, kInf, false, 0.0f},
      {1, 5, 7, 5, true, true, -kInf, kInf, false, 0.0f},  // instance norm
      {3, 4, 1, 1, true, false, -kInf, kInf, false, 0.0f},
      {3, 4, 1, 4, false, true, -kInf, kInf, false, 0.0f},  // one value per group: 0 variance
      {2, 12, 143, 4, true, true, 0.0f, relu6_hi, false, 0.0f},
      {2, 12, 143, 6, false, false, 0.0f, kInf, false, 10.0f},
      {1, 8, 37, 4, true, true, -kInf, kInf, true, 0.0f},
      // groups of more than one block's chunk (8192 values): split over blocks
      {1, 512, 64 * 64, 32, true, true, -kInf, kInf, false, 0.0f},
      {2, 64, 8193, 64, true, true, -kInf, kInf, false, 0.0f},  // 2 chunks, the last of 1 value
      {1, 2, 8192, 2, true, true, -kInf, kInf, false, 0.0f},    // exactly one chunk
      {1, 4, 8192, 2, false, false, 0.0f, relu6_hi, false, 0.0f},
      {1, 3, 99991, 1, true, true, -kInf, kInf, false, 10.0f},
      {1, 6, 4099, 3, true, true, -kInf, kInf, true, 0.0f},
  };
  for (const Case& c : cases) {
    rt::GroupNormParams p;
    p.n = c.n, p.c = c.c, p.spatial = c.spatial, p.groups = c.groups;
    p.eps = 1e-5f;
    p.clamp_lo = c.lo, p.clamp_hi = c.hi;
    const size_t count = static_cast<size_t>(c.n * c.c * c.spatial);
    const size_t group = static_cast<size_t>(c.c / c.groups * c.spatial);
    std::vector<float> x = t.floats(count, false, 2.0f);
    for (float& v : x) v += c.offset;
    if (c.specials) {
      // Group 0 a NaN, group 1 an infinity, group 2 float32's largest (variance inf, so
      // rstd 0), group 3 a -0; the others finite.
      const float kinds[] = {kNaN, kInf, std::numeric_limits<float>::max(), -0.0f};
      for (size_t g = 0; g < 4 && (g + 1) * group <= count; ++g)
        x[g * group + static_cast<size_t>(t.ints(1, 0, static_cast<int64_t>(group) - 1)[0])] = kinds[g];
    }
    const std::vector<float> gamma = t.floats(static_cast<size_t>(c.c)),
                             beta = t.floats(static_cast<size_t>(c.c));
    const float* g = c.gamma ? gamma.data() : nullptr;
    const float* b = c.beta ? beta.data() : nullptr;
    std::vector<float> cpu(count);
    rt::group_norm_f32(t.pool(), p, x.data(), g, b, cpu.data());
    float* y = t.device<float>(count);
    const int64_t scratch_bytes = rt::cuda::group_norm_scratch_bytes(p);
    float* scratch =
        scratch_bytes ? t.device<float>(static_cast<size_t>(scratch_bytes) / sizeof(float)) : nullptr;
    rt::cuda::group_norm_f32(t.stream(), p, t.upload(x), c.gamma ? t.upload(gamma) : nullptr,
                             c.beta ? t.upload(beta) : nullptr, y, scratch);
    std::string what = dims_str({c.n, c.c, c.spatial}) + " groups " + std::to_string(c.groups);
    if (!c.gamma && !c.beta) what += " no affine";
    if (c.gamma != c.beta) what += c.gamma ? " gamma only" : " beta only";
    if (c.lo > -kInf || c.hi < kInf) what += " clamp";
    if (c.specials) what += " NaN/inf";
    if (c.offset != 0.0f) what += " offset";
    t.expect_close("group_norm", what, cpu, t.download(y, count));
  }
}

}  // namespace

void resample_cases(KernelTable& t) {
  upsample_cases(t);
  grid_sample_cases(t);
  group_norm_cases(t);
}

}  // namespace aotc::test
