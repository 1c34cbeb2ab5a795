// gemm_f32 and batched_gemm_f32 against the naive reference.
#include <doctest/doctest.h>

#include "kernel_reference.h"

namespace {

using aotc::rt::BiasKind;
using aotc::rt::GemmActivation;
using aotc::rt::GemmParams;
using aotc::rt::ThreadPool;
using namespace aotc::test;

struct Epilogue {
  float alpha, beta, lo, hi;
};

const Epilogue kEpilogues[] = {
    {1.0f, 1.0f, -INFINITY, INFINITY},
    {0.5f, 2.0f, 0.0f, INFINITY},       // relu
    {1.5f, -1.0f, -0.25f, 0.25f},       // hardtanh-like
    {1.0f, 0.0f, -INFINITY, INFINITY},  // beta 0: the bias must be ignored, even NaN
};

size_t bias_size(BiasKind kind, int64_t m, int64_t n) {
  switch (kind) {
    case BiasKind::None:
      return 0;
    case BiasKind::PerColumn:
      return static_cast<size_t>(n);
    case BiasKind::PerRow:
      return static_cast<size_t>(m);
    case BiasKind::Full:
      return static_cast<size_t>(m * n);
  }
  return 0;
}

// The GEMM epilogue's activation in double (GemmParams::activation).
double ref_activation(GemmActivation act, double v) {
  switch (act) {
    case GemmActivation::GeluErf:
      return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    case GemmActivation::GeluTanh:
      return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
    case GemmActivation::Silu:
      return v / (1.0 + std::exp(-v));
    case GemmActivation::None:
      break;
  }
  return v;
}

// Runs one product with padded leading dimensions and checks values and guards,
// including the padding between rows of C, which must stay untouched.
void check_gemm(ThreadPool& pool, int64_t m, int64_t n, int64_t k, bool ta, bool tb, BiasKind bk,
                const Epilogue& e, uint32_t seed) {
  GemmParams p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.trans_a = ta;
  p.trans_b = tb;
  p.lda = (ta ? m : k) + 3;
  p.ldb = (tb ? k : n) + 1;
  p.ldc = n + 2;
  p.alpha = e.alpha;
  p.beta = e.beta;
  p.bias_kind = bk;
  p.clamp_lo = e.lo;
  p.clamp_hi = e.hi;
  const auto a = random_floats(static_cast<size_t>((ta ? k : m) * p.lda), seed);
  const auto b = random_floats(static_cast<size_t>((tb ? n : k) * p.ldb), seed + 1);
  auto bias = random_floats(bias_size(bk, m, n), seed + 2);
  if (e.beta == 0.0f)
    for (float& v : bias) v = NAN;
  Guarded c(static_cast<size_t>(m * p.ldc));
  // The per-thread scratch a compiled model would plan for this product, and no more.
  PoolScratch scratch(pool, aotc::rt::gemm_thread_scratch_bytes(p));
  aotc::rt::gemm_f32(pool, p, a.data(), b.data(), bias.empty() ? nullptr : bias.data(), c.data());
  CHECK(scratch.guard_intact());

  const auto want = ref_gemm(p, a.data(), b.data(), bias.data());
  std::vector<float> got(static_cast<size_t>(m * n));
  bool gaps_intact = true;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) got[i * n + j] = c.data()[i * p.ldc + j];
    for (int64_t j = n; j < p.ldc && i + 1 < m; ++j)
      gaps_intact = gaps_intact && Guarded::is_sentinel(c.data()[i * p.ldc + j]);
  }
  INFO("m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " tb=" << tb << " bias=" << int(bk)
            << " alpha=" << e.alpha << " beta=" << e.beta << " threads=" << pool.size());
  CHECK(rel_l2(got, want) <= kTolerance);
  CHECK(c.guards_intact());
  CHECK(gaps_intact);
}

}  // namespace

TEST_CASE("gemm_f32: shapes x transposes x bias kinds x epilogues") {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 1, 1},      {3, 7, 13},     {17, 33, 5},   {33, 17, 64},   {64, 64, 64},
                          {150, 130, 70}, {5, 1000, 300}, {700, 3, 500}, {1, 1000, 512}, {13, 1, 33}};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 1;
    int epi = 0;
    for (const Shape& s : shapes)
      for (int t = 0; t < 4; ++t)
        for (BiasKind bk : {BiasKind::None, BiasKind::PerColumn, BiasKind::PerRow, BiasKind::Full})
          check_gemm(pool, s.m, s.n, s.k, t & 1, t & 2, bk, kEpilogues[epi++ % 4], seed += 3);
  }
}

TEST_CASE("gemm_f32: products larger than the packing caps, with planned scratch") {
  struct Shape {
    int64_t m, n, k;
  };
  // Depth over gemm_pack::kMaxKc, Eigen's rows (our n) over what kMaxA allows at that
  // depth, a matrix-vector product too long for the stack, and their transposes.
  const Shape shapes[] = {{300, 1100, 700}, {1100, 300, 333}, {1, 20000, 3}, {3, 1, 17000}, {40, 30, 2000}};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 500;
    for (const Shape& s : shapes)
      for (int t = 0; t < 4; ++t)
        check_gemm(pool, s.m, s.n, s.k, t & 1, t & 2, BiasKind::PerColumn, kEpilogues[t % 3], seed += 3);
  }
}

TEST_CASE("gemm_f32: without per-thread scratch (Eigen allocates its own)") {
  ThreadPool pool(2);
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1};
  GemmParams p;
  p.m = 2;
  p.n = 2;
  p.k = 3;
  p.alpha = 2.0f;  // a packed product even at this size
  float c[4] = {};
  aotc::rt::gemm_f32(pool, p, a, b, nullptr, c);
  CHECK(c[0] == 2.0f * (1 + 0 + 3));
  CHECK(c[1] == 2.0f * (0 + 2 + 3));
  CHECK(c[2] == 2.0f * (4 + 0 + 6));
  CHECK(c[3] == 2.0f * (0 + 5 + 6));
}

TEST_CASE("gemm_thread_scratch_bytes") {
  GemmParams p;
  p.m = 4;
  p.n = 5;
  p.k = 6;
  CHECK(aotc::rt::gemm_thread_scratch_bytes(p) == 0);  // tiny: coefficient-wise
  p.alpha = 0.5f;
  CHECK(aotc::rt::gemm_thread_scratch_bytes(p) > 0);  // scaled: always packed
  p.alpha = 1.0f;
  p.m = 1;
  p.n = 1000;
  p.k = 512;
  CHECK(aotc::rt::gemm_thread_scratch_bytes(p) == 0);  // matrix-vector
  p.m = 512;
  p.n = 512;
  const int64_t bytes = aotc::rt::gemm_thread_scratch_bytes(p);
  CHECK(bytes % 64 == 0);
  CHECK(bytes <= (aotc::rt::gemm_pack::kMaxA + aotc::rt::gemm_pack::kMaxB) * 4);
  p.m = p.n = p.k = 100000;  // bounded whatever the shape
  CHECK(aotc::rt::gemm_thread_scratch_bytes(p) ==
        (aotc::rt::gemm_pack::kMaxA + aotc::rt::gemm_pack::kMaxB) * 4);
}

TEST_CASE("gemm_f32: k == 0 gives beta * bias") {
  ThreadPool pool(1);
  GemmParams p;
  p.m = 3;
  p.n = 4;
  p.k = 0;
  p.lda = 1;
  p.ldb = 4;
  p.ldc = 4;
  p.beta = 2.0f;
  p.bias_kind = BiasKind::PerColumn;
  const float bias[4] = {1, 2, 3, 4};
  const float dummy[1] = {0};
  Guarded c(12);
  aotc::rt::gemm_f32(pool, p, dummy, dummy, bias, c.data());
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) CHECK(c.data()[i * 4 + j] == 2.0f * bias[j]);
  CHECK(c.guards_intact());
}

TEST_CASE("batched_gemm_f32: batches, broadcast operands, bias") {
  struct Case {
    int64_t batch, m, n, k;
    bool ta, tb;
    bool broadcast_a, broadcast_b;
    BiasKind bias;
  };
  const Case cases[] = {
      {1, 7, 5, 3, false, false, false, false, BiasKind::None},
      {3, 17, 13, 33, false, true, false, false, BiasKind::PerColumn},
      {7, 33, 17, 9, true, false, true, false, BiasKind::Full},
      {4, 5, 64, 32, false, false, false, true, BiasKind::PerRow},
      {12, 64, 64, 64, true, true, false, false, BiasKind::None},           // many: parallel over batch
      {2, 200, 150, 100, false, false, false, false, BiasKind::PerColumn},  // few large: split
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 100;
    for (const Case& cs : cases) {
      aotc::rt::BatchedGemmParams bp;
      GemmParams& p = bp.gemm;
      p.m = cs.m;
      p.n = cs.n;
      p.k = cs.k;
      p.trans_a = cs.ta;
      p.trans_b = cs.tb;
      p.lda = cs.ta ? cs.m : cs.k;
      p.ldb = cs.tb ? cs.k : cs.n;
      p.ldc = cs.n;
      p.bias_kind = cs.bias;
      p.clamp_lo = -0.5f;
      p.clamp_hi = INFINITY;
      bp.batch = cs.batch;
      bp.stride_a = cs.broadcast_a ? 0 : cs.m * cs.k;
      bp.stride_b = cs.broadcast_b ? 0 : cs.k * cs.n;
      bp.stride_c = cs.m * cs.n;
      const auto a =
          random_floats(static_cast<size_t>((cs.broadcast_a ? 1 : cs.batch) * cs.m * cs.k), ++seed);
      const auto b =
          random_floats(static_cast<size_t>((cs.broadcast_b ? 1 : cs.batch) * cs.k * cs.n), ++seed);
      const auto bias = random_floats(bias_size(cs.bias, cs.m, cs.n), ++seed);
      Guarded c(static_cast<size_t>(cs.batch * cs.m * cs.n));
      PoolScratch scratch(pool, aotc::rt::batched_gemm_thread_scratch_bytes(bp));
      aotc::rt::batched_gemm_f32(pool, bp, a.data(), b.data(), bias.empty() ? nullptr : bias.data(),
                                 c.data());
      CHECK(scratch.guard_intact());
      std::vector<double> want;
      for (int64_t i = 0; i < cs.batch; ++i) {
        const auto one = ref_gemm(p, a.data() + i * bp.stride_a, b.data() + i * bp.stride_b, bias.data());
        want.insert(want.end(), one.begin(), one.end());
      }
      INFO("batch=" << cs.batch << " m=" << cs.m << " n=" << cs.n << " k=" << cs.k << " threads=" << threads);
      CHECK(rel_l2(c.values(), want) <= kTolerance);
      CHECK(c.guards_intact());
    }
  }
}

// Sequence area: the residual epilogue (transformer blocks) and per-matrix biases (baddbmm).
// A GELU (fuse_gemm_gelu) comes before the residual and the clamp.
TEST_CASE("gemm_f32: activation, then residual, then clamp, with and without bias") {
  struct Case {
    int64_t m, n, k;
    BiasKind bias;
    float lo;
  };
  const Case cases[] = {{1, 1, 1, BiasKind::None, -INFINITY},     {3, 7, 13, BiasKind::PerColumn, -INFINITY},
                        {33, 17, 64, BiasKind::Full, 0.0f},       {150, 130, 70, BiasKind::PerRow, -INFINITY},
                        {70, 300, 40, BiasKind::PerColumn, 0.0f}, {5, 1, 9, BiasKind::None, 0.0f}};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 500;
    for (const Case& cs : cases)
      for (GemmActivation act :
           {GemmActivation::None, GemmActivation::GeluErf, GemmActivation::GeluTanh, GemmActivation::Silu}) {
        GemmParams p;
        p.m = cs.m;
        p.n = cs.n;
        p.k = cs.k;
        p.trans_b = true;
        p.lda = cs.k;
        p.ldb = cs.k;
        p.ldc = cs.n;
        p.bias_kind = cs.bias;
        p.clamp_lo = cs.lo;
        p.alpha = 0.75f;
        p.ldr = cs.n + 3;  // a padded residual
        p.activation = act;
        const auto a = random_floats(static_cast<size_t>(cs.m * cs.k), ++seed);
        const auto b = random_floats(static_cast<size_t>(cs.n * cs.k), ++seed);
        const auto bias = random_floats(bias_size(cs.bias, cs.m, cs.n), ++seed);
        const auto residual = random_floats(static_cast<size_t>(cs.m * p.ldr), ++seed);
        // Without a residual too when there is an activation (the odd seeds).
        const bool with_residual = act == GemmActivation::None || seed % 2 == 1;
        p.residual = with_residual ? residual.data() : nullptr;
        Guarded c(static_cast<size_t>(cs.m * cs.n));
        PoolScratch scratch(pool, aotc::rt::gemm_thread_scratch_bytes(p));
        aotc::rt::gemm_f32(pool, p, a.data(), b.data(), bias.empty() ? nullptr : bias.data(), c.data());
        // The reference: product and bias without clamp, then activation, residual, clamp.
        GemmParams plain = p;
        plain.clamp_lo = -INFINITY;
        plain.activation = GemmActivation::None;
        auto want = ref_gemm(plain, a.data(), b.data(), bias.data());
        for (int64_t i = 0; i < cs.m; ++i)
          for (int64_t j = 0; j < cs.n; ++j) {
            double& w = want[static_cast<size_t>(i * cs.n + j)];
            w = ref_activation(act, w) +
                (with_residual ? residual[static_cast<size_t>(i * p.ldr + j)] : 0.0f);
            if (w < cs.lo) w = cs.lo;
          }
        INFO("m=" << cs.m << " n=" << cs.n << " k=" << cs.k << " activation=" << int(act)
                  << " threads=" << threads);
        CHECK(rel_l2(c.values(), want) <= kTolerance);
        CHECK(c.guards_intact());
        CHECK(scratch.guard_intact());
      }
  }
}

TEST_CASE("batched_gemm_f32: one bias per matrix (stride_bias)") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    aotc::rt::BatchedGemmParams bp;
    GemmParams& p = bp.gemm;
    p.m = 9;
    p.n = 11;
    p.k = 7;
    p.lda = 7;
    p.ldb = 11;
    p.ldc = 11;
    p.alpha = 2.0f;
    p.beta = 0.5f;
    p.bias_kind = BiasKind::Full;
    bp.batch = 5;
    bp.stride_a = 63;
    bp.stride_b = 77;
    bp.stride_c = 99;
    bp.stride_bias = 99;
    const auto a = random_floats(5 * 63, 1), b = random_floats(5 * 77, 2), bias = random_floats(5 * 99, 3);
    Guarded c(5 * 99);
    PoolScratch scratch(pool, aotc::rt::batched_gemm_thread_scratch_bytes(bp));
    aotc::rt::batched_gemm_f32(pool, bp, a.data(), b.data(), bias.data(), c.data());
    std::vector<double> want;
    for (int64_t i = 0; i < 5; ++i) {
      const auto one = ref_gemm(p, a.data() + i * 63, b.data() + i * 77, bias.data() + i * 99);
      want.insert(want.end(), one.begin(), one.end());
    }
    CHECK(rel_l2(c.values(), want) <= kTolerance);
    CHECK(c.guards_intact());
  }
}

namespace {

// gemm_prepacked_f32 on a weight packed by gemm_prepack_weights, against the reference
// (product and bias, then the activation, the residual, the clamp), with padded lda, ldc and ldr; the
// gaps between rows of C and the words around C and the packed weight must stay untouched.
void check_prepacked(ThreadPool& pool, int64_t m, int64_t n, int64_t k, bool tb, BiasKind bk,
                     const Epilogue& e, bool with_residual, uint32_t seed,
                     GemmActivation act = GemmActivation::None) {
  GemmParams p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.trans_b = tb;
  p.lda = k + 3;
  p.ldb = (tb ? k : n) + 1;
  p.ldc = n + 2;
  p.alpha = e.alpha;
  p.beta = e.beta;
  p.bias_kind = bk;
  const auto a = random_floats(static_cast<size_t>(m * p.lda), seed);
  const auto b = random_floats(static_cast<size_t>((tb ? n : k) * p.ldb), seed + 1);
  auto bias = random_floats(bias_size(bk, m, n), seed + 2);
  if (e.beta == 0.0f)
    for (float& v : bias) v = NAN;
  std::vector<float> residual;
  if (with_residual) {
    p.ldr = n + 5;
    residual = random_floats(static_cast<size_t>(m * p.ldr), seed + 3);
  }
  Guarded packed(static_cast<size_t>(aotc::rt::gemm_prepacked_floats(n, k)));
  aotc::rt::gemm_prepack_weights(p, b.data(), packed.data());
  REQUIRE(packed.guards_intact());

  const auto want_plain = ref_gemm(p, a.data(), b.data(), bias.data());  // no clamp, no residual
  GemmParams run = p;
  run.clamp_lo = e.lo;
  run.clamp_hi = e.hi;
  run.residual = with_residual ? residual.data() : nullptr;
  run.activation = act;
  Guarded c(static_cast<size_t>(m * p.ldc));
  aotc::rt::gemm_prepacked_f32(pool, run, a.data(), packed.data(), bias.empty() ? nullptr : bias.data(),
                               c.data());

  std::vector<double> want = want_plain;
  std::vector<float> got(static_cast<size_t>(m * n));
  bool gaps_intact = true;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double& w = want[static_cast<size_t>(i * n + j)];
      w = ref_activation(act, w);
      if (with_residual) w += residual[static_cast<size_t>(i * p.ldr + j)];
      w = std::fmin(std::fmax(w, double(e.lo)), double(e.hi));
      got[static_cast<size_t>(i * n + j)] = c.data()[i * p.ldc + j];
    }
    for (int64_t j = n; j < p.ldc && i + 1 < m; ++j)
      gaps_intact = gaps_intact && Guarded::is_sentinel(c.data()[i * p.ldc + j]);
  }
  INFO("m=" << m << " n=" << n << " k=" << k << " tb=" << tb << " bias=" << int(bk) << " alpha=" << e.alpha
            << " beta=" << e.beta << " lo=" << e.lo << " residual=" << with_residual
            << " activation=" << int(act) << " threads=" << pool.size());
  CHECK(rel_l2(got, want) <= kTolerance);
  CHECK(c.guards_intact());
  CHECK(gaps_intact);
}

}  // namespace

TEST_CASE("gemm_prepacked_f32: odd shapes x bias kinds x epilogues x residual") {
  struct Shape {
    int64_t m, n, k;
  };
  // Not multiples of the 6 x 16 tile or of 8 in depth, K = 1, N = 1, M = 1, a ragged panel
  // of 8 or fewer columns, depth over one block (256) and columns over one block (nc),
  // and a tall product that the threads split by rows.
  const Shape shapes[] = {{1, 1, 1},      {1, 1, 37},    {7, 1, 5},      {1, 19, 1},    {3, 7, 13},
                          {17, 33, 5},    {13, 24, 9},   {6, 16, 8},     {33, 17, 64},  {128, 64, 96},
                          {5, 1000, 300}, {1, 100, 513}, {50, 300, 700}, {700, 3, 500}, {197, 40, 1}};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 7;
    for (const Shape& s : shapes)
      for (int tb = 0; tb < 2; ++tb)
        for (BiasKind bk : {BiasKind::None, BiasKind::PerColumn, BiasKind::PerRow, BiasKind::Full})
          for (bool res : {false, true})
            for (const Epilogue& e : kEpilogues)
              check_prepacked(pool, s.m, s.n, s.k, tb, bk, e, res, seed += 4);
  }
}

// On 8 threads or more, shares of few panels cut M into blocks too (gemm_prepacked_f32):
// pieces that cross from one block of rows to the next, ragged blocks and panels.
TEST_CASE("gemm_prepacked_f32: blocks of rows and panels on many threads") {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{200, 100, 64}, {128, 768, 64}, {37, 40, 300}, {1000, 33, 70}, {61, 250, 129}};
  ThreadPool pool(8);
  uint32_t seed = 500;
  int epi = 0;
  for (const Shape& s : shapes)
    for (BiasKind bk : {BiasKind::PerColumn, BiasKind::Full})
      for (bool res : {false, true}) {
        check_prepacked(pool, s.m, s.n, s.k, true, bk, kEpilogues[epi++ % 4], res, seed += 4);
        check_prepacked(pool, s.m, s.n, s.k, false, bk, kEpilogues[epi++ % 4], res, seed += 4,
                        GemmActivation::GeluTanh);
      }
}

// The GELU epilogue runs on each strip of rows after its last depth block: depth over one
// block (513, 700), column blocks (1000), ragged strips and panels, both thread splits.
TEST_CASE("gemm_prepacked_f32: activation before the residual and the clamp") {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 1, 1},     {7, 1, 5},      {3, 7, 13},     {13, 24, 9},   {33, 17, 64},
                          {1, 100, 513}, {5, 1000, 300}, {50, 300, 700}, {700, 3, 500}, {197, 40, 1}};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 900;
    int epi = 0;
    for (const Shape& s : shapes)
      for (GemmActivation act : {GemmActivation::GeluErf, GemmActivation::GeluTanh})
        for (BiasKind bk : {BiasKind::None, BiasKind::PerColumn, BiasKind::PerRow, BiasKind::Full})
          for (bool res : {false, true})
            check_prepacked(pool, s.m, s.n, s.k, true, bk, kEpilogues[epi++ % 4], res, seed += 4, act);
  }
}

TEST_CASE("gemm_prepacked_f32: k == 0 gives beta * bias (through a GELU) + residual, clamped") {
  ThreadPool pool(2);
  GemmParams p;
  p.m = 3;
  p.n = 4;
  p.k = 0;
  p.beta = 2.0f;
  p.bias_kind = BiasKind::PerColumn;
  p.clamp_hi = 5.0f;
  const float bias[4] = {1, 2, 3, 4};
  const float residual[12] = {0, 0, 0, 0, 1, 1, 1, 1, -1, -1, -1, -1};
  p.residual = residual;
  const float dummy[1] = {0};
  Guarded c(12);
  aotc::rt::gemm_prepacked_f32(pool, p, dummy, dummy, bias, c.data());
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      CHECK(c.data()[i * 4 + j] == std::fmin(2.0f * bias[j] + residual[i * 4 + j], 5.0f));
  CHECK(c.guards_intact());
  // With a GELU: clamp(GELU(beta * bias) + residual).
  p.activation = GemmActivation::GeluErf;
  Guarded g(12);
  aotc::rt::gemm_prepacked_f32(pool, p, dummy, dummy, bias, g.data());
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      const double want = std::fmin(ref_activation(p.activation, 2.0 * bias[j]) + residual[i * 4 + j], 5.0);
      CHECK(g.data()[i * 4 + j] == doctest::Approx(want).epsilon(1e-6));
    }
  CHECK(g.guards_intact());
}
