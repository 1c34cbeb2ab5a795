// The IR graph and the passes that rewrite it.
#include <doctest/doctest.h>

#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "../../codegen/codegen.h"
#include "../../compiler/ir/graph.h"
#include "../../compiler/ops/gemm.h"
#include "../../compiler/ops/spatial.h"
#include "../../compiler/passes/passes.h"
#include "../ir_builders.h"
#include "kernel_reference.h"

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
  ir::Op& conv = g.add_op(ir::kind::conv2d, {x, w, b}, {y});
  conv.attrs = {{"c_out", int64_t{2}}, {ir::attr::clamp_lo, -INFINITY}, {ir::attr::clamp_hi, INFINITY}};
  const int scale = g.add_f32_constant({2}, {2, 3});
  const int shift = g.add_f32_constant({2}, {1, 1});
  const int z = g.add_value(ir::DType::Float32, {1, 2, 3, 3});
  ir::Op& affine = g.add_op(ir::kind::channel_affine, {y, scale, shift}, {z});
  affine.attrs = {{"c", int64_t{2}}, {ir::attr::clamp_lo, -INFINITY}, {ir::attr::clamp_hi, INFINITY}};
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

TEST_CASE("fold_batch_norm leaves a channel_affine that reads a slice of the conv's output") {
  // bn(conv(x)[1:]): the affine reads the second image only; folding would make the conv
  // write both images into the affine's one-image result.
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {2, 2, 3, 3}, "x");
  const int w = g.add_f32_constant({2, 2, 1, 1}, {1, 2, 3, 4});
  const int y = g.add_value(ir::DType::Float32, {2, 2, 3, 3});
  ir::Op& conv = g.add_op(ir::kind::conv2d, {x, w, -1}, {y});
  conv.attrs = {{"c_out", int64_t{2}}, {ir::attr::clamp_lo, -INFINITY}, {ir::attr::clamp_hi, INFINITY}};
  const int second = g.add_alias(y, {1, 2, 3, 3}, 18 * 4);
  const int scale = g.add_f32_constant({2}, {2, 3});
  const int shift = g.add_f32_constant({2}, {1, 1});
  const int z = g.add_value(ir::DType::Float32, {1, 2, 3, 3});
  ir::Op& affine = g.add_op(ir::kind::channel_affine, {second, scale, shift}, {z});
  affine.attrs = {{"c", int64_t{2}}, {ir::attr::clamp_lo, -INFINITY}, {ir::attr::clamp_hi, INFINITY}};
  g.outputs.push_back({z, "out"});
  passes::fold_batch_norm(g);
  REQUIRE(g.ops.size() == 2);
  CHECK(g.ops[0].outputs[0] == y);
}

TEST_CASE("fuse_activation turns relu after a gemm into its epilogue, but not when shared") {
  for (bool shared : {false, true}) {
    ir::Graph g;
    const int x = g.add_input(ir::DType::Float32, {2, 3}, "x");
    const int y = g.add_value(ir::DType::Float32, {2, 3});
    ir::Op& gemm = g.add_op(ir::kind::gemm, {x, x, -1}, {y});
    gemm.attrs = {{ir::attr::clamp_lo, -INFINITY}, {ir::attr::clamp_hi, INFINITY}};
    const int z = g.add_value(ir::DType::Float32, {2, 3});
    ir::Op& relu = g.add_op(ir::kind::unary, {y}, {z});
    relu.attrs = {{"op", int64_t{1}}, {"a", 0.0}, {"b", 0.0}};
    g.outputs.push_back({z, "out"});
    if (shared) g.outputs.push_back({y, "pre"});
    passes::fuse_activation(g);
    CHECK(g.ops.size() == (shared ? 2u : 1u));
    if (!shared) CHECK(g.ops[0].f(ir::attr::clamp_lo) == 0.0);
  }
}

TEST_CASE("fuse_quantize_layout: quantize then an NCHW -> NHWC copy becomes one quantize") {
  // cases: fused; the quantized NCHW bytes read elsewhere too; a copy of another order
  for (int variant : {0, 1, 2}) {
    ir::Graph g;
    const int64_t n = 2, c = 3, h = 5, w = 7;
    const int x = g.add_input(ir::DType::Float32, {n, c, h, w}, "x");
    const int q = g.add_value(ir::DType::UInt8, {n, c, h, w});
    ir::Op& quantize = g.add_op(ir::kind::quantize, {x}, {q});
    quantize.attrs = {{"count", n * c * h * w}, {"inv_scale", 10.0}, {"zero", int64_t{3}}};
    const int nhwc = g.add_value(ir::DType::UInt8, {n, h, w, c});
    ir::Op& copy = g.add_op(ir::kind::copy, {q}, {nhwc});
    const std::vector<int64_t> src = variant == 2 ? std::vector<int64_t>{c * h * w, 1, w, h * w}
                                                  : std::vector<int64_t>{c * h * w, w, 1, h * w};
    copy.attrs = {{"dims", std::vector<int64_t>{n, h, w, c}},
                  {"src_strides", src},
                  {"dst_strides", std::vector<int64_t>{h * w * c, w * c, c, 1}},
                  {"elem_size", int64_t{1}},
                  {"src_offset", int64_t{0}}};
    g.outputs.push_back({nhwc, "out"});
    if (variant == 1) g.outputs.push_back({q, "nchw"});
    passes::fuse_quantize_layout(g);
    if (variant != 0) {
      CHECK(g.ops.size() == 2u);
      continue;
    }
    REQUIRE(g.ops.size() == 1u);
    CHECK(g.ops[0].kind == ir::kind::quantize);
    CHECK(g.ops[0].outputs[0] == nhwc);
    CHECK(g.ops[0].ints("nhwc") == std::vector<int64_t>{n, c, h * w});
  }
}

TEST_CASE("fuse_conv_residual: conv -> add(skip) -> relu becomes one conv with a residual") {
  // cases: fused; the target's path takes no residual; the conv's result read elsewhere too
  for (int variant : {0, 1, 2}) {
    ir::Graph g;
    const int x = g.add_input(ir::DType::Float32, {1, 2, 3, 3}, "x");
    const int skip = g.add_input(ir::DType::Float32, {1, 2, 3, 3}, "skip");
    const int w = g.add_f32_constant({2, 2, 1, 1}, {1, 2, 3, 4});
    const int y = g.add_value(ir::DType::Float32, {1, 2, 3, 3});
    ir::Op& conv = g.add_op(ir::kind::conv2d, {x, w, -1}, {y});
    conv.attrs = {{"c_out", int64_t{2}}, {ir::attr::clamp_lo, -INFINITY}, {ir::attr::clamp_hi, INFINITY}};
    const int sum = g.add_value(ir::DType::Float32, {1, 2, 3, 3});
    ir::Op& add = g.add_op(ir::kind::binary, {y, skip}, {sum});
    add.attrs = {{"op", static_cast<int64_t>(rt::BinaryOp::Add)}, {"alpha", 1.0}};
    const int z = g.add_value(ir::DType::Float32, {1, 2, 3, 3});
    ir::Op& relu = g.add_op(ir::kind::unary, {sum}, {z});
    relu.attrs = {{"op", int64_t{1}}, {"a", 0.0}, {"b", 0.0}};
    g.outputs.push_back({z, "out"});
    if (variant == 2) g.outputs.push_back({y, "pre"});
    passes::fuse_conv_residual(g, [&](const ir::Op&) { return variant != 1; });
    passes::fuse_activation(g);
    if (variant != 0) {
      CHECK(g.ops.size() == 3u);
      continue;
    }
    REQUIRE(g.ops.size() == 1u);
    const ir::Op& fused = g.ops[0];
    CHECK(fused.kind == ir::kind::conv2d);
    REQUIRE(fused.inputs.size() == 4u);
    CHECK(fused.inputs[3] == skip);
    CHECK(fused.outputs[0] == z);
    CHECK(fused.f(ir::attr::clamp_lo) == 0.0);
  }
}

TEST_CASE("fuse_gemm_gelu and fuse_conv_residual on a transformer MLP: linear -> GELU -> linear -> add") {
  // cases: both fused; the GELU's input read elsewhere too; the first GEMM already clamped
  for (int variant : {0, 1, 2}) {
    ir::Graph g;
    const int x = g.add_input(ir::DType::Float32, {4, 8}, "x");
    const int w = g.add_f32_constant({8, 8}, std::vector<float>(64, 0.5f));
    const std::map<std::string, ir::Attr> attrs = {{"n", int64_t{8}},
                                                   {"ldc", int64_t{8}},
                                                   {ir::attr::clamp_lo, variant == 2 ? 0.0 : -INFINITY},
                                                   {ir::attr::clamp_hi, INFINITY}};
    const int y1 = g.add_value(ir::DType::Float32, {4, 8});
    g.add_op(ir::kind::gemm, {x, w, -1}, {y1}).attrs = attrs;
    const int h = g.add_value(ir::DType::Float32, {4, 8});
    g.add_op(ir::kind::unary, {y1}, {h}).attrs = {
        {"op", static_cast<int64_t>(rt::UnaryOp::GeluErf)}, {"a", 0.0}, {"b", 0.0}};
    const int y2 = g.add_value(ir::DType::Float32, {4, 8});
    ir::Op& second = g.add_op(ir::kind::gemm, {h, w, -1}, {y2});
    second.attrs = attrs;
    second.attrs[ir::attr::clamp_lo] = -INFINITY;
    const int out = g.add_value(ir::DType::Float32, {4, 8});
    g.add_op(ir::kind::binary, {y2, x}, {out}).attrs = {{"op", static_cast<int64_t>(rt::BinaryOp::Add)},
                                                        {"alpha", 1.0}};
    g.outputs.push_back({out, "out"});
    if (variant == 1) g.outputs.push_back({y1, "pre"});
    passes::fuse_gemm_gelu(g, "AOTC_TEST_SWITCH_NOT_SET");
    passes::fuse_conv_residual(g, [](const ir::Op& op) { return op.kind == ir::kind::gemm; });
    // The residual add goes into the second GEMM in every case.
    REQUIRE(g.ops.size() == (variant == 0 ? 2u : 3u));
    const ir::Op& last = g.ops.back();
    CHECK(last.kind == ir::kind::gemm);
    REQUIRE(last.inputs.size() == 4u);
    CHECK(last.inputs[3] == x);
    CHECK(last.outputs[0] == out);
    if (variant == 0) {
      CHECK(g.ops[0].i(ir::attr::activation) == static_cast<int64_t>(rt::GemmActivation::GeluErf));
      CHECK(g.ops[0].outputs[0] == h);
      CHECK(last.inputs[0] == h);
    } else {
      CHECK_FALSE(g.ops[0].has(ir::attr::activation));
      CHECK(g.ops[1].kind == ir::kind::unary);
    }
  }
}

TEST_CASE("fold_gemm_channel_scale: a linear layer's result times a constant per column folds into it") {
  // y = x W^T + b (x 3x4, W 3x4 as stored, trans_b), then out = y * s. Variants: s per column
  // [3]; one value []; y also returned; s a run-time input; the GEMM clamped; s with an
  // infinity; s per row [3, 1] (m == n == 3); a relu fused into the mul.
  enum class Variant { Columns, Scalar, YReturned, ScaleInput, Clamped, Infinite, PerRow, MulClamped };
  for (const Variant variant : {Variant::Columns, Variant::Scalar, Variant::YReturned, Variant::ScaleInput,
                                Variant::Clamped, Variant::Infinite, Variant::PerRow, Variant::MulClamped}) {
    CAPTURE(static_cast<int>(variant));
    ir::Graph g;
    const int x = g.add_input(ir::DType::Float32, {3, 4}, "x");
    std::vector<float> wv(12);
    for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(i) - 5.0f;
    const int w = g.add_f32_constant({3, 4}, wv);
    const int b = g.add_f32_constant({3}, {0.5f, -1.0f, 2.0f});
    const int y = g.add_value(ir::DType::Float32, {3, 3});
    ops::GemmShape shape;
    shape.m = 3;
    shape.n = 3;
    shape.k = 4;
    shape.trans_b = true;
    shape.bias_kind = rt::BiasKind::PerColumn;
    ir::Op& gemm = g.add_op(ir::kind::gemm, {x, w, b}, {y});
    gemm.attrs = ops::gemm_attrs(shape);
    if (variant == Variant::Clamped) gemm.attrs[ir::attr::clamp_lo] = 0.0;
    int s = -1;
    if (variant == Variant::ScaleInput)
      s = g.add_input(ir::DType::Float32, {3}, "s");
    else if (variant == Variant::Scalar)
      s = g.add_f32_constant({}, {3.0f});
    else if (variant == Variant::PerRow)
      s = g.add_f32_constant({3, 1}, {2.0f, -0.5f, 4.0f});
    else
      s = g.add_f32_constant({3}, {2.0f, variant == Variant::Infinite ? INFINITY : -0.5f, 4.0f});
    const int out = g.add_value(ir::DType::Float32, {3, 3});
    g.add_op(ir::kind::binary, {y, s}, {out}).attrs = {{"op", static_cast<int64_t>(rt::BinaryOp::Mul)},
                                                       {"alpha", 1.0}};
    if (variant == Variant::MulClamped) g.ops.back().attrs[ir::attr::clamp_lo] = 0.0;
    g.outputs.push_back({out, "out"});
    if (variant == Variant::YReturned) g.outputs.push_back({y, "y"});
    passes::fold_gemm_channel_scale(g);
    const bool folds = variant == Variant::Columns || variant == Variant::Scalar;
    REQUIRE(g.ops.size() == (folds ? 1u : 2u));
    if (!folds) {
      CHECK(g.ops[0].inputs[1] == w);
      continue;
    }
    const ir::Op& folded = g.ops[0];
    CHECK(folded.outputs[0] == out);
    const std::vector<float> scale =
        variant == Variant::Scalar ? std::vector<float>{3, 3, 3} : std::vector<float>{2.0f, -0.5f, 4.0f};
    const ir::Constant& w2 = g.constant_of(folded.inputs[1]);
    const ir::Constant& b2 = g.constant_of(folded.inputs[2]);
    REQUIRE(w2.shape == ir::Shape{3, 4});
    for (size_t j = 0; j < 3; ++j) {
      for (size_t q = 0; q < 4; ++q) CHECK(w2.f32()[j * 4 + q] == wv[j * 4 + q] * scale[j]);
      CHECK(b2.f32()[j] == std::vector<float>{0.5f, -1.0f, 2.0f}[j] * scale[j]);
    }
  }
}

TEST_CASE("eliminate_identity_assembles: a pad by zero becomes an alias of its input") {
  // x [2, 3] -> y = assemble (one piece: all of x in order, after a fill) -> out = y + 1.
  // Variants: the identity; y a graph output; x read with a step (a copy without the fill);
  // the covering piece followed by a second one (both stay, the fill too).
  enum class Variant { Identity, YReturned, Strided, SecondPiece };
  for (const Variant variant :
       {Variant::Identity, Variant::YReturned, Variant::Strided, Variant::SecondPiece}) {
    CAPTURE(static_cast<int>(variant));
    ir::Graph g;
    const int x = g.add_input(ir::DType::Float32, {2, variant == Variant::Strided ? 6 : 3}, "x");
    const int y = g.add_value(ir::DType::Float32, {2, 3});
    ir::Op& a = g.add_op(ir::kind::assemble, {x}, {y});
    const int64_t step = variant == Variant::Strided ? 2 : 1;
    std::vector<int64_t> inputs = {0}, ranks = {2}, src_offsets = {1}, dst_offsets = {0}, dims = {2, 3},
                         src_strides = {3 * step, step}, dst_strides = {3, 1};
    if (variant == Variant::SecondPiece) {
      inputs.push_back(0), ranks.push_back(1), src_offsets.push_back(0), dst_offsets.push_back(0);
      dims.push_back(2), src_strides.push_back(1), dst_strides.push_back(1);
    }
    if (variant != Variant::Strided) src_offsets[0] = 0;
    a.attrs = {{"piece_input", inputs},
               {"piece_rank", ranks},
               {"piece_src_offset", src_offsets},
               {"piece_dst_offset", dst_offsets},
               {"piece_dims", dims},
               {"piece_src_strides", src_strides},
               {"piece_dst_strides", dst_strides},
               {"fill", std::vector<int64_t>{0, 0, 0, 0}}};
    const int one = g.add_f32_constant({}, {1.0f});
    const int out = g.add_value(ir::DType::Float32, {2, 3});
    g.add_op(ir::kind::binary, {y, one}, {out}).attrs = {{"op", static_cast<int64_t>(rt::BinaryOp::Add)},
                                                         {"alpha", 1.0}};
    g.outputs.push_back({out, "out"});
    if (variant == Variant::YReturned) g.outputs.push_back({y, "y"});
    passes::eliminate_identity_assembles(g);
    if (variant == Variant::Identity) {
      REQUIRE(g.ops.size() == 1u);
      CHECK(g.value(y).storage == ir::Storage::Alias);
      CHECK(g.storage_root(y) == x);
      CHECK(g.root_byte_offset(y) == 0);
      continue;
    }
    REQUIRE(g.ops.size() == 2u);
    CHECK(g.value(y).storage == ir::Storage::Arena);
    CHECK(g.ops[0].has("fill") == (variant == Variant::SecondPiece));
  }
}

TEST_CASE("fuse_expand_depthwise: a 1x1 expansion read only by a depthwise convolution joins it") {
  // cases: fused; the expansion's result also a graph output; its weight a run-time input
  for (int variant : {0, 1, 2}) {
    ir::Graph g;
    const int x = g.add_input(ir::DType::Float32, {1, 3, 5, 5}, "x");
    const int w1 = variant == 2 ? g.add_input(ir::DType::Float32, {8, 3, 1, 1}, "w1")
                                : g.add_f32_constant({8, 3, 1, 1}, std::vector<float>(24, 0.5f));
    const int b1 = g.add_f32_constant({8}, std::vector<float>(8, 0.1f));
    const int w2 = g.add_f32_constant({8, 1, 3, 3}, std::vector<float>(72, 0.25f));
    const int mid = g.add_value(ir::DType::Float32, {1, 8, 5, 5});
    const int y = g.add_value(ir::DType::Float32, {1, 8, 5, 5});
    ir::Op& expand = test::add_conv(g, x, w1, b1, mid, 3, 8, 5, 1, 1);
    expand.attrs[ir::attr::clamp_lo] = 0.0;  // relu6
    expand.attrs[ir::attr::clamp_hi] = 6.0;
    test::add_conv(g, mid, w2, -1, y, 8, 8, 5, 3, 8);
    g.outputs.push_back({y, "out"});
    if (variant == 1) g.outputs.push_back({mid, "mid"});
    passes::fuse_expand_depthwise(g, /*avx512_target=*/false);
    if (variant != 0) {
      CHECK(g.ops.size() == 2u);
      continue;
    }
    REQUIRE(g.ops.size() == 1u);
    const ir::Op& fused = g.ops[0];
    CHECK(fused.kind == ir::kind::conv2d_expand_depthwise);
    REQUIRE(fused.inputs.size() == 5u);
    CHECK(fused.inputs[0] == x);
    CHECK(fused.inputs[2] == b1);
    CHECK(fused.inputs[3] == w2);
    CHECK(fused.inputs[4] == -1);
    CHECK(fused.outputs[0] == y);
    CHECK(fused.i(ir::attr::expand_c_in) == 3);
    CHECK(fused.f(ir::attr::expand_clamp_hi) == 6.0);
    CHECK(fused.thread_scratch_bytes > 0);
    // The packed weight: W1 transposed into 16-channel panels, zero past channel 8.
    REQUIRE(g.is_constant(fused.inputs[1]));
    const ir::Constant& packed = g.constant_of(fused.inputs[1]);
    REQUIRE(ir::numel(packed.shape) == 3 * 16);
    CHECK(packed.f32()[0] == 0.5f);
    CHECK(packed.f32()[8] == 0.0f);
  }
}

TEST_CASE("fuse_expand_depthwise: on AVX-512, pairs on narrow planes stay apart") {
  // A 5x5 and a 17x17 plane (17 output columns: too wide for the row-per-vector kernel).
  for (int64_t hw : {5, 17})
    for (bool avx512 : {false, true}) {
      ir::Graph g;
      const int x = g.add_input(ir::DType::Float32, {1, 3, hw, hw}, "x");
      const int w1 = g.add_f32_constant({8, 3, 1, 1}, std::vector<float>(24, 0.5f));
      const int w2 = g.add_f32_constant({8, 1, 3, 3}, std::vector<float>(72, 0.25f));
      const int mid = g.add_value(ir::DType::Float32, {1, 8, hw, hw});
      const int y = g.add_value(ir::DType::Float32, {1, 8, hw, hw});
      test::add_conv(g, x, w1, -1, mid, 3, 8, hw, 1, 1);
      test::add_conv(g, mid, w2, -1, y, 8, 8, hw, 3, 8);
      g.outputs.push_back({y, "out"});
      passes::fuse_expand_depthwise(g, avx512);
      CAPTURE(hw);
      CAPTURE(avx512);
      CHECK(g.ops.size() == (avx512 && hw == 5 ? 2u : 1u));
    }
}

TEST_CASE("eliminate_dead_ops drops unread results") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {4}, "x");
  const int a = g.add_value(ir::DType::Float32, {4});
  const int b = g.add_value(ir::DType::Float32, {4});
  g.add_op(ir::kind::unary, {x}, {a});
  g.add_op(ir::kind::unary, {x}, {b});
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
  ir::Op& op = g.add_op(ir::kind::gemm, {x, w, -1}, {y});
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
              {ir::attr::clamp_lo, -INFINITY},
              {ir::attr::clamp_hi, INFINITY}};
  op.thread_scratch_bytes = 4096;
  g.outputs.push_back({y, "y" + std::to_string(g.outputs.size())});
  return op;
}
}  // namespace

TEST_CASE("single_pixel_conv_to_gemm: a 1x1 convolution of a 1x1 plane becomes its GEMM") {
  const int64_t n = 3, c_in = 37, c_out = 21;
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {n, c_in, 1, 1}, "x");
  const std::vector<float> wdata = test::random_floats(static_cast<size_t>(c_out * c_in), 1);
  const std::vector<float> bdata = test::random_floats(static_cast<size_t>(c_out), 2);
  const int w = g.add_f32_constant({c_out, c_in, 1, 1}, wdata, "w");
  const int b = g.add_f32_constant({c_out}, bdata, "b");
  const int y = g.add_value(ir::DType::Float32, {n, c_out, 1, 1});
  ir::Op& conv = test::add_conv(g, x, w, b, y, c_in, c_out, 1, 1, 1, {"se.py", 7, "fc1"});
  conv.attrs["n"] = n;
  conv.attrs[ir::attr::clamp_lo] = -0.25;  // a clamp fused before: kept
  conv.attrs[ir::attr::clamp_hi] = 0.5;
  const rt::Conv2dParams cp = ops::conv2d_params_of(conv);
  g.outputs.push_back({y, "y"});
  passes::single_pixel_conv_to_gemm(g);
  REQUIRE(g.ops.size() == 1u);
  const ir::Op& op = g.ops[0];
  REQUIRE(op.kind == ir::kind::gemm);
  CHECK(op.inputs == std::vector<int>{x, w, b});
  CHECK(op.outputs == std::vector<int>{y});
  CHECK(op.loc.line == 7);
  const rt::GemmParams gp = ops::gemm_params_of(op);
  CHECK(gp.m == n);
  CHECK(gp.n == c_out);
  CHECK(gp.k == c_in);
  CHECK(gp.trans_b);
  CHECK(gp.bias_kind == rt::BiasKind::PerColumn);
  CHECK(gp.clamp_lo == -0.25f);
  CHECK(gp.clamp_hi == 0.5f);
  // The GEMM's result is the convolution's, on the same buffers.
  const std::vector<float> xdata = test::random_floats(static_cast<size_t>(n * c_in), 3);
  std::vector<float> want(static_cast<size_t>(n * c_out)), got(want.size());
  rt::ThreadPool pool(2);
  rt::conv2d_f32(pool, cp, xdata.data(), wdata.data(), bdata.data(), nullptr, want.data(), nullptr);
  rt::gemm_f32(pool, gp, xdata.data(), wdata.data(), bdata.data(), got.data());
  const std::vector<double> want_d(want.begin(), want.end());
  CHECK(test::rel_l2(got, want_d) <= 1e-6);

  // Left convolutions: a padded 3x3 kernel on a 1x1 plane, a 1x1 kernel on a 2x2 plane,
  // two groups, and a 1x1 kernel on a 1x1 plane with AOTC_CPU_PIXEL_GEMM=0.
  for (int variant : {0, 1, 2, 3}) {
    CAPTURE(variant);
    ir::Graph h;
    const int64_t hw = variant == 1 ? 2 : 1, k = variant == 0 ? 3 : 1, groups = variant == 2 ? 2 : 1;
    const int hx = h.add_input(ir::DType::Float32, {1, 8, hw, hw}, "x");
    const int hwt = h.add_f32_constant({4, 8 / groups, k, k},
                                       std::vector<float>(static_cast<size_t>(32 / groups * k * k), 0.5f));
    const int hy = h.add_value(ir::DType::Float32, {1, 4, hw, hw});
    test::add_conv(h, hx, hwt, -1, hy, 8, 4, hw, k, groups);
    h.outputs.push_back({hy, "y"});
    if (variant == 3) ::setenv("AOTC_CPU_PIXEL_GEMM", "0", 1);
    passes::single_pixel_conv_to_gemm(h);
    ::unsetenv("AOTC_CPU_PIXEL_GEMM");
    CHECK(h.ops[0].kind == ir::kind::conv2d);
  }
}

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
    CHECK(op.has(ir::attr::prepacked));
    CHECK(op.f("alpha") == 1.0);
    CHECK(op.thread_scratch_bytes == 0);
    CHECK(op.inputs[1] != w);
    CHECK(g.is_constant(op.inputs[1]));
  }
  CHECK(g.ops[0].inputs[1] == g.ops[1].inputs[1]);
  CHECK_FALSE(g.ops[2].has(ir::attr::prepacked));
  CHECK(g.ops[2].inputs[1] == wr);
  CHECK(g.ops[2].thread_scratch_bytes == 4096);
  CHECK_FALSE(g.ops[3].has(ir::attr::prepacked));
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

TEST_CASE("prepack_gemm_weights: graphs sharing a weight's buffer share its packed form (aotc --dim)") {
  const int64_t n = 17, k = 3;
  std::vector<uint8_t> bytes(static_cast<size_t>(n * k) * sizeof(float));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 1);
  const ir::ConstantBytes weight(bytes);
  auto derived = std::make_shared<ir::DerivedConstants>();
  // A graph at m rows whose weight is `w`; the packed weight's bytes.
  auto packed_at = [&](int64_t m, const ir::ConstantBytes& w, double alpha, bool shared) {
    ir::Graph g;
    if (shared) g.derived_constants = derived;
    const int x = g.add_input(ir::DType::Float32, {m, k}, "x");
    add_linear_gemm(g, x, g.add_constant(ir::DType::Float32, {n, k}, w, "w"), m, n, k, alpha);
    passes::prepack_gemm_weights(g);
    REQUIRE(g.ops[0].has(ir::attr::prepacked));
    return g.constant_of(g.ops[0].inputs[1]).bytes;
  };
  const ir::ConstantBytes a = packed_at(2, weight, 2.0, true);
  CHECK(a.same_buffer(packed_at(3, weight, 2.0, true)));  // m is no parameter of the packing
  // What the packing depends on gets a product of its own: alpha, or other (equal) bytes.
  CHECK_FALSE(a.same_buffer(packed_at(2, weight, 1.0, true)));
  const ir::ConstantBytes copy = packed_at(2, ir::ConstantBytes(bytes), 2.0, true);
  CHECK_FALSE(a.same_buffer(copy));
  // Shared or not, the same bytes.
  const ir::ConstantBytes alone = packed_at(2, weight, 2.0, false);
  REQUIRE(alone.size() == a.size());
  CHECK(std::memcmp(alone.data(), a.data(), a.size()) == 0);
  CHECK(std::memcmp(copy.data(), a.data(), a.size()) == 0);
}

// Three projections of x [5, 8] (weights [8, 8] + bias) read by one attention op as
// query, key and value of 2 heads of 4, through [5, 2, 4] views (strides head 4, row 8).
namespace {
struct Projections {
  ir::Graph g;
  int x = -1;
  std::vector<int> outs, weights, biases;
  size_t attention = 0;
};
void build_projections(Projections& p, bool key_read_elsewhere) {
  ir::Graph& g = p.g;
  p.x = g.add_input(ir::DType::Float32, {5, 8}, "x");
  for (int i = 0; i < 3; ++i) {
    std::vector<float> w(64), b(8);
    for (size_t j = 0; j < w.size(); ++j) w[j] = static_cast<float>(100 * i + static_cast<int>(j));
    for (size_t j = 0; j < b.size(); ++j) b[j] = static_cast<float>(-100 * i - static_cast<int>(j));
    p.weights.push_back(g.add_f32_constant({8, 8}, w, "w" + std::to_string(i)));
    p.biases.push_back(g.add_f32_constant({8}, b, "b" + std::to_string(i)));
    ir::Op& op = add_linear_gemm(g, p.x, p.weights.back(), 5, 8, 8, 1.0);
    g.outputs.pop_back();  // read by the attention only
    op.inputs[2] = p.biases.back();
    op.attrs["bias_kind"] = int64_t{1};
    p.outs.push_back(op.outputs[0]);
  }
  std::vector<int> views;
  for (int out : p.outs) views.push_back(g.add_alias(out, {5, 2, 4}));
  const int result = g.add_value(ir::DType::Float32, {1, 2, 5, 4});
  ir::Op& att = g.add_op(ir::kind::attention, {views[0], views[1], views[2], -1}, {result});
  const std::vector<int64_t> strides = {40, 4, 8};
  att.attrs = {{"batch", int64_t{1}},    {"heads", int64_t{2}},    {"q_len", int64_t{5}},
               {"kv_len", int64_t{5}},   {"head_dim", int64_t{4}}, {"v_head_dim", int64_t{4}},
               {"q_strides", strides},   {"k_strides", strides},   {"v_strides", strides},
               {"q_offset", int64_t{0}}, {"k_offset", int64_t{0}}, {"v_offset", int64_t{0}}};
  p.attention = g.ops.size() - 1;
  g.outputs.push_back({result, "out"});
  if (key_read_elsewhere) {
    const int other = g.add_value(ir::DType::Float32, {5, 8});
    ir::Op& relu = g.add_op(ir::kind::unary, {p.outs[1]}, {other});
    relu.attrs = {{"op", int64_t{1}}, {"a", 0.0}, {"b", 0.0}};
    g.outputs.push_back({other, "k_relu"});
  }
}
}  // namespace

TEST_CASE("merge_sibling_gemms stacks the query, key and value projections read only by attention") {
  Projections p;
  build_projections(p, false);
  passes::merge_sibling_gemms(p.g);
  REQUIRE(p.g.ops.size() == 2);
  const ir::Op& merged = p.g.ops[0];
  CHECK(merged.kind == ir::kind::gemm);
  CHECK(merged.i("n") == 24);
  CHECK(merged.i("ldc") == 24);
  CHECK(merged.i("ldb") == 8);
  const ir::Constant& w = p.g.constant_of(merged.inputs[1]);
  CHECK(w.shape == ir::Shape{24, 8});
  CHECK(w.f32()[8 * 8] == 100.0f);       // row 8: the key's first row
  CHECK(w.f32()[23 * 8 + 7] == 263.0f);  // the value's last
  const ir::Constant& b = p.g.constant_of(merged.inputs[2]);
  CHECK(b.f32()[9] == -101.0f);
  const ir::Op& att = p.g.ops[1];
  CHECK(att.inputs[0] == merged.outputs[0]);
  CHECK(att.inputs[2] == merged.outputs[0]);
  CHECK(att.i("q_offset") == 0);
  CHECK(att.i("k_offset") == 8);
  CHECK(att.i("v_offset") == 16);
  CHECK(att.ints("k_strides") == std::vector<int64_t>{40, 4, 24});  // batch 1: its stride is never stepped
}

TEST_CASE("merge_sibling_gemms leaves projections alone when one is also read by another op") {
  Projections p;
  build_projections(p, true);
  passes::merge_sibling_gemms(p.g);
  CHECK(p.g.ops.size() == 5);
  CHECK(p.g.ops[p.attention].inputs[1] != p.outs[1]);  // still the key's view
  CHECK(p.g.storage_root(p.g.ops[p.attention].inputs[1]) == p.outs[1]);
  CHECK(p.g.ops[0].i("n") == 8);
}

// attention [2, 3, 5, 4] (batch, heads, rows, width), then a copy of it permuted to
// [2, 5, 3, 4]; with `other_reader`, the output is also a graph output.
namespace {
ir::Graph attention_then_permute(bool other_reader, bool a_permutation) {
  ir::Graph g;
  const int q = g.add_input(ir::DType::Float32, {2, 3, 5, 4}, "q");
  const int out = g.add_value(ir::DType::Float32, {2, 3, 5, 4});
  ir::Op& att = g.add_op(ir::kind::attention, {q, q, q, -1}, {out});
  const std::vector<int64_t> dense = {60, 20, 4};
  att.attrs = {{"batch", int64_t{2}},         {"heads", int64_t{3}},    {"q_len", int64_t{5}},
               {"kv_len", int64_t{5}},        {"head_dim", int64_t{4}}, {"v_head_dim", int64_t{4}},
               {ir::attr::out_strides, dense}};
  const int permuted = g.add_value(ir::DType::Float32, {2, 5, 3, 4});
  ir::Op& copy = g.add_op(ir::kind::copy, {out}, {permuted});
  copy.attrs = {{"dims", std::vector<int64_t>{2, 5, 3, 4}},
                {"src_strides",
                 a_permutation ? std::vector<int64_t>{60, 4, 20, 1} : std::vector<int64_t>{60, 4, 20, 0}},
                {"dst_strides", std::vector<int64_t>{60, 12, 4, 1}},
                {"elem_size", int64_t{4}},
                {"src_offset", int64_t{0}}};
  g.outputs.push_back({g.add_alias(permuted, {2, 5, 12}), "y"});
  if (other_reader) g.outputs.push_back({out, "heads"});
  return g;
}
}  // namespace

TEST_CASE("write_attention_permuted writes the heads side by side and drops the copy") {
  ir::Graph g = attention_then_permute(false, true);
  passes::write_attention_permuted(g);
  REQUIRE(g.ops.size() == 1);
  CHECK(g.ops[0].outputs[0] == g.storage_root(g.outputs[0].value));
  CHECK(g.ops[0].ints(ir::attr::out_strides) == std::vector<int64_t>{60, 4, 12});
  for (bool other : {false, true}) {
    ir::Graph kept = attention_then_permute(other, other);  // read elsewhere, or not a permutation
    passes::write_attention_permuted(kept);
    CHECK(kept.ops.size() == 2);
    CHECK(kept.ops[0].ints(ir::attr::out_strides) == std::vector<int64_t>{60, 20, 4});
  }
}
