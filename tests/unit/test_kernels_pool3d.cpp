// max_pool3d_f32 (values and argmax indices), avg_pool3d_f32, adaptive_avg_pool3d_f32 and
// adaptive_max_pool3d_f32 against naive references: 1-d, 2-d and 3-d shapes, padding,
// dilation, ceil_mode sizes, count_include_pad, divisor_override, NaN and ties.
#include <doctest/doctest.h>

#include <string>

#include "kernel_reference.h"

namespace {

using aotc::rt::AdaptivePoolParams;
using aotc::rt::Pool3dParams;
using aotc::rt::ThreadPool;
using namespace aotc::test;

struct Pool3dCase {
  const char* name;
  int64_t n, c;
  int64_t in[3], kernel[3], stride[3], pad[3], dilation[3];
  bool ceil_mode;
};

const Pool3dCase kCases[] = {
    {"2x2x2", 1, 3, {4, 6, 6}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, false},
    {"2x2x2 ceil odd", 2, 2, {5, 7, 3}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, true},
    {"3x3x3 s2 p1", 1, 2, {7, 9, 8}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false},
    {"3x3x3 s2 p1 ceil", 1, 2, {6, 6, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, true},
    {"anisotropic", 2, 3, {3, 8, 11}, {1, 2, 3}, {1, 2, 2}, {0, 1, 1}, {1, 1, 1}, true},
    {"dilation", 1, 2, {6, 9, 9}, {2, 3, 2}, {1, 2, 1}, {1, 1, 1}, {2, 2, 3}, false},
    {"2-d", 2, 4, {1, 13, 11}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}, {1, 1, 1}, true},
    {"1-d", 3, 2, {1, 1, 23}, {1, 1, 4}, {1, 1, 3}, {0, 0, 2}, {1, 1, 2}, false},
    {"1x1x1 input", 1, 2, {1, 1, 1}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, true},
};

Pool3dParams make(const Pool3dCase& pc, bool with_dilation) {
  Pool3dParams p;
  p.n = pc.n;
  p.c = pc.c;
  for (int d = 0; d < 3; ++d) {
    p.in[d] = pc.in[d];
    p.kernel[d] = pc.kernel[d];
    p.stride[d] = pc.stride[d];
    p.pad[d] = pc.pad[d];
    p.dilation[d] = with_dilation ? pc.dilation[d] : 1;
    p.out[d] = pool_out_size(pc.in[d], pc.kernel[d], pc.pad[d], pc.stride[d], p.dilation[d], pc.ceil_mode);
  }
  return p;
}

int64_t vol(const int64_t* v) { return v[0] * v[1] * v[2]; }

// Values and indices, scanning each window in (d, h, w) order as torch does.
void ref_max_pool3d(const Pool3dParams& p, const float* x, std::vector<double>& y,
                    std::vector<int64_t>& idx) {
  const int64_t vi = vol(p.in), vo = vol(p.out);
  y.assign(static_cast<size_t>(p.n * p.c * vo), 0.0);
  idx.assign(y.size(), -1);
  for (int64_t q = 0; q < p.n * p.c; ++q)
    for (int64_t o = 0; o < vo; ++o) {
      const int64_t od = o / (p.out[1] * p.out[2]), oh = (o / p.out[2]) % p.out[1], ow = o % p.out[2];
      double best = -INFINITY;
      int64_t best_index = -1;
      for (int64_t kd = 0; kd < p.kernel[0]; ++kd)
        for (int64_t kh = 0; kh < p.kernel[1]; ++kh)
          for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
            const int64_t id = od * p.stride[0] - p.pad[0] + kd * p.dilation[0];
            const int64_t ih = oh * p.stride[1] - p.pad[1] + kh * p.dilation[1];
            const int64_t iw = ow * p.stride[2] - p.pad[2] + kw * p.dilation[2];
            if (id < 0 || id >= p.in[0] || ih < 0 || ih >= p.in[1] || iw < 0 || iw >= p.in[2]) continue;
            const int64_t index = (id * p.in[1] + ih) * p.in[2] + iw;
            const double v = x[q * vi + index];
            if (best_index < 0) best_index = index;
            if (v > best || std::isnan(v)) {
              best = v;
              best_index = index;
            }
          }
      y[static_cast<size_t>(q * vo + o)] = best;
      idx[static_cast<size_t>(q * vo + o)] = best_index;
    }
}

std::vector<double> ref_avg_pool3d(const Pool3dParams& p, const float* x) {
  const int64_t vi = vol(p.in), vo = vol(p.out);
  std::vector<double> y(static_cast<size_t>(p.n * p.c * vo));
  for (int64_t q = 0; q < p.n * p.c; ++q)
    for (int64_t o = 0; o < vo; ++o) {
      const int64_t oc[3] = {o / (p.out[1] * p.out[2]), (o / p.out[2]) % p.out[1], o % p.out[2]};
      double sum = 0.0;
      int64_t inside = 0, padded = 0;
      for (int64_t t = 0; t < vol(p.kernel); ++t) {
        const int64_t k[3] = {t / (p.kernel[1] * p.kernel[2]), (t / p.kernel[2]) % p.kernel[1],
                              t % p.kernel[2]};
        int64_t i[3];
        bool in_input = true, in_padded = true;
        for (int d = 0; d < 3; ++d) {
          i[d] = oc[d] * p.stride[d] - p.pad[d] + k[d];
          in_input &= i[d] >= 0 && i[d] < p.in[d];
          in_padded &= i[d] >= -p.pad[d] && i[d] < p.in[d] + p.pad[d];
        }
        padded += in_padded;
        if (!in_input) continue;
        ++inside;
        sum += x[q * vi + (i[0] * p.in[1] + i[1]) * p.in[2] + i[2]];
      }
      const int64_t divisor =
          p.divisor_override ? p.divisor_override : (p.count_include_pad ? padded : inside);
      y[static_cast<size_t>(q * vo + o)] = inside ? sum / double(divisor) : 0.0;
    }
  return y;
}

}  // namespace

TEST_CASE("max_pool3d_f32: values and indices, padding never wins, dilation, ceil_mode") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 301;
    for (const Pool3dCase& pc : kCases)
      for (float shift : {0.0f, -5.0f})
        for (bool with_indices : {false, true}) {
          const Pool3dParams p = make(pc, true);
          auto x = random_floats(static_cast<size_t>(p.n * p.c * vol(p.in)), ++seed);
          for (float& v : x) v += shift;  // all negative: a zero pad would win
          const size_t count = static_cast<size_t>(p.n * p.c * vol(p.out));
          Guarded y(count);
          std::vector<int64_t> idx(count + 2, -7);  // one sentinel on each side
          aotc::rt::max_pool3d_f32(pool, p, x.data(), y.data(), with_indices ? idx.data() + 1 : nullptr);
          std::vector<double> want;
          std::vector<int64_t> want_idx;
          ref_max_pool3d(p, x.data(), want, want_idx);
          INFO(std::string(pc.name) << " shift=" << shift << " indices=" << with_indices
                                    << " threads=" << threads);
          CHECK(rel_l2(y.values(), want) == 0.0);
          CHECK(y.guards_intact());
          CHECK(idx.front() == -7);
          CHECK(idx.back() == -7);
          if (with_indices) CHECK(std::vector<int64_t>(idx.begin() + 1, idx.end() - 1) == want_idx);
        }
  }
}

TEST_CASE("max_pool3d_f32: ties keep the first, NaN wins, an all -inf window points inside") {
  ThreadPool pool(1);
  Pool3dParams p;
  p.c = 1;
  p.in[2] = 8;
  p.kernel[2] = 4;
  p.stride[2] = 4;
  p.out[2] = 2;
  const std::vector<float> x = {1, 3, 3, 2, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  Guarded y(2);
  int64_t idx[2] = {-1, -1};
  aotc::rt::max_pool3d_f32(pool, p, x.data(), y.data(), idx);
  CHECK(y.data()[0] == 3.0f);
  CHECK(idx[0] == 1);
  CHECK(y.data()[1] == -INFINITY);
  CHECK(idx[1] == 4);
  const std::vector<float> with_nan = {1, NAN, 5, NAN, 0, 0, 0, 0};
  aotc::rt::max_pool3d_f32(pool, p, with_nan.data(), y.data(), idx);
  CHECK(std::isnan(y.data()[0]));
  CHECK(idx[0] == 3);  // the last NaN, as torch
  aotc::rt::max_pool3d_f32(pool, p, with_nan.data(), y.data(), nullptr);
  CHECK(std::isnan(y.data()[0]));
}

TEST_CASE("avg_pool3d_f32: count_include_pad, ceil_mode border, divisor_override") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 401;
    for (const Pool3dCase& pc : kCases)
      for (bool include_pad : {true, false})
        for (int64_t divisor : {0, 5}) {
          Pool3dParams p = make(pc, false);
          p.count_include_pad = include_pad;
          p.divisor_override = divisor;
          const auto x = random_floats(static_cast<size_t>(p.n * p.c * vol(p.in)), ++seed);
          Guarded y(static_cast<size_t>(p.n * p.c * vol(p.out)));
          aotc::rt::avg_pool3d_f32(pool, p, x.data(), y.data());
          INFO(std::string(pc.name) << " include_pad=" << include_pad << " divisor=" << divisor
                                    << " threads=" << threads);
          CHECK(rel_l2(y.values(), ref_avg_pool3d(p, x.data())) <= kTolerance);
          CHECK(y.guards_intact());
        }
  }
}

TEST_CASE("adaptive_avg_pool3d_f32 / adaptive_max_pool3d_f32: bins as torch computes them") {
  struct Case {
    int64_t n, c, in[3], out[3];
  };
  const Case cases[] = {
      {1, 3, {4, 6, 6}, {2, 3, 3}},   {2, 2, {5, 7, 9}, {3, 4, 2}},
      {1, 2, {3, 5, 7}, {1, 1, 1}},   {1, 4, {2, 2, 3}, {5, 7, 4}},  // more bins than cells: bins overlap
      {2, 3, {1, 13, 11}, {1, 3, 4}}, {3, 2, {1, 1, 29}, {1, 1, 5}},
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 501;
    for (const Case& cc : cases) {
      AdaptivePoolParams p;
      p.n = cc.n;
      p.c = cc.c;
      for (int d = 0; d < 3; ++d) {
        p.in[d] = cc.in[d];
        p.out[d] = cc.out[d];
      }
      const auto x = random_floats(static_cast<size_t>(p.n * p.c * vol(p.in)), ++seed);
      const size_t count = static_cast<size_t>(p.n * p.c * vol(p.out));
      std::vector<double> want_avg(count), want_max(count);
      std::vector<int64_t> want_idx(count);
      for (int64_t q = 0; q < p.n * p.c; ++q)
        for (int64_t o = 0; o < vol(p.out); ++o) {
          const int64_t oc[3] = {o / (p.out[1] * p.out[2]), (o / p.out[2]) % p.out[1], o % p.out[2]};
          int64_t lo[3], hi[3];
          for (int d = 0; d < 3; ++d) {
            lo[d] = static_cast<int64_t>(std::floor(double(oc[d]) * p.in[d] / p.out[d]));
            hi[d] = static_cast<int64_t>(std::ceil(double(oc[d] + 1) * p.in[d] / p.out[d]));
          }
          double sum = 0.0, best = -INFINITY;
          int64_t best_index = -1;
          for (int64_t i = lo[0]; i < hi[0]; ++i)
            for (int64_t j = lo[1]; j < hi[1]; ++j)
              for (int64_t k = lo[2]; k < hi[2]; ++k) {
                const int64_t index = (i * p.in[1] + j) * p.in[2] + k;
                const double v = x[q * vol(p.in) + index];
                sum += v;
                if (v > best) best = v, best_index = index;
              }
          const size_t at = static_cast<size_t>(q * vol(p.out) + o);
          want_avg[at] = sum / double((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]));
          want_max[at] = best;
          want_idx[at] = best_index;
        }
      Guarded y(count);
      aotc::rt::adaptive_avg_pool3d_f32(pool, p, x.data(), y.data());
      INFO("in " << p.in[0] << "x" << p.in[1] << "x" << p.in[2] << " out " << p.out[0] << "x" << p.out[1]
                 << "x" << p.out[2] << " threads=" << threads);
      CHECK(rel_l2(y.values(), want_avg) <= kTolerance);
      CHECK(y.guards_intact());
      Guarded ymax(count);
      std::vector<int64_t> idx(count, -1);
      aotc::rt::adaptive_max_pool3d_f32(pool, p, x.data(), ymax.data(), idx.data());
      CHECK(rel_l2(ymax.values(), want_max) == 0.0);
      CHECK(idx == want_idx);
      CHECK(ymax.guards_intact());
    }
  }
}

TEST_CASE("max_unpool_f32: scatter by index, zeros elsewhere, bad indices skipped") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    const int64_t planes = 3, in_volume = 5, out_volume = 11;
    const auto x = random_floats(static_cast<size_t>(planes * in_volume), 801);
    // Plane 1 repeats index 4 (the later value wins) and has indices out of range.
    const std::vector<int64_t> idx = {0, 3, 4, 9, 10, 4, 4, -1, 11, 2, 1, 2, 5, 6, 7};
    std::vector<double> want(static_cast<size_t>(planes * out_volume), 0.0);
    for (int64_t q = 0; q < planes; ++q)
      for (int64_t i = 0; i < in_volume; ++i) {
        const int64_t at = idx[static_cast<size_t>(q * in_volume + i)];
        if (at >= 0 && at < out_volume)
          want[static_cast<size_t>(q * out_volume + at)] = x[static_cast<size_t>(q * in_volume + i)];
      }
    Guarded y(static_cast<size_t>(planes * out_volume));
    aotc::rt::max_unpool_f32(pool, planes, in_volume, out_volume, x.data(), idx.data(), y.data());
    CHECK(rel_l2(y.values(), want) == 0.0);
    CHECK(y.data()[out_volume + 4] == x[6]);
    CHECK(y.guards_intact());
  }
}
