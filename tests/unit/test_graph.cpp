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
