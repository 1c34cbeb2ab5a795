// 3-d, adaptive and with-indices pooling (max_pool3d, avg_pool3d, adaptive_avg_pool3d,
// adaptive_max_pool3d; their 1-d and 2-d forms with leading 1s) and max_unpool, against the
// CPU kernels: max values and indices bit for bit, averages within 1e-6.
#include <limits>

#include "kernel_table.h"

namespace aotc::test {
namespace {

using rt::AdaptivePoolParams;
using rt::Pool3dParams;

// torch's pooling_output_shape.
int64_t pooled(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  const int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  int64_t out = (ceil_mode ? span + stride - 1 : span) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Values from {-inf, -1, 0, 1, 2, NaN}: ties, windows of -inf only, and several NaNs per
// window, where the first maximum and the last NaN decide the index.
std::vector<float> coarse(KernelTable& t, size_t n) {
  const float kinds[] = {-std::numeric_limits<float>::infinity(), -1.0f, 0.0f, 1.0f, 2.0f,
                         std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> v(n);
  for (float& x : v) x = kinds[t.ints(1, 0, 5)[0]];
  return v;
}

std::string list3(const int64_t* v) { return dims_str({v[0], v[1], v[2]}); }

void pool_cases(KernelTable& t) {
  struct Case {
    int64_t n, c, in[3], k[3], s[3], pad[3], dil[3];
    bool ceil_mode, include_pad;
    int64_t divisor_override;
    bool coarse;
    int64_t extra_out;  // outputs past torch's sizes along w: windows with no cell in the input
  };
  const Case cases[] = {
      {2, 3, {5, 7, 9}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, true, true, 0, false, 0},
      {1, 5, {7, 11, 13}, {3, 2, 3}, {2, 1, 2}, {1, 1, 0}, {2, 1, 1}, false, false, 0, false, 0},
      {1, 5, {7, 11, 13}, {3, 2, 3}, {2, 1, 2}, {1, 1, 1}, {1, 1, 1}, true, false, 0, false, 0},
      {2, 2, {4, 6, 5}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, true, true, 3, false, 0},
      {2, 3, {5, 6, 7}, {3, 2, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, true, true, 5, false, 0},
      {3, 7, {1, 17, 5}, {1, 3, 3}, {1, 2, 1}, {0, 1, 1}, {1, 2, 1}, true, true, 0, false, 0},   // 2-d
      {2, 3, {1, 1, 31}, {1, 1, 4}, {1, 1, 3}, {0, 0, 2}, {1, 1, 1}, true, false, 0, false, 0},  // 1-d
      {2, 3, {1, 1, 31}, {1, 1, 4}, {1, 1, 3}, {0, 0, 2}, {1, 1, 1}, true, true, 0, false, 0},
      {1, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, true, 0, false, 0},
      // 1-d, one window whose taps (-1 and 2) miss the input
      {1, 2, {1, 1, 2}, {1, 1, 2}, {1, 1, 1}, {0, 0, 1}, {1, 1, 3}, false, true, 0, false, 0},
      {2, 3, {6, 5, 7}, {2, 3, 2}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, true, false, 0, true, 0},
      {1, 4, {3, 9, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 2, 2}, false, true, 0, true, 0},
      {1, 3, {13, 17, 19}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, false, true, 0, false, 0},
      {1, 2, {3, 5, 7}, {2, 2, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, true, false, 0, false, 2},
  };
  for (const Case& s : cases) {
    Pool3dParams p;
    p.n = s.n, p.c = s.c;
    for (int d = 0; d < 3; ++d) {
      p.in[d] = s.in[d], p.kernel[d] = s.k[d], p.stride[d] = s.s[d], p.pad[d] = s.pad[d];
      p.dilation[d] = s.dil[d];
      p.out[d] = pooled(s.in[d], s.k[d], s.pad[d], s.s[d], s.dil[d], s.ceil_mode);
    }
    p.out[2] += s.extra_out;
    p.count_include_pad = s.include_pad;
    p.divisor_override = s.divisor_override;
    const size_t in = static_cast<size_t>(p.n * p.c * p.in[0] * p.in[1] * p.in[2]);
    const size_t out = static_cast<size_t>(p.n * p.c * p.out[0] * p.out[1] * p.out[2]);
    const std::vector<float> x = s.coarse ? coarse(t, in) : t.floats(in, true);
    const float* dx = t.upload(x);
    const std::string what = dims_str({s.n, s.c, s.in[0], s.in[1], s.in[2]}) + " k" + list3(s.k) + " s" +
                             list3(s.s) + " p" + list3(s.pad) + " d" + list3(s.dil) +
                             (s.ceil_mode ? " ceil" : "") + (s.coarse ? " coarse" : "") +
                             (s.extra_out ? " out+" + std::to_string(s.extra_out) : "");

    std::vector<float> cpu(out);
    std::vector<int64_t> cpu_i(out);
    rt::max_pool3d_f32(t.pool(), p, x.data(), cpu.data(), cpu_i.data());
    float* y = t.device<float>(out);
    int64_t* yi = t.device<int64_t>(out);
    rt::cuda::max_pool3d_f32(t.stream(), p, dx, y, yi);
    t.expect_equal("max_pool3d", what, cpu, t.download(y, out));
    t.expect_equal("max_pool3d (indices)", what, cpu_i, t.download(yi, out));
    rt::max_pool3d_f32(t.pool(), p, x.data(), cpu.data(), nullptr);
    y = t.device<float>(out);
    rt::cuda::max_pool3d_f32(t.stream(), p, dx, y, nullptr);
    t.expect_equal("max_pool3d (no indices)", what, cpu, t.download(y, out));

    rt::avg_pool3d_f32(t.pool(), p, x.data(), cpu.data());
    y = t.device<float>(out);
    rt::cuda::avg_pool3d_f32(t.stream(), p, dx, y);
    const std::string avg = std::string("avg_pool3d") + (s.include_pad ? " (count_include_pad)" : "") +
                            (s.divisor_override ? " (divisor_override)" : "");
    t.expect_close(avg, what, cpu, t.download(y, out), 1e-6);
  }
}

void adaptive_pool3d_cases(KernelTable& t) {
  struct Case {
    int64_t n, c, in[3], out[3];
    bool coarse;
  };
  const Case cases[] = {
      {2, 3, {5, 7, 9}, {2, 3, 4}, false},    {1, 4, {7, 11, 13}, {3, 5, 2}, false},
      {1, 2, {3, 2, 5}, {5, 7, 11}, false},  // out > in: overlapping one-cell bins
      {2, 3, {1, 13, 6}, {1, 5, 7}, false},  // 2-d
      {3, 5, {1, 1, 17}, {1, 1, 5}, false},  // 1-d
      {2, 3, {4, 7, 6}, {3, 2, 4}, true},     {2, 7, {5, 6, 7}, {1, 1, 1}, false},  // global
      {1, 3, {17, 19, 23}, {1, 1, 1}, false}, {3, 1, {1, 1, 1}, {1, 1, 1}, false},
      {33, 1, {1, 3, 5}, {1, 1, 1}, false},  // an odd count of planes: half a warp idle
      {1, 1, {1, 1, 1}, {2, 3, 1}, false},
  };
  for (const Case& s : cases) {
    AdaptivePoolParams p;
    p.n = s.n, p.c = s.c;
    for (int d = 0; d < 3; ++d) p.in[d] = s.in[d], p.out[d] = s.out[d];
    const size_t in = static_cast<size_t>(p.n * p.c * p.in[0] * p.in[1] * p.in[2]);
    const size_t out = static_cast<size_t>(p.n * p.c * p.out[0] * p.out[1] * p.out[2]);
    const std::vector<float> x = s.coarse ? coarse(t, in) : t.floats(in, true);
    const float* dx = t.upload(x);
    const std::string what =
        dims_str({s.n, s.c, s.in[0], s.in[1], s.in[2]}) + " -> " + list3(s.out) + (s.coarse ? " coarse" : "");

    std::vector<float> cpu(out);
    rt::adaptive_avg_pool3d_f32(t.pool(), p, x.data(), cpu.data());
    float* y = t.device<float>(out);
    rt::cuda::adaptive_avg_pool3d_f32(t.stream(), p, dx, y);
    t.expect_close("adaptive_avg_pool3d", what, cpu, t.download(y, out), 1e-6);
    if (!s.coarse) {  // no specials: every value finite, to compare the sums themselves
      const std::vector<float> xf = t.floats(in, false, 3.0f);
      rt::adaptive_avg_pool3d_f32(t.pool(), p, xf.data(), cpu.data());
      y = t.device<float>(out);
      rt::cuda::adaptive_avg_pool3d_f32(t.stream(), p, t.upload(xf), y);
      t.expect_close("adaptive_avg_pool3d (finite)", what, cpu, t.download(y, out), 1e-6);
    }

    std::vector<int64_t> cpu_i(out);
    rt::adaptive_max_pool3d_f32(t.pool(), p, x.data(), cpu.data(), cpu_i.data());
    y = t.device<float>(out);
    int64_t* yi = t.device<int64_t>(out);
    rt::cuda::adaptive_max_pool3d_f32(t.stream(), p, dx, y, yi);
    t.expect_equal("adaptive_max_pool3d", what, cpu, t.download(y, out));
    t.expect_equal("adaptive_max_pool3d (indices)", what, cpu_i, t.download(yi, out));
  }
}

void max_unpool_cases(KernelTable& t) {
  struct Case {
    int64_t planes, in_volume, out_volume, lo, hi;  // indices uniform in [lo, hi]
  };
  const Case cases[] = {
      {6, 24, 35, -3, 38},                        // some out of range on both sides, some duplicates
      {3, 100, 7, 0, 4},                          // mostly duplicates: the last one wins
      {5, 29, 31, -40, 70},                       // mostly out of range
      {1, 1, 1, 0, 0},          {2, 0, 5, 0, 4},  // no inputs: zeros
      {3, 1000, 997, -5, 1001}, {7, 13, 1, -1, 1},
  };
  for (const Case& s : cases) {
    const size_t in = static_cast<size_t>(s.planes * s.in_volume),
                 out = static_cast<size_t>(s.planes * s.out_volume);
    const std::vector<float> x = t.floats(in, true);
    const std::vector<int64_t> idx = t.ints(in, s.lo, s.hi);
    std::vector<float> cpu(out);
    rt::max_unpool_f32(t.pool(), s.planes, s.in_volume, s.out_volume, x.data(), idx.data(), cpu.data());
    const float* dx = t.upload(x);
    const int64_t* di = t.upload(idx);
    const std::string what = std::to_string(s.planes) + " planes " + std::to_string(s.in_volume) + " -> " +
                             std::to_string(s.out_volume) + ", indices in [" + std::to_string(s.lo) + ", " +
                             std::to_string(s.hi) + "]";
    float* y = t.device<float>(out);
    rt::cuda::max_unpool_f32(t.stream(), s.planes, s.in_volume, s.out_volume, dx, di, y, nullptr);
    t.expect_equal("max_unpool", what, cpu, t.download(y, out));
    y = t.device<float>(out);
    rt::cuda::max_unpool_f32(t.stream(), s.planes, s.in_volume, s.out_volume, dx, di, y,
                             t.device<unsigned long long>(out));
    t.expect_equal("max_unpool (64-bit scratch)", what, cpu, t.download(y, out));
  }
}

}  // namespace

void pool3d_cases(KernelTable& t) {
  pool_cases(t);
  adaptive_pool3d_cases(t);
  max_unpool_cases(t);
}

}  // namespace aotc::test
