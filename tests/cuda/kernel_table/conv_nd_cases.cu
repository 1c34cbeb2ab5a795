// 3-d and transposed convolutions (conv3d.cu, vol2col.cu, depthwise_conv3d.cu,
// conv_transpose.cu, col2vol.cu, depthwise_conv_transpose.cu) against the CPU kernels: 1-d,
// 2-d and 3-d, odd sizes, stride, padding, dilation, output padding, groups (depthwise with
// and without a channel multiplier, groups batched per image and images batched per group),
// with and without bias, relu6, batches, NaN and infinite inputs, and shapes whose columns
// exceed the scratch budget (chunks of images, of output columns, of output channels).
// The Winograd conv3d (conv3d_winograd.cu) on 3x3x3 and 1x3x3 shapes with both tiles, its
// weights transformed as the compiler does.
#include <aotc/rt/cuda/conv3d_winograd_plan.h>
#include <aotc/rt/cuda/conv_nd_plan.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "kernel_table.h"

namespace aotc::test {
namespace {

using rt::ConvNdParams;

struct Shape {
  int64_t n, c_in, c_out, groups;
  int64_t in[3], kernel[3], stride[3], pad[3], dilation[3];
  int64_t output_padding[3];  // transposed only
  bool bias, relu6;
};

ConvNdParams params_of(const Shape& s, bool transposed) {
  ConvNdParams p;
  p.n = s.n, p.c_in = s.c_in, p.c_out = s.c_out, p.groups = s.groups;
  for (int d = 0; d < 3; ++d) {
    p.in[d] = s.in[d], p.kernel[d] = s.kernel[d], p.stride[d] = s.stride[d];
    p.pad[d] = s.pad[d], p.dilation[d] = s.dilation[d];
    p.out[d] = transposed
                   ? (s.in[d] - 1) * s.stride[d] - 2 * s.pad[d] + s.dilation[d] * (s.kernel[d] - 1) +
                         s.output_padding[d] + 1
                   : (s.in[d] + 2 * s.pad[d] - s.dilation[d] * (s.kernel[d] - 1) - 1) / s.stride[d] + 1;
  }
  p.has_bias = s.bias;
  if (s.relu6) p.clamp_lo = 0.0f, p.clamp_hi = 6.0f;
  return p;
}

std::string what_of(const Shape& s, bool specials) {
  std::string w = dims_str({s.n, s.c_in, s.in[0], s.in[1], s.in[2]}) + "->" + std::to_string(s.c_out) + " k" +
                  dims_str({s.kernel[0], s.kernel[1], s.kernel[2]}) + " s" +
                  dims_str({s.stride[0], s.stride[1], s.stride[2]}) + " p" +
                  dims_str({s.pad[0], s.pad[1], s.pad[2]}) + " d" +
                  dims_str({s.dilation[0], s.dilation[1], s.dilation[2]});
  if (s.output_padding[0] || s.output_padding[1] || s.output_padding[2])
    w += " op" + dims_str({s.output_padding[0], s.output_padding[1], s.output_padding[2]});
  if (s.groups > 1) w += " g" + std::to_string(s.groups);
  if (!s.bias) w += " nobias";
  if (s.relu6) w += " relu6";
  if (specials) w += " nan/inf";
  return w;
}

// Normal inputs; with specials a NaN, +inf, -inf and -0 at random places (few: a window
// spreads each to many outputs; float32's largest values are left out, as a sum of them
// overflows or not depending on its order).
std::vector<float> input(KernelTable& t, size_t n, bool specials) {
  std::vector<float> v = t.floats(n);
  if (specials && n > 0) {
    const float kinds[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), -0.0f};
    const std::vector<int64_t> at = t.ints(std::size(kinds), 0, static_cast<int64_t>(n) - 1);
    for (size_t i = 0; i < std::size(kinds); ++i) v[static_cast<size_t>(at[i])] = kinds[i];
  }
  return v;
}

void run_case(KernelTable& t, const Shape& s, bool transposed, bool specials) {
  const ConvNdParams p = params_of(s, transposed);
  const int64_t taps = rt::conv_nd_volume(p.kernel);
  const size_t x_count = static_cast<size_t>(p.n * p.c_in * rt::conv_nd_volume(p.in));
  const size_t w_count = static_cast<size_t>(transposed ? p.c_in * (p.c_out / p.groups) * taps
                                                        : p.c_out * (p.c_in / p.groups) * taps);
  const size_t y_count = static_cast<size_t>(p.n * p.c_out * rt::conv_nd_volume(p.out));
  const std::vector<float> x = input(t, x_count, specials);
  const std::vector<float> w = t.floats(w_count, false, 0.3f);
  const std::vector<float> bias = t.floats(static_cast<size_t>(p.c_out));
  const float* const b_host = s.bias ? bias.data() : nullptr;
  std::vector<float> cpu(y_count);
  const int64_t cpu_scratch = transposed ? rt::conv_transpose_scratch_bytes(p) : rt::conv3d_scratch_bytes(p);
  std::vector<float> scratch(static_cast<size_t>(cpu_scratch / 4 + 1));
  const int64_t gpu_scratch =
      transposed ? rt::cuda::conv_transpose_cuda_scratch_bytes(p) : rt::cuda::conv3d_cuda_scratch_bytes(p);
  float* const d_scratch = gpu_scratch > 0 ? t.device<float>(static_cast<size_t>(gpu_scratch / 4)) : nullptr;
  float* const y = t.device<float>(y_count);
  const float* const d_bias = s.bias ? t.upload(bias) : nullptr;
  if (transposed) {
    rt::conv_transpose_f32(t.pool(), p, x.data(), w.data(), b_host, cpu.data(), scratch.data());
    rt::cuda::conv_transpose_f32(t.exec(), p, t.upload(x), t.upload(w), d_bias, y, d_scratch);
  } else {
    rt::conv3d_f32(t.pool(), p, x.data(), w.data(), b_host, cpu.data(), scratch.data());
    rt::cuda::conv3d_f32(t.exec(), p, t.upload(x), t.upload(w), d_bias, y, d_scratch);
  }
  t.expect_close(transposed ? "conv_transpose" : "conv3d", what_of(s, specials), cpu, t.download(y, y_count));
}

// What the Winograd kernel must give: the CPU's result, except that in an output tile whose
// input patch holds a non-finite value any output may be NaN, since the transforms mix the
// whole patch (a direct product's +-inf, or a clamp's bound, may become NaN there).
std::vector<float> winograd_expected(const ConvNdParams& p, int64_t tile, const std::vector<float>& x,
                                     const std::vector<float>& cpu, const std::vector<float>& gpu) {
  int64_t extent[3], alpha[3], tiles[3];
  for (int d = 0; d < 3; ++d) {
    extent[d] = rt::cuda::conv3d_winograd_tile_extent(p, tile, d);
    alpha[d] = rt::cuda::conv3d_winograd_alpha(p, tile, d);
    tiles[d] = (p.out[d] + extent[d] - 1) / extent[d];
  }
  // The tiles t whose patch [t * extent - pad, t * extent - pad + alpha) holds position i.
  const auto tile_range = [&](int d, int64_t i, int64_t& lo, int64_t& hi) {
    const int64_t a = i + p.pad[d] - alpha[d] + 1, b = i + p.pad[d];
    lo = std::max<int64_t>(0, a <= 0 ? 0 : (a + extent[d] - 1) / extent[d]);
    hi = std::min<int64_t>(tiles[d] - 1, b / extent[d]);
  };
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> tainted;  // (image, tile d, h, w)
  const int64_t vol_in = rt::conv_nd_volume(p.in);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isfinite(x[i])) continue;
    int64_t r = static_cast<int64_t>(i);
    const int64_t iw = r % p.in[2], ih = r / p.in[2] % p.in[1], id = r / (p.in[2] * p.in[1]) % p.in[0];
    const int64_t image = r / (vol_in * p.c_in);
    int64_t lo[3], hi[3];
    tile_range(0, id, lo[0], hi[0]);
    tile_range(1, ih, lo[1], hi[1]);
    tile_range(2, iw, lo[2], hi[2]);
    for (int64_t a = lo[0]; a <= hi[0]; ++a)
      for (int64_t b = lo[1]; b <= hi[1]; ++b)
        for (int64_t c = lo[2]; c <= hi[2]; ++c) tainted.insert({image, a, b, c});
  }
  std::vector<float> expected = cpu;
  const int64_t vol_out = rt::conv_nd_volume(p.out);
  for (size_t i = 0; i < cpu.size() && i < gpu.size(); ++i) {
    if (std::isfinite(gpu[i])) continue;
    const int64_t r = static_cast<int64_t>(i);
    const int64_t ow = r % p.out[2], oh = r / p.out[2] % p.out[1], od = r / (p.out[2] * p.out[1]) % p.out[0];
    if (tainted.count({r / (vol_out * p.c_out), od / extent[0], oh / extent[1], ow / extent[2]}))
      expected[i] = gpu[i];
  }
  return expected;
}

void run_winograd_case(KernelTable& t, const Shape& s, int64_t tile, bool specials) {
  const ConvNdParams p = params_of(s, false);
  const int64_t taps = rt::conv_nd_volume(p.kernel);
  const size_t x_count = static_cast<size_t>(p.n * p.c_in * rt::conv_nd_volume(p.in));
  const size_t y_count = static_cast<size_t>(p.n * p.c_out * rt::conv_nd_volume(p.out));
  const std::vector<float> x = input(t, x_count, specials);
  const std::vector<float> w = t.floats(static_cast<size_t>(p.c_out * p.c_in * taps), false, 0.3f);
  const std::vector<float> bias = t.floats(static_cast<size_t>(p.c_out));
  std::vector<float> u(static_cast<size_t>(rt::cuda::conv3d_winograd_points(p, tile) * p.c_out * p.c_in));
  rt::cuda::conv3d_winograd_weights(p, tile, w.data(), u.data());
  std::vector<float> cpu(y_count);
  std::vector<float> scratch(static_cast<size_t>(rt::conv3d_scratch_bytes(p) / 4 + 1));
  rt::conv3d_f32(t.pool(), p, x.data(), w.data(), s.bias ? bias.data() : nullptr, cpu.data(), scratch.data());
  const int64_t gpu_scratch = rt::cuda::conv3d_winograd_scratch_bytes(p, tile);
  float* const d_scratch = t.device<float>(static_cast<size_t>(gpu_scratch / 4));
  float* const y = t.device<float>(y_count);
  rt::cuda::conv3d_winograd_f32(t.exec(), p, tile, t.upload(x), t.upload(u),
                                s.bias ? t.upload(bias) : nullptr, y, d_scratch);
  const std::vector<float> gpu = t.download(y, y_count);
  // The error of a clamped output is measured against the largest value before the clamp:
  // the rounding grows with the sums, and relu6 hides the largest of them.
  double scale = 0.0;
  if (s.relu6) {
    ConvNdParams unclamped = p;
    unclamped.clamp_lo = -std::numeric_limits<float>::infinity();
    unclamped.clamp_hi = std::numeric_limits<float>::infinity();
    std::vector<float> sums(y_count);
    rt::conv3d_f32(t.pool(), unclamped, x.data(), w.data(), s.bias ? bias.data() : nullptr, sums.data(),
                   scratch.data());
    for (float v : sums)
      if (std::isfinite(v)) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  }
  // F(4, 3)'s transforms scale values by up to 10x a dimension and float32's rounding grows
  // with them: in 3-d about 7e-6 relative L2 error a layer against float64 (20x the direct
  // product's), and the largest error, relative to the largest sum, up to about 1.5e-4.
  const double tol = tile == 4 ? (p.kernel[0] == 3 ? 3e-4 : 3e-5) : 1e-5;
  t.expect_close_to_scale("conv3d winograd F(" + std::to_string(tile) + ",3)", what_of(s, specials),
                          specials ? winograd_expected(p, tile, x, cpu, gpu) : cpu, gpu, tol, scale);
}

}  // namespace

void conv_nd_cases(KernelTable& t) {
  // n, c_in, c_out, groups, in, kernel, stride, pad, dilation, output_padding, bias, relu6
  const std::vector<Shape> conv3d = {
      {2, 3, 5, 1, {5, 7, 9}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {}, true, false},
      {1, 4, 7, 1, {7, 11, 6}, {2, 3, 5}, {2, 1, 3}, {1, 2, 0}, {1, 2, 1}, {}, true, true},
      // groups: images batched per group, then groups batched per image
      {3, 6, 9, 3, {5, 6, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {}, false, false},
      {1, 6, 9, 3, {5, 6, 7}, {3, 1, 3}, {1, 2, 1}, {0, 1, 2}, {2, 1, 1}, {}, true, false},
      // depthwise, then with 2 outputs per group
      {2, 5, 5, 5, {4, 9, 7}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {}, true, true},
      {2, 4, 8, 4, {5, 7, 3}, {3, 2, 3}, {2, 1, 1}, {2, 0, 1}, {1, 2, 2}, {}, false, false},
      // pointwise (no columns), with groups, and a strided 1x1x1 (columns)
      {2, 6, 4, 1, {3, 5, 7}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {}, true, false},
      {1, 6, 4, 2, {3, 5, 7}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {}, true, true},
      {2, 6, 4, 1, {5, 5, 7}, {1, 1, 1}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, {}, true, false},
      {1, 1, 1, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {}, true, false},
      {1, 2, 3, 1, {1, 1, 1}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {}, true, false},
      // 2-d and 1-d as 3-d
      {3, 5, 7, 1, {1, 13, 11}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}, {1, 1, 1}, {}, true, true},
      {2, 3, 4, 1, {1, 1, 29}, {1, 1, 5}, {1, 1, 3}, {0, 0, 2}, {1, 1, 2}, {}, false, false},
  };
  const std::vector<Shape> transposed = {
      {2, 4, 6, 1, {1, 1, 9}, {1, 1, 3}, {1, 1, 2}, {0, 0, 1}, {1, 1, 1}, {0, 0, 1}, true, false},
      {1, 6, 6, 3, {1, 5, 7}, {1, 3, 3}, {1, 2, 2}, {0, 0, 0}, {1, 2, 2}, {0, 1, 0}, false, true},
      {2, 5, 4, 1, {3, 4, 5}, {2, 3, 3}, {1, 2, 3}, {0, 1, 1}, {1, 1, 1}, {0, 1, 2}, true, true},
      // groups: images batched per group, then groups batched per image
      {3, 6, 9, 3, {3, 4, 5}, {3, 2, 3}, {2, 1, 2}, {1, 0, 2}, {1, 2, 1}, {1, 0, 1}, true, false},
      {1, 6, 4, 2, {4, 3, 5}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {2, 1, 3}, {1, 1, 2}, false, false},
      // depthwise, then with 2 outputs per group
      {2, 6, 6, 6, {1, 7, 9}, {1, 4, 4}, {1, 2, 2}, {0, 1, 1}, {1, 1, 1}, {0, 0, 0}, true, false},
      {2, 3, 6, 3, {3, 5, 4}, {3, 3, 2}, {2, 1, 3}, {1, 1, 0}, {1, 2, 1}, {1, 0, 2}, true, true},
      {2, 5, 3, 1, {3, 4, 5}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, true, false},
      {1, 1, 1, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, true, false},
      {1, 3, 2, 1, {1, 1, 1}, {3, 3, 3}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, {1, 1, 1}, false, false},
      // padding that crops more than a stride
      {2, 7, 5, 1, {1, 6, 6}, {1, 5, 3}, {1, 3, 2}, {0, 2, 1}, {1, 1, 2}, {0, 2, 1}, true, false},
  };
  // Columns beyond the scratch budget. conv3d: 113 MB per image (3 images: chunks of 2 and
  // 1), and 283 MB for one image (two chunks of output columns, groups batched per image).
  // conv_transpose: 101 MB per image (chunks of 2 and 1), and 335 MB for one image (chunks
  // of 10 of its 20 output channels).
  const std::vector<Shape> conv3d_big = {
      {3, 8, 4, 1, {32, 64, 64}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {}, true, false},
      {1, 16, 2, 2, {40, 64, 64}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {}, true, true},
  };
  const std::vector<Shape> transposed_big = {
      {3, 4, 6, 1, {16, 64, 64}, {4, 4, 4}, {2, 2, 2}, {}, {1, 1, 1}, {}, true, false},
      {1, 4, 20, 1, {16, 64, 64}, {4, 4, 4}, {1, 1, 1}, {}, {1, 1, 1}, {}, true, true},
  };
  for (const Shape& s : conv3d) {
    run_case(t, s, false, false);
    run_case(t, s, false, true);
  }
  for (const Shape& s : conv3d_big) run_case(t, s, false, false);
  for (const Shape& s : transposed) {
    run_case(t, s, true, false);
    run_case(t, s, true, true);
  }
  for (const Shape& s : transposed_big) run_case(t, s, true, false);
  // Winograd: 3x3x3 and 1x3x3, odd sizes (partial tiles), padding 0, 1 and 2, one-plane
  // depth, relu6, no bias; mc3_18's layer shapes at small sizes; 6 images of 57 MB
  // transformed (F(4, 3)) in two chunks of 3.
  const std::vector<Shape> winograd = {
      {2, 5, 7, 1, {5, 9, 11}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {}, true, false},
      {1, 3, 4, 1, {7, 6, 13}, {3, 3, 3}, {1, 1, 1}, {0, 2, 1}, {1, 1, 1}, {}, false, true},
      {3, 6, 5, 1, {3, 10, 13}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, {}, true, true},
      {1, 4, 3, 1, {1, 3, 3}, {1, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {}, true, false},
      {1, 2, 3, 1, {1, 1, 1}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {}, true, false},
      {1, 64, 64, 1, {6, 14, 14}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {}, true, true},
      {2, 128, 96, 1, {4, 7, 7}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, {}, true, false},
  };
  const Shape winograd_big = {6,         32,        32,        1,  {16, 62, 62}, {3, 3, 3},
                              {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {}, true,         false};
  for (const int64_t tile : {2, 4}) {
    for (const Shape& s : winograd) {
      run_winograd_case(t, s, tile, false);
      run_winograd_case(t, s, tile, true);
    }
  }
  run_winograd_case(t, winograd_big, 4, false);
}

}  // namespace aotc::test
