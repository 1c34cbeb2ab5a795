// layer_norm_f32, embedding_f32 and embedding_bag_f32 against naive double-precision
// references and hand-worked bags.
#include <doctest/doctest.h>

#include "kernel_reference.h"

using aotc::rt::ThreadPool;
using namespace aotc::test;

namespace {

std::vector<double> ref_layer_norm(int64_t rows, int64_t cols, double eps, const float* x, const float* gamma,
                                   const float* beta, std::vector<double>& mean, std::vector<double>& rstd) {
  std::vector<double> y(static_cast<size_t>(rows * cols));
  mean.assign(static_cast<size_t>(rows), 0.0);
  rstd.assign(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0.0, v = 0.0;
    for (int64_t j = 0; j < cols; ++j) m += x[r * cols + j];
    m /= static_cast<double>(cols);
    for (int64_t j = 0; j < cols; ++j) v += (x[r * cols + j] - m) * (x[r * cols + j] - m);
    v /= static_cast<double>(cols);
    const double s = 1.0 / std::sqrt(v + eps);
    mean[static_cast<size_t>(r)] = m;
    rstd[static_cast<size_t>(r)] = s;
    for (int64_t j = 0; j < cols; ++j) {
      double o = (x[r * cols + j] - m) * s;
      if (gamma) o *= gamma[j];
      if (beta) o += beta[j];
      y[static_cast<size_t>(r * cols + j)] = o;
    }
  }
  return y;
}

}  // namespace

TEST_CASE("layer_norm_f32: shapes x affine x statistics") {
  struct Case {
    int64_t rows, cols;
    float offset;  // a large mean against a small spread
  };
  const Case cases[] = {{1, 1, 0.0f},   {3, 7, 0.0f},     {17, 33, 100.0f},
                        {5, 768, 0.0f}, {1000, 13, 5.0f}, {2, 4097, 1e3f}};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 900;
    for (const Case& c : cases)
      for (int affine = 0; affine < 4; ++affine) {
        auto x = random_floats(static_cast<size_t>(c.rows * c.cols), ++seed);
        for (float& v : x) v += c.offset;
        const auto gamma = random_floats(static_cast<size_t>(c.cols), ++seed, 0.5f, 1.5f);
        const auto beta = random_floats(static_cast<size_t>(c.cols), ++seed);
        const float* g = affine & 1 ? gamma.data() : nullptr;
        const float* b = affine & 2 ? beta.data() : nullptr;
        aotc::rt::LayerNormParams p;
        p.rows = c.rows;
        p.cols = c.cols;
        p.eps = 1e-5f;
        Guarded y(x.size()), mean(static_cast<size_t>(c.rows)), rstd(static_cast<size_t>(c.rows));
        const bool stats = affine == 3;
        aotc::rt::layer_norm_f32(pool, p, x.data(), g, b, y.data(), stats ? mean.data() : nullptr,
                                 stats ? rstd.data() : nullptr);
        std::vector<double> want_mean, want_rstd;
        const auto want = ref_layer_norm(c.rows, c.cols, p.eps, x.data(), g, b, want_mean, want_rstd);
        INFO("rows=" << c.rows << " cols=" << c.cols << " affine=" << affine << " threads=" << threads);
        // A constant row (cols == 1) normalises to exactly 0: compare absolutely there.
        CHECK(rel_l2(y.values(), want) <= (c.cols == 1 ? 1e-6 : 1e-4));
        CHECK(y.guards_intact());
        if (stats) {
          CHECK(rel_l2(mean.values(), want_mean) <= kTolerance);
          CHECK(rel_l2(rstd.values(), want_rstd) <= 1e-4);
          CHECK(mean.guards_intact());
          CHECK(rstd.guards_intact());
        }
      }
  }
}

TEST_CASE("embedding_f32: int64 and int32 ids, out-of-range ids give zero rows") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    const int64_t vocab = 37, dim = 13, count = 2000;
    const auto table = random_floats(static_cast<size_t>(vocab * dim), 7);
    std::vector<int64_t> ids64(count);
    std::vector<int32_t> ids32(count);
    for (int64_t i = 0; i < count; ++i) {
      ids64[static_cast<size_t>(i)] = (i * 7919) % (vocab + 4) - 2;  // -2 .. vocab + 1
      ids32[static_cast<size_t>(i)] = static_cast<int32_t>(ids64[static_cast<size_t>(i)]);
    }
    std::vector<double> want(static_cast<size_t>(count * dim), 0.0);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t id = ids64[static_cast<size_t>(i)];
      if (id < 0 || id >= vocab) continue;
      for (int64_t j = 0; j < dim; ++j)
        want[static_cast<size_t>(i * dim + j)] = table[static_cast<size_t>(id * dim + j)];
    }
    for (bool int32 : {false, true}) {
      aotc::rt::EmbeddingParams p;
      p.count = count;
      p.dim = dim;
      p.vocab = vocab;
      p.ids_int32 = int32;
      Guarded y(static_cast<size_t>(count * dim));
      aotc::rt::embedding_f32(pool, p, int32 ? static_cast<const void*>(ids32.data()) : ids64.data(),
                              table.data(), y.data());
      CHECK(rel_l2(y.values(), want) == 0.0);
      CHECK(y.guards_intact());
    }
  }
}

TEST_CASE("embedding_bag_f32: modes, skipped ids, empty and clamped bags, NaN in a maximum") {
  // Rows (1, 2), (3, 4), (5, 6), (7, 8); ids 9 and -1 are outside the table; offsets 3, 3
  // make bag 1 empty, and 10 (past the 6 ids) clamps bag 3 to empty.
  const std::vector<float> table = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<int64_t> ids = {0, 9, 2, 2, -1, 3}, offsets = {0, 3, 3, 10};
  using Mode = aotc::rt::EmbeddingBagMode;
  struct Case {
    Mode mode;
    int64_t padding_idx;
    bool weights;
    std::vector<float> want;
  };
  const std::vector<float> weights = {2, 1, 0.5f, 1, 1, -1};
  const Case cases[] = {
      {Mode::Sum, -1, false, {6, 8, 0, 0, 12, 14, 0, 0}},    // r0 + r2; r2 + r3
      {Mode::Sum, -1, true, {4.5f, 7, 0, 0, -2, -2, 0, 0}},  // 2 r0 + 0.5 r2; r2 - r3
      {Mode::Mean, 2, false, {1, 2, 0, 0, 7, 8, 0, 0}},      // id 2 is padding: r0; r3
      {Mode::Mean, -1, false, {3, 4, 0, 0, 6, 7, 0, 0}},     // (r0 + r2) / 2; (r2 + r3) / 2
      {Mode::Max, -1, false, {5, 6, 0, 0, 7, 8, 0, 0}},      // max(r0, r2); max(r2, r3)
      {Mode::Max, 3, false, {5, 6, 0, 0, 5, 6, 0, 0}},       // id 3 is padding: r2
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    for (const Case& c : cases) {
      aotc::rt::EmbeddingBagParams p;
      p.count = 6, p.dim = 2, p.vocab = 4, p.bags = 4, p.offsets_count = 4;
      p.mode = c.mode;
      p.padding_idx = c.padding_idx;
      Guarded y(8);
      aotc::rt::embedding_bag_f32(pool, p, ids.data(), offsets.data(), table.data(),
                                  c.weights ? weights.data() : nullptr, y.data());
      CHECK(y.values() == c.want);
      CHECK(y.guards_intact());
    }
    // include_last_offset: offsets {0, 2, 6} are two bags; a NaN row wins a maximum.
    std::vector<float> nan_table = table;
    nan_table[2] = std::nanf("");  // r1, which no bag reads
    const std::vector<int64_t> last = {0, 2, 6};
    aotc::rt::EmbeddingBagParams p;
    p.count = 6, p.dim = 2, p.vocab = 4, p.bags = 2, p.offsets_count = 3, p.mode = Mode::Max;
    Guarded y(4);
    aotc::rt::embedding_bag_f32(pool, p, ids.data(), last.data(), nan_table.data(), nullptr, y.data());
    const std::vector<float> got = y.values();
    CHECK(got[0] == 1.0f);  // bag 0: r0 only (9 is outside)
    CHECK(got[1] == 2.0f);
    CHECK(got[2] == 7.0f);  // bag 1: r2, r2, r3 (-1 skipped): column 0 is 5, 5, 7
    CHECK(got[3] == 8.0f);
    nan_table[4] = std::nanf("");  // r2's column 0
    aotc::rt::embedding_bag_f32(pool, p, ids.data(), last.data(), nan_table.data(), nullptr, y.data());
    CHECK(std::isnan(y.values()[2]));
    CHECK(y.guards_intact());
  }
}
