// The IR graph and the passes that rewrite it.
#include <doctest/doctest.h>

#include <cmath>

#include "../../codegen/codegen.h"
#include "../../compiler/ir/graph.h"
#include "../../compiler/passes/passes.h"

using namespace aotc;

TEST_CASE("graph: values, aliases and storage roots") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {2, 3}, "x");
  const int c = g.add_f32_constant({3}, {1, 2, 3});
  const int v = g.add_alias(x, {6});
  const int vv = g.add_alias(v, {3, 2});
  CHECK(g.storage_root(vv) == x);
  CHECK(g.is_constant(c));
  CHECK_FALSE(g.is_constant(vv));
  CHECK(g.constant_of(c).f32()[2] == 3.0f);
  CHECK(ir::numel(g.value(vv).shape) == 6);
  CHECK(ir::shape_str({1, 3, 224}) == "[1, 3, 224]");
  CHECK(ir::parse_dtype("int64") == ir::DType::Int64);
  CHECK_FALSE(ir::parse_dtype("float64").has_value());
}

TEST_CASE("fold_batch_norm folds a channel_affine into the conv before it") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {1, 2, 3, 3}, "x");
  const int w = g.add_f32_constant({2, 2, 1, 1}, {1, 2, 3, 4});
  const int b = g.add_f32_constant({2}, {0.5f, -1});
  const int y = g.add_value(ir::DType::Float32, {1, 2, 3, 3});
  ir::Op& conv = g.add_op("conv2d", {x, w, b}, {y});
  conv.attrs = {{"c_out", int64_t{2}}, {"clamp_lo", -INFINITY}, {"clamp_hi", INFINITY}};
  const int scale = g.add_f32_constant({2}, {2, 3});
  const int shift = g.add_f32_constant({2}, {1, 1});
  const int z = g.add_value(ir::DType::Float32, {1, 2, 3, 3});
  ir::Op& affine = g.add_op("channel_affine", {y, scale, shift}, {z});
  affine.attrs = {{"c", int64_t{2}}, {"clamp_lo", -INFINITY}, {"clamp_hi", INFINITY}};
  g.outputs.push_back({z, "out"});
  passes::fold_batch_norm(g);
  REQUIRE(g.ops.size() == 1);
  CHECK(g.ops[0].outputs[0] == z);
  const float* fw = g.constant_of(g.ops[0].inputs[1]).f32();
  const float* fb = g.constant_of(g.ops[0].inputs[2]).f32();
  CHECK(fw[0] == 2.0f);
  CHECK(fw[3] == 12.0f);
  CHECK(fb[0] == doctest::Approx(2.0));   // 0.5 * 2 + 1
  CHECK(fb[1] == doctest::Approx(-2.0));  // -1 * 3 + 1
}

TEST_CASE("fuse_activation turns relu after a gemm into its epilogue, but not when shared") {
  for (bool shared : {false, true}) {
    ir::Graph g;
    const int x = g.add_input(ir::DType::Float32, {2, 3}, "x");
    const int y = g.add_value(ir::DType::Float32, {2, 3});
    ir::Op& gemm = g.add_op("gemm", {x, x, -1}, {y});
    gemm.attrs = {{"clamp_lo", -INFINITY}, {"clamp_hi", INFINITY}};
    const int z = g.add_value(ir::DType::Float32, {2, 3});
    ir::Op& relu = g.add_op("unary", {y}, {z});
    relu.attrs = {{"op", int64_t{1}}, {"a", 0.0}, {"b", 0.0}};
    g.outputs.push_back({z, "out"});
    if (shared) g.outputs.push_back({y, "pre"});
    passes::fuse_activation(g);
    CHECK(g.ops.size() == (shared ? 2u : 1u));
    if (!shared) CHECK(g.ops[0].f("clamp_lo") == 0.0);
  }
}

TEST_CASE("eliminate_dead_ops drops unread results") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {4}, "x");
  const int a = g.add_value(ir::DType::Float32, {4});
  const int b = g.add_value(ir::DType::Float32, {4});
  g.add_op("unary", {x}, {a});
  g.add_op("unary", {x}, {b});
  g.outputs.push_back({g.add_alias(b, {2, 2}), "out"});
  passes::eliminate_dead_ops(g);
  REQUIRE(g.ops.size() == 1);
  CHECK(g.ops[0].outputs[0] == b);
}

TEST_CASE("model-derived names are escaped in generated C++ string literals") {
  CHECK(codegen::cpp_string_literal("x") == "\"x\"");
  CHECK(codegen::cpp_string_literal("a\"b\\c\n") == "\"a\\042b\\134c\\012\"");
  CHECK(codegen::cpp_string_literal("*/?") == "\"*/\\077\"");
}

// A linear layer's gemm: x [m, k] times the constant weight [n, k] transposed.
namespace {
ir::Op& add_linear_gemm(ir::Graph& g, int x, int w, int64_t m, int64_t n, int64_t k, double alpha) {
  const int y = g.add_value(ir::DType::Float32, {m, n});
  ir::Op& op = g.add_op("gemm", {x, w, -1}, {y});
  op.attrs = {{"m", m},
              {"n", n},
              {"k", k},
              {"trans_a", false},
              {"trans_b", true},
              {"lda", k},
              {"ldb", k},
              {"ldc", n},
              {"alpha", alpha},
              {"beta", 1.0},
              {"bias_kind", 0},
              {"clamp_lo", -INFINITY},
              {"clamp_hi", INFINITY}};
  op.thread_scratch_bytes = 4096;
  g.outputs.push_back({y, "y" + std::to_string(g.outputs.size())});
  return op;
}
}  // namespace

TEST_CASE("prepack_gemm_weights packs constant weights once, and leaves run-time weights alone") {
  ir::Graph g;
  const int64_t m = 2, n = 17, k = 3;
  const int x = g.add_input(ir::DType::Float32, {m, k}, "x");
  std::vector<float> wdata(static_cast<size_t>(n * k));
  for (size_t i = 0; i < wdata.size(); ++i) wdata[i] = static_cast<float>(i + 1);
  const int w = g.add_f32_constant({n, k}, wdata, "w");
  const int wr = g.add_input(ir::DType::Float32, {n, k}, "w_run");
  add_linear_gemm(g, x, w, m, n, k, 2.0);
  add_linear_gemm(g, x, w, m, n, k, 2.0);   // the same weight: one packed copy
  add_linear_gemm(g, x, wr, m, n, k, 1.0);  // a run-time weight: untouched
  add_linear_gemm(g, x, w, 1, n, k, 1.0);   // matrix-vector: Eigen does not pack it either
  passes::prepack_gemm_weights(g);
  for (int i = 0; i < 2; ++i) {
    const ir::Op& op = g.ops[static_cast<size_t>(i)];
    CHECK(op.has("prepacked"));
    CHECK(op.f("alpha") == 1.0);
    CHECK(op.thread_scratch_bytes == 0);
    CHECK(op.inputs[1] != w);
    CHECK(g.is_constant(op.inputs[1]));
  }
  CHECK(g.ops[0].inputs[1] == g.ops[1].inputs[1]);
  CHECK_FALSE(g.ops[2].has("prepacked"));
  CHECK(g.ops[2].inputs[1] == wr);
  CHECK(g.ops[2].thread_scratch_bytes == 4096);
  CHECK_FALSE(g.ops[3].has("prepacked"));
  CHECK(g.ops[3].inputs[1] == w);
  // Layout (one depth block here, k < 256): panel q, depth kk, column j -> alpha *
  // w[16q + j][kk], zero past column n.
  const ir::Constant& packed = g.constant_of(g.ops[0].inputs[1]);
  CHECK(packed.shape == ir::Shape{k, 32});
  const float* pk = packed.f32();
  bool layout_ok = true;
  for (int64_t q = 0; q < 2; ++q)
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < 16; ++j) {
        const int64_t col = q * 16 + j;
        const float want = col < n ? 2.0f * wdata[static_cast<size_t>(col * k + kk)] : 0.0f;
        layout_ok = layout_ok && pk[(q * k + kk) * 16 + j] == want;
      }
  CHECK(layout_ok);
}
