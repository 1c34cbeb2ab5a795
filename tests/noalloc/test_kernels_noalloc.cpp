// test_kernels_noalloc - the GEMM-based kernels (gemm_f32, gemm_prepacked_f32,
// batched_gemm_f32, conv2d_f32) make no heap allocation when the pool has the per-thread scratch that their
// *_thread_scratch_bytes() plan (exactly that much), over shapes that take every path:
// coefficient-wise, matrix-vector (short and too long for the stack), packed, packed
// with alpha != 1, and products beyond the packing caps; 1, 2 and 3 threads. The kernel
// unit tests check the values; this checks the allocations (alloc_hooks.cpp) and that
// nothing is written past the planned scratch.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstdio>
#include <string>
#include <vector>

#include "../unit/kernel_reference.h"
#include "alloc_hooks.h"

namespace {

using aotc::rt::ThreadPool;
using aotc::test::PoolScratch;

int g_failures = 0;
int g_checks = 0;

// Runs fn with the planned scratch installed and allocation counting on around it.
template <class Fn>
void expect_no_allocation(ThreadPool& pool, int64_t scratch_bytes, const std::string& what, Fn&& fn) {
  PoolScratch scratch(pool, scratch_bytes);
  fn();  // once before counting too: nothing may be left for a first call to set up
  aotc::test::start_counting_allocations();
  fn();
  const long allocations = aotc::test::stop_counting_allocations();
  ++g_checks;
  if (allocations != 0) {
    ++g_failures;
    std::printf(
        "FAIL %s, %d threads: %ld allocation(s), the first of %zu bytes (scratch %lld bytes/thread)\n",
        what.c_str(), pool.size(), allocations, aotc::test::first_counted_allocation_size(),
        static_cast<long long>(scratch_bytes));
  }
  if (!scratch.guard_intact()) {
    ++g_failures;
    std::printf("FAIL %s, %d threads: wrote past its planned per-thread scratch\n", what.c_str(),
                pool.size());
  }
}

void gemm_cases(ThreadPool& pool) {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 1, 1},      {3, 7, 5},     {17, 33, 5},      {64, 64, 64},    {150, 130, 70},
                          {5, 1000, 300}, {700, 3, 500}, {1, 1000, 512},   {13, 1, 33},     {512, 512, 512},
                          {1, 20000, 3},  {3, 1, 17000}, {300, 1100, 700}, {1100, 300, 333}};
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    for (int t = 0; t < 4; ++t) {
      for (const float alpha : {1.0f, 0.5f}) {
        aotc::rt::GemmParams p;
        p.m = s.m;
        p.n = s.n;
        p.k = s.k;
        p.trans_a = t & 1;
        p.trans_b = t & 2;
        p.lda = p.trans_a ? s.m : s.k;
        p.ldb = p.trans_b ? s.k : s.n;
        p.ldc = s.n;
        p.alpha = alpha;
        p.bias_kind = aotc::rt::BiasKind::PerColumn;
        const auto a = aotc::test::random_floats(static_cast<size_t>(s.m * s.k), ++seed);
        const auto b = aotc::test::random_floats(static_cast<size_t>(s.k * s.n), ++seed);
        const auto bias = aotc::test::random_floats(static_cast<size_t>(s.n), ++seed);
        std::vector<float> c(static_cast<size_t>(s.m * s.n));
        const std::string what = "gemm " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                                 std::to_string(s.k) + " trans " + std::to_string(t) + " alpha " +
                                 std::to_string(alpha);
        expect_no_allocation(pool, aotc::rt::gemm_thread_scratch_bytes(p), what,
                             [&] { aotc::rt::gemm_f32(pool, p, a.data(), b.data(), bias.data(), c.data()); });
      }
    }
  }
}

// The GEMM on weights packed at compile time needs no scratch at all: planned 0 bytes.
void prepacked_cases(ThreadPool& pool) {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 1, 1}, {3, 7, 5}, {17, 33, 5}, {128, 768, 768}, {700, 3, 500}, {1, 1000, 512}};
  uint32_t seed = 50;
  for (const Shape& s : shapes) {
    for (const aotc::rt::BiasKind bk : {aotc::rt::BiasKind::PerColumn, aotc::rt::BiasKind::Full}) {
      aotc::rt::GemmParams p;
      p.m = s.m;
      p.n = s.n;
      p.k = s.k;
      p.trans_b = true;
      p.bias_kind = bk;
      const auto a = aotc::test::random_floats(static_cast<size_t>(s.m * s.k), ++seed);
      const auto b = aotc::test::random_floats(static_cast<size_t>(s.k * s.n), ++seed);
      const auto bias = aotc::test::random_floats(static_cast<size_t>(s.m * s.n), ++seed);
      const auto residual = aotc::test::random_floats(static_cast<size_t>(s.m * s.n), ++seed);
      p.residual = residual.data();
      std::vector<float> packed(static_cast<size_t>(aotc::rt::gemm_prepacked_floats(s.n, s.k)));
      aotc::rt::gemm_prepack_weights(p, b.data(), packed.data());
      std::vector<float> c(static_cast<size_t>(s.m * s.n));
      expect_no_allocation(
          pool, 0,
          "gemm_prepacked " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
              " bias " + std::to_string(static_cast<int>(bk)),
          [&] { aotc::rt::gemm_prepacked_f32(pool, p, a.data(), packed.data(), bias.data(), c.data()); });
    }
  }
}

void batched_cases(ThreadPool& pool) {
  struct Case {
    int64_t batch, m, n, k;
  };
  const Case cases[] = {{12, 64, 64, 64}, {2, 200, 150, 100}, {7, 1, 100, 50}, {3, 9, 5, 4}};
  uint32_t seed = 100;
  for (const Case& cs : cases) {
    aotc::rt::BatchedGemmParams bp;
    bp.gemm.m = cs.m;
    bp.gemm.n = cs.n;
    bp.gemm.k = cs.k;
    bp.gemm.lda = cs.k;
    bp.gemm.ldb = cs.n;
    bp.gemm.ldc = cs.n;
    bp.batch = cs.batch;
    bp.stride_a = cs.m * cs.k;
    bp.stride_b = cs.k * cs.n;
    bp.stride_c = cs.m * cs.n;
    const auto a = aotc::test::random_floats(static_cast<size_t>(cs.batch * cs.m * cs.k), ++seed);
    const auto b = aotc::test::random_floats(static_cast<size_t>(cs.batch * cs.k * cs.n), ++seed);
    std::vector<float> c(static_cast<size_t>(cs.batch * cs.m * cs.n));
    expect_no_allocation(
        pool, aotc::rt::batched_gemm_thread_scratch_bytes(bp),
        "batched gemm " + std::to_string(cs.batch) + "x" + std::to_string(cs.m) + "x" + std::to_string(cs.n) +
            "x" + std::to_string(cs.k),
        [&] { aotc::rt::batched_gemm_f32(pool, bp, a.data(), b.data(), nullptr, c.data()); });
  }
}

void conv_cases(ThreadPool& pool) {
  struct Case {
    const char* name;
    int64_t n, c_in, h, c_out, k, stride, pad, groups;
  };
  const Case cases[] = {
      {"resnet 3x3 64", 1, 64, 56, 64, 3, 1, 1, 1},   {"resnet stem 7x7", 1, 3, 224, 64, 7, 2, 3, 1},
      {"resnet 3x3 512", 1, 512, 7, 512, 3, 1, 1, 1}, {"1x1 stride 2", 1, 64, 56, 128, 1, 2, 0, 1},
      {"pointwise", 1, 256, 14, 256, 1, 1, 0, 1},     {"pointwise many images", 8, 32, 17, 64, 1, 1, 0, 1},
      {"groups 2", 2, 8, 19, 16, 3, 1, 1, 2},         {"depthwise", 1, 32, 28, 32, 3, 1, 1, 32},
  };
  uint32_t seed = 200;
  for (const Case& cs : cases) {
    aotc::rt::Conv2dParams p;
    p.n = cs.n;
    p.c_in = cs.c_in;
    p.h_in = p.w_in = cs.h;
    p.c_out = cs.c_out;
    p.kernel_h = p.kernel_w = cs.k;
    p.stride_h = p.stride_w = cs.stride;
    p.pad_h = p.pad_w = cs.pad;
    p.groups = cs.groups;
    p.h_out = p.w_out = (cs.h + 2 * cs.pad - cs.k) / cs.stride + 1;
    p.has_bias = true;
    const auto x = aotc::test::random_floats(static_cast<size_t>(p.n * p.c_in * cs.h * cs.h), ++seed);
    const auto w =
        aotc::test::random_floats(static_cast<size_t>(p.c_out * (p.c_in / p.groups) * cs.k * cs.k), ++seed);
    const auto bias = aotc::test::random_floats(static_cast<size_t>(p.c_out), ++seed);
    std::vector<float> y(static_cast<size_t>(p.n * p.c_out * p.h_out * p.w_out));
    std::vector<float> im2col(static_cast<size_t>(aotc::rt::conv2d_scratch_bytes(p)) / sizeof(float) + 1);
    expect_no_allocation(
        pool, aotc::rt::conv2d_thread_scratch_bytes(p), std::string("conv2d ") + cs.name, [&] {
          aotc::rt::conv2d_f32(pool, p, x.data(), w.data(), bias.data(), nullptr, y.data(), im2col.data());
        });
  }
}

// vision: conv3d_f32 (vol2col and pointwise) and conv_transpose_f32 (GEMM with a
// transposed left operand + col2im), 2-d and 3-d shapes.
void conv_nd_cases(ThreadPool& pool) {
  struct Case {
    const char* name;
    bool transposed;
    int64_t c_in, c_out, groups, in[3], k[3], stride;
  };
  const Case cases[] = {
      {"conv3d 3x3x3", false, 32, 32, 1, {8, 28, 28}, {3, 3, 3}, 1},
      {"conv3d pointwise", false, 64, 128, 1, {4, 14, 14}, {1, 1, 1}, 1},
      {"conv3d (1,3,3) groups 2", false, 16, 32, 2, {4, 30, 30}, {1, 3, 3}, 2},
      {"conv_transpose 2x2 s2", true, 128, 64, 1, {1, 32, 32}, {1, 2, 2}, 2},
      {"conv_transpose 3x3x3 s2", true, 32, 16, 1, {4, 12, 12}, {3, 3, 3}, 2},
      {"conv_transpose groups 4", true, 64, 64, 4, {1, 20, 20}, {1, 4, 4}, 2},
  };
  uint32_t seed = 300;
  for (const Case& cs : cases) {
    aotc::rt::ConvNdParams p;
    p.c_in = cs.c_in;
    p.c_out = cs.c_out;
    p.groups = cs.groups;
    p.has_bias = true;
    for (int d = 0; d < 3; ++d) {
      p.in[d] = cs.in[d];
      p.kernel[d] = cs.k[d];
      p.stride[d] = cs.k[d] > 1 ? cs.stride : 1;
      p.out[d] =
          cs.transposed ? (cs.in[d] - 1) * p.stride[d] + cs.k[d] : (cs.in[d] - cs.k[d]) / p.stride[d] + 1;
    }
    const int64_t w_count = (cs.transposed ? p.c_in * (p.c_out / p.groups) : p.c_out * (p.c_in / p.groups)) *
                            aotc::rt::conv_nd_volume(p.kernel);
    const auto x =
        aotc::test::random_floats(static_cast<size_t>(p.c_in * aotc::rt::conv_nd_volume(p.in)), ++seed);
    const auto w = aotc::test::random_floats(static_cast<size_t>(w_count), ++seed);
    const auto bias = aotc::test::random_floats(static_cast<size_t>(p.c_out), ++seed);
    std::vector<float> y(static_cast<size_t>(p.c_out * aotc::rt::conv_nd_volume(p.out)));
    const int64_t scratch_bytes =
        cs.transposed ? aotc::rt::conv_transpose_scratch_bytes(p) : aotc::rt::conv3d_scratch_bytes(p);
    std::vector<float> scratch(static_cast<size_t>(scratch_bytes) / sizeof(float) + 1);
    if (cs.transposed)
      expect_no_allocation(pool, aotc::rt::conv_transpose_thread_scratch_bytes(p), cs.name, [&] {
        aotc::rt::conv_transpose_f32(pool, p, x.data(), w.data(), bias.data(), y.data(), scratch.data());
      });
    else
      expect_no_allocation(pool, aotc::rt::conv3d_thread_scratch_bytes(p), cs.name, [&] {
        aotc::rt::conv3d_f32(pool, p, x.data(), w.data(), bias.data(), y.data(), scratch.data());
      });
  }
}

// Sequence area: fused attention (scores in the thread scratch) and the recurrent loop.
void sequence_cases(ThreadPool& pool) {
  struct Case {
    const char* name;
    int64_t batch, heads, len, head_dim;
    bool causal;
  };
  const Case cases[] = {{"attention tiny", 1, 1, 3, 4, false},
                        {"attention BERT-base head", 1, 12, 128, 64, false},
                        {"attention ViT-B/16 at 224", 1, 12, 197, 64, true}};
  uint32_t seed = 300;
  for (const Case& cs : cases) {
    aotc::rt::AttentionParams p;
    p.batch = cs.batch;
    p.heads = cs.heads;
    p.q_len = p.kv_len = cs.len;
    p.head_dim = p.v_head_dim = cs.head_dim;
    p.scale = 0.125f;
    p.causal = cs.causal;
    const int64_t row = 3 * cs.heads * cs.head_dim;  // packed QKV [B, T, 3, H, E]
    const int64_t strides[3] = {cs.len * row, cs.head_dim, row};
    std::copy(strides, strides + 3, p.q_strides);
    std::copy(strides, strides + 3, p.k_strides);
    std::copy(strides, strides + 3, p.v_strides);
    const int64_t os[3] = {cs.len * cs.heads * cs.head_dim, cs.head_dim, cs.heads * cs.head_dim};
    std::copy(os, os + 3, p.out_strides);
    p.mask_kind = aotc::rt::AttentionMask::KeepIfTrue;
    p.mask_strides[0] = cs.len;  // key padding [B, S]
    p.mask_strides[3] = 1;
    p.weights = aotc::rt::AttentionWeights::HeadMean;
    const auto qkv = aotc::test::random_floats(static_cast<size_t>(cs.batch * cs.len * row), ++seed);
    std::vector<unsigned char> mask(static_cast<size_t>(cs.batch * cs.len), 1);
    std::vector<float> out(static_cast<size_t>(cs.batch * cs.len * cs.heads * cs.head_dim));
    std::vector<float> probs(static_cast<size_t>(cs.batch * cs.len * cs.len));
    const float* q = qkv.data();
    expect_no_allocation(pool, aotc::rt::attention_thread_scratch_bytes(p), cs.name, [&] {
      aotc::rt::attention_f32(pool, p, q, q + cs.heads * cs.head_dim, q + 2 * cs.heads * cs.head_dim,
                              mask.data(), out.data(), probs.data());
    });
  }
  for (auto cell : {aotc::rt::RecurrentCell::Lstm, aotc::rt::RecurrentCell::Gru}) {
    aotc::rt::RecurrentParams p;
    p.cell = cell;
    p.steps = 5;
    p.batch = 8;
    p.hidden = 256;
    const int64_t g = aotc::rt::recurrent_gate_count(cell) * p.hidden;
    p.gx_step_stride = p.batch * g;
    p.gx_batch_stride = g;
    p.y_step_stride = p.batch * p.hidden;
    p.y_batch_stride = p.hidden;
    const auto gx = aotc::test::random_floats(static_cast<size_t>(p.steps * p.batch * g), ++seed);
    const auto w = aotc::test::random_floats(static_cast<size_t>(g * p.hidden), ++seed);
    const auto b = aotc::test::random_floats(static_cast<size_t>(g), ++seed);
    std::vector<float> y(static_cast<size_t>(p.steps * p.batch * p.hidden)),
        h(static_cast<size_t>(p.batch * p.hidden)), c(h.size());
    std::vector<float> scratch(static_cast<size_t>(aotc::rt::recurrent_scratch_bytes(p)) / sizeof(float));
    expect_no_allocation(pool, aotc::rt::recurrent_thread_scratch_bytes(p),
                         cell == aotc::rt::RecurrentCell::Lstm ? "lstm recurrence" : "gru recurrence", [&] {
                           aotc::rt::recurrent_f32(pool, p, gx.data(), w.data(), b.data(), nullptr, nullptr,
                                                   y.data(), h.data(), c.data(), scratch.data());
                         });
  }
}

}  // namespace

int main() {
  // The hooks must be in effect: an allocation made here has to be seen.
  aotc::test::start_counting_allocations();
  auto* probe = new std::vector<int>(100);
  const long seen = aotc::test::stop_counting_allocations();
  delete probe;
  if (seen == 0) {
    std::printf("FAIL: the allocation hooks are not in effect\n");
    return 1;
  }
  for (const int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    gemm_cases(pool);
    prepacked_cases(pool);
    batched_cases(pool);
    conv_cases(pool);
    conv_nd_cases(pool);  // vision
    sequence_cases(pool);
  }
  std::printf("%d checks, %d failures\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}
