// The CUDA target's compile-time side, without a GPU: its registry of generators, the
// error for an IR op it cannot compile, the graph preparation (residual add + relu fused,
// CUDA scratch planned, fp16/bf16 weights converted, the implicit GEMM's path and residual
// fusion), the generated CUDA C++, and --cuda-arch parsing.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <aotc/rt/cuda/conv2d_plan.h>
#include <aotc/rt/cuda/conv3d_winograd_plan.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>

#include "../../codegen/cuda/cuda_target.h"
#include "../../compiler/ir/error.h"
#include "../../compiler/ir/graph.h"
#include "../../compiler/ops/cuda/cuda_registry.h"
#include "../../compiler/ops/gemm.h"
#include "../../compiler/ops/spatial.h"
#include "../../compiler/passes/cuda/cuda_passes.h"
#include "../../compiler/passes/passes.h"
#include "../ir_builders.h"

using namespace aotc;

namespace {

ir::SourceLocation where(int line) {
  ir::SourceLocation loc;
  loc.file = "model.py";
  loc.line = line;
  loc.text = "y = self.thing(x)";
  return loc;
}

// A k x k, stride-1, "same"-padded convolution of hw x hw planes, no clamp.
ir::Op& add_conv(ir::Graph& g, int x, int w, int bias, int y, int64_t c_in, int64_t c_out, int64_t hw,
                 int64_t k, int64_t groups) {
  return test::add_conv(g, x, w, bias, y, c_in, c_out, hw, k, groups, where(1));
}

// The CUDA passes with every convertible value in NHWC (AOTC_CUDA_LAYOUT=nhwc): a test graph
// of few convolutions would stay NCHW, as a network of many converts.
void run_cuda_passes_nhwc(ir::Graph& g, rt::cuda::Precision precision) {
  ::setenv("AOTC_CUDA_LAYOUT", "nhwc", 1);
  passes::cuda::run_cuda_passes(g, precision, false);
  ::unsetenv("AOTC_CUDA_LAYOUT");
}

}  // namespace

TEST_CASE("cuda: the registry covers the op kinds of the CNN models") {
  const auto& r = ops::cuda::CudaRegistry::get();
  for (const char* kind :
       {ir::kind::conv2d, ir::kind::gemm, ir::kind::batched_gemm, ir::kind::unary, ir::kind::binary,
        ir::kind::max_pool2d, ir::kind::avg_pool2d, ir::kind::adaptive_avg_pool2d, ir::kind::copy,
        ir::kind::concat, ir::kind::channel_affine, ir::kind::softmax, ir::kind::reduce,
        // the transformers' (vit_b_16, BERT)
        ir::kind::layer_norm, ir::kind::attention, ir::kind::embedding, ir::kind::assemble, ir::kind::where})
    CHECK_MESSAGE(r.find(kind) != nullptr, kind);
  CHECK(r.find("no_such_op") == nullptr);
}

TEST_CASE("cuda: an IR op without a CUDA generator fails naming the op and the Python line") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {4}, "x");
  const int y = g.add_value(ir::DType::Float32, {4});
  g.add_op("made_up_op", {x}, {y}, where(42));
  g.outputs.push_back({y, "y"});
  try {
    ops::cuda::check_cuda_support(g);
    FAIL("check_cuda_support accepted an op it has no generator for");
  } catch (const CompileError& e) {
    const std::string message = e.what();
    CHECK(message.find("made_up_op") != std::string::npos);
    CHECK(message.find("model.py:42") != std::string::npos);
    CHECK(message.find("--target cuda") != std::string::npos);
  }
}

TEST_CASE("cuda: an operand dtype the op does not compute in is refused") {
  // relu of int64 is computed (as the CPU's rt::unary); exp of int64, int64 true division, the
  // negation of a bool, a bitwise op on float32 and the mean of int64 are not: the lowering
  // never makes them, and the CPU kernels do not compute them either.
  const auto check = [](const char* kind, ir::DType t, std::vector<std::pair<std::string, ir::Attr>> attrs,
                        bool accepted) {
    ir::Graph g;
    const int x = g.add_input(t, {4}, "x");
    const int y = g.add_value(t, {4});
    std::vector<int> inputs = {x};
    if (std::string(kind) == ir::kind::binary) inputs.push_back(x);
    ir::Op& op = g.add_op(kind, inputs, {y}, where(7));
    for (auto& [k, v] : attrs) op.attrs[k] = v;
    g.outputs.push_back({y, "y"});
    if (accepted) {
      CHECK_NOTHROW(ops::cuda::check_cuda_support(g));
    } else {
      CHECK_THROWS_WITH_AS(ops::cuda::check_cuda_support(g), doctest::Contains(ir::dtype_name(t)),
                           CompileError);
    }
  };
  const auto unary = [](rt::UnaryOp op) {
    return std::vector<std::pair<std::string, ir::Attr>>{
        {"op", static_cast<int64_t>(op)}, {"a", 0.0}, {"b", 0.0}};
  };
  const auto binary = [](rt::BinaryOp op) {
    return std::vector<std::pair<std::string, ir::Attr>>{{"op", static_cast<int64_t>(op)}, {"alpha", 1.0}};
  };
  check(ir::kind::unary, ir::DType::Int64, unary(rt::UnaryOp::Relu), true);
  check(ir::kind::unary, ir::DType::Int32, unary(rt::UnaryOp::Abs), true);
  check(ir::kind::unary, ir::DType::Bool, unary(rt::UnaryOp::BitwiseNot), true);
  check(ir::kind::unary, ir::DType::Int64, unary(rt::UnaryOp::Exp), false);
  check(ir::kind::unary, ir::DType::Bool, unary(rt::UnaryOp::Neg), false);
  check(ir::kind::unary, ir::DType::Float32, unary(rt::UnaryOp::BitwiseNot), false);
  check(ir::kind::binary, ir::DType::Int32, binary(rt::BinaryOp::Remainder), true);
  check(ir::kind::binary, ir::DType::Bool, binary(rt::BinaryOp::BitwiseXor), true);
  check(ir::kind::binary, ir::DType::Int64, binary(rt::BinaryOp::Div), false);
  check(ir::kind::binary, ir::DType::Int64, binary(rt::BinaryOp::Atan2), false);
  check(ir::kind::binary, ir::DType::Bool, binary(rt::BinaryOp::Sub), false);
  check(ir::kind::binary, ir::DType::Float32, binary(rt::BinaryOp::BitwiseAnd), false);
  const auto reduce = [](rt::ReduceOp op) {
    return std::vector<std::pair<std::string, ir::Attr>>{{"op", static_cast<int64_t>(op)},
                                                         {"mask", std::vector<int64_t>{0}}};
  };
  check(ir::kind::reduce, ir::DType::Int64, reduce(rt::ReduceOp::Prod), true);
  check(ir::kind::reduce, ir::DType::Int64, reduce(rt::ReduceOp::Mean), false);
  check(ir::kind::reduce, ir::DType::Int32, reduce(rt::ReduceOp::Sum), false);
}

TEST_CASE("cuda: a comparison writes bool for where; other float ops keep float") {
  // y = where(x > t, maximum(x, t), exp(x)): the comparison's kernel stores bool, maximum
  // and exp (beyond the first kernels' add/sub/mul/div and activations) are generated.
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {3, 4}, "x");
  const int t = g.add_input(ir::DType::Float32, {4}, "t");
  const int gt = g.add_value(ir::DType::Bool, {3, 4});
  g.add_op(ir::kind::binary, {x, t}, {gt}, where(1)).attrs = {{"op", int64_t{36}}, {"alpha", 1.0}};  // Gt
  const int mx = g.add_value(ir::DType::Float32, {3, 4});
  g.add_op(ir::kind::binary, {x, t}, {mx}, where(2)).attrs = {{"op", int64_t{10}},
                                                              {"alpha", 1.0}};  // Maximum
  const int ex = g.add_value(ir::DType::Float32, {3, 4});
  g.add_op(ir::kind::unary, {x}, {ex}, where(3)).attrs = {
      {"op", int64_t{16}}, {"a", 0.0}, {"b", 0.0}};  // Exp
  const int y = g.add_value(ir::DType::Float32, {3, 4});
  g.add_op(ir::kind::where, {gt, mx, ex}, {y}, where(4));
  g.outputs.push_back({y, "y"});
  ops::cuda::check_cuda_support(g);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  const codegen::Sources src =
      codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, {});
  CHECK(src.model_cpp.find("compare_apply<static_cast<aotc::rt::BinaryOp>(36)>") != std::string::npos);
  CHECK(src.model_cpp.find("const float* __restrict__ b, bool* y, ") != std::string::npos);
  CHECK(src.model_cpp.find("binary_apply<static_cast<aotc::rt::BinaryOp>(10)>") != std::string::npos);
  CHECK(src.model_cpp.find("unary_apply<static_cast<aotc::rt::UnaryOp>(16)>") != std::string::npos);
}

TEST_CASE("cuda: int64 ids compared into a mask and cast to float") {
  // m = (ids != 0).float(): the comparison reads int64, the cast bool; arithmetic on the
  // ids themselves is int64 arithmetic.
  ir::Graph g;
  const int ids = g.add_input(ir::DType::Int64, {2, 5}, "ids");
  const int zero = g.add_constant(ir::DType::Int64, {}, std::vector<uint8_t>(8, 0));
  const int keep = g.add_value(ir::DType::Bool, {2, 5});
  g.add_op(ir::kind::binary, {ids, zero}, {keep}, where(1)).attrs = {{"op", int64_t{33}},
                                                                     {"alpha", 1.0}};  // Ne
  const int m = g.add_value(ir::DType::Float32, {2, 5});
  g.add_op(ir::kind::cast, {keep}, {m}, where(2));
  g.outputs.push_back({m, "m"});
  ops::cuda::check_cuda_support(g);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  const codegen::Sources src =
      codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, {});
  CHECK(src.model_cpp.find("const int64_t* __restrict__ a, const int64_t* __restrict__ b, bool* y, ") !=
        std::string::npos);
  CHECK(src.model_cpp.find("(const bool* __restrict__ x, float* y, ") != std::string::npos);
  CHECK(src.model_cpp.find("cast_apply<float>") != std::string::npos);
  ir::Graph ints;
  const int i2 = ints.add_input(ir::DType::Int64, {4}, "ids");
  const int sum = ints.add_value(ir::DType::Int64, {4});
  ints.add_op(ir::kind::binary, {i2, i2}, {sum}, where(3)).attrs = {{"op", int64_t{0}},
                                                                    {"alpha", 1.0}};  // Add
  ints.outputs.push_back({sum, "s"});
  ops::cuda::check_cuda_support(ints);
  passes::cuda::run_cuda_passes(ints, rt::cuda::Precision::Fp32, false);
  const codegen::Sources int_src =
      codegen::cuda::generate_cuda_sources(ints, "model.pt", codegen::WeightsMode::Embed, {});
  CHECK(
      int_src.model_cpp.find("const int64_t* __restrict__ a, const int64_t* __restrict__ b, int64_t* y, ") !=
      std::string::npos);
  CHECK(int_src.model_cpp.find(
            "binary_apply_int<static_cast<aotc::rt::BinaryOp>(0), int64_t>(a[i], b[i], 1ll)") !=
        std::string::npos);
}

TEST_CASE(
    "cuda: integer and bool arithmetic: typed kernels, alphas, clamp bounds, fused clamps, reductions") {
  // s = relu(a - 3 * b) (int64; the relu fused into the binary kernel), c = clamp(i, -1e30, 2.5)
  // (int32: bounds rounded into int32 as the CPU rounds them), n = ~(p | q) (bool),
  // t = sum(s, dim 1) (int64: reduce_i64), f = x * x (float32: unchanged).
  ir::Graph g;
  const int a = g.add_input(ir::DType::Int64, {3, 5}, "a");
  const int b = g.add_input(ir::DType::Int64, {5}, "b");
  const int i = g.add_input(ir::DType::Int32, {7}, "i");
  const int p = g.add_input(ir::DType::Bool, {4}, "p");
  const int q = g.add_input(ir::DType::Bool, {4}, "q");
  const int x = g.add_input(ir::DType::Float32, {6}, "x");
  const int d = g.add_value(ir::DType::Int64, {3, 5});
  g.add_op(ir::kind::binary, {a, b}, {d}, where(1)).attrs = {{"op", static_cast<int64_t>(rt::BinaryOp::Sub)},
                                                             {"alpha", 3.0}};
  const int s = g.add_value(ir::DType::Int64, {3, 5});
  g.add_op(ir::kind::unary, {d}, {s}, where(2)).attrs = {
      {"op", static_cast<int64_t>(rt::UnaryOp::Relu)}, {"a", 0.0}, {"b", 0.0}};
  const int c = g.add_value(ir::DType::Int32, {7});
  g.add_op(ir::kind::unary, {i}, {c}, where(3)).attrs = {
      {"op", static_cast<int64_t>(rt::UnaryOp::Clamp)}, {"a", -1e30}, {"b", 2.5}};
  const int o = g.add_value(ir::DType::Bool, {4});
  g.add_op(ir::kind::binary, {p, q}, {o}, where(4)).attrs = {
      {"op", static_cast<int64_t>(rt::BinaryOp::BitwiseOr)}, {"alpha", 1.0}};
  const int n = g.add_value(ir::DType::Bool, {4});
  g.add_op(ir::kind::unary, {o}, {n}, where(5)).attrs = {
      {"op", static_cast<int64_t>(rt::UnaryOp::BitwiseNot)}, {"a", 0.0}, {"b", 0.0}};
  const int t = g.add_value(ir::DType::Int64, {3});
  g.add_op(ir::kind::reduce, {s}, {t}, where(6)).attrs = {{"op", static_cast<int64_t>(rt::ReduceOp::Sum)},
                                                          {"mask", std::vector<int64_t>{0, 1}}};
  const int f = g.add_value(ir::DType::Float32, {6});
  g.add_op(ir::kind::binary, {x, x}, {f}, where(7)).attrs = {{"op", static_cast<int64_t>(rt::BinaryOp::Mul)},
                                                             {"alpha", 1.0}};
  for (const int out : {s, c, n, t, f}) g.outputs.push_back({out, "y" + std::to_string(out)});
  ops::cuda::check_cuda_support(g);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  int unary = 0;
  for (const ir::Op& op : g.ops) unary += op.kind == ir::kind::unary;
  CHECK(unary == 2);  // the relu went into the subtraction
  const codegen::Sources src =
      codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, {});
  const auto has = [&](const std::string& text) {
    CHECK_MESSAGE(src.model_cpp.find(text) != std::string::npos, text);
  };
  has("aotc::rt::cuda::unary_apply_int<aotc::rt::UnaryOp::Clamp, int64_t>("
      "aotc::rt::cuda::binary_apply_int<static_cast<aotc::rt::BinaryOp>(1), int64_t>(a[i], b[ib], 3ll), 0ll, "
      "9223372036854775807ll)");
  has("(const int32_t* __restrict__ x, int32_t* y, ");
  has("unary_apply_int<static_cast<aotc::rt::UnaryOp>(2), int32_t>(x[i], "
      "static_cast<int32_t>(-2147483648ll), "
      "static_cast<int32_t>(2ll))");
  has("const bool* __restrict__ a, const bool* __restrict__ b, bool* y, ");
  has("binary_apply_int<static_cast<aotc::rt::BinaryOp>(12), bool>(a[i], b[i], true)");
  has("unary_apply_int<static_cast<aotc::rt::UnaryOp>(47), bool>(x[i], false, false)");
  has("aotc::rt::cuda::reduce_i64(stream, p, ");
  has("const float* __restrict__ a, const float* __restrict__ b, float* y, ");
  has("binary_apply<static_cast<aotc::rt::BinaryOp>(2)>(a[i], b[i], 1.f)");
}

TEST_CASE("cuda: prepare fuses the residual add and its relu into a GEMM convolution and plans its scratch") {
  // conv -> add(conv, x) -> relu, fused: (0) as it is; (1) with the add reading the
  // convolution's result through an alias of all of it (torchvision's `out += identity`).
  // Not fused (relu fused into the add only): (2) the result is also a graph output; (3) a
  // depthwise convolution (a direct kernel, no GEMM epilogue); (4) a convolution with a
  // clamp of its own (it comes before the add).
  for (const int variant : {0, 1, 2, 3, 4}) {
    CAPTURE(variant);
    const bool fuses = variant <= 1;
    ir::Graph g;
    const int x = g.add_input(ir::DType::Float32, {1, 2, 5, 5}, "x");
    const bool depthwise = variant == 3;
    const int w = depthwise ? g.add_f32_constant({2, 1, 3, 3}, std::vector<float>(18, 0.5f))
                            : g.add_f32_constant({2, 2, 3, 3}, std::vector<float>(36, 0.5f));
    const int c = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
    ir::Op& conv = add_conv(g, x, w, -1, c, 2, 2, 5, 3, depthwise ? 2 : 1);
    conv.scratch_optional = true;  // as the lowering marks the CPU's packing scratch
    if (variant == 4) conv.attrs[ir::attr::clamp_hi] = 6.0;
    const int s = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
    const int read = variant == 1 ? g.add_alias(c, {1, 2, 5, 5}) : c;
    g.add_op(ir::kind::binary, {read, x}, {s}, where(2)).attrs = {{"op", int64_t{0}}, {"alpha", 1.0}};
    const int r = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
    g.add_op(ir::kind::unary, {s}, {r}, where(3)).attrs = {{"op", int64_t{1}}, {"a", 0.0}, {"b", 0.0}};
    g.outputs.push_back({r, "r"});
    if (variant == 2) g.outputs.push_back({c, "c"});
    passes::run_default_passes(g, false);
    ops::cuda::check_cuda_support(g);
    passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
    const codegen::Sources src =
        codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, {});
    CHECK(src.cuda);
    CHECK(src.cuda_arch == "sm_90");
    CHECK(src.model_cpp.find("Precision::Fp32") != std::string::npos);
    REQUIRE(g.ops[0].kind == ir::kind::conv2d);
    if (!depthwise) {  // im2col scratch: (c_in * 3 * 3) rows x 25 positions, in the arena.
      CHECK_FALSE(g.ops[0].scratch_optional);  // CUDA kernels need theirs
      CHECK(g.ops[0].scratch_bytes == 2 * 9 * 25 * 4);
      CHECK(g.arena_bytes >= g.ops[0].scratch_bytes);
    }
    CHECK(g.ops[0].thread_scratch_bytes == 0);
    const size_t call = src.model_cpp.find("aotc::rt::cuda::conv2d_f32(ex, p, ");
    REQUIRE(call != std::string::npos);
    const std::string args = src.model_cpp.substr(call, src.model_cpp.find(");", call) - call);
    // x is read where the call names the input, in[0]: once as the input, once more when
    // it is also the residual (the argument after the bias, nullptr here).
    size_t reads_of_x = 0;
    for (size_t at = args.find("in[0]"); at != std::string::npos; at = args.find("in[0]", at + 1))
      ++reads_of_x;
    if (fuses) {
      REQUIRE(g.ops.size() == 1);
      REQUIRE(g.ops[0].inputs.size() == 4);
      CHECK(g.ops[0].inputs[3] == x);
      CHECK(g.ops[0].outputs[0] == r);
      CHECK(g.ops[0].f(ir::attr::clamp_lo) == 0.0);
      CHECK(std::isinf(g.ops[0].f(ir::attr::clamp_hi)));
      CHECK(reads_of_x == 2);
      CHECK(args.find(", nullptr, reinterpret_cast<const float*>(static_cast<const unsigned char*>(in[0])") !=
            std::string::npos);
      CHECK(src.model_cpp.find("__global__") == std::string::npos);  // no add kernel left
    } else {
      REQUIRE(g.ops.size() == 2);
      CHECK(g.ops[0].inputs.size() == 3);
      CHECK(reads_of_x == 1);
      CHECK(args.find(", nullptr, nullptr, ") != std::string::npos);  // no bias, no residual
      CHECK(g.ops[1].kind == ir::kind::binary);
      CHECK(g.ops[1].f(ir::attr::clamp_lo) == 0.0);
      CHECK(std::isinf(g.ops[1].f(ir::attr::clamp_hi)));
      CHECK(g.ops[1].outputs[0] == r);
      CHECK(src.model_cpp.find("__global__") != std::string::npos);  // the fused add + relu kernel
      CHECK(src.model_cpp.find("clamp_apply") != std::string::npos);
    }
  }
}

TEST_CASE("cuda: precision and architecture options reach the generated code") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {1, 2, 5, 5}, "x");
  const int w = g.add_f32_constant({2, 2, 3, 3}, std::vector<float>(36, 0.5f));
  const int c = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
  add_conv(g, x, w, -1, c, 2, 2, 5, 3, 1);
  g.outputs.push_back({c, "c"});
  passes::run_default_passes(g, false);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  codegen::cuda::CudaOptions tf32;
  tf32.precision = "tf32";
  tf32.arch = 80;
  const codegen::Sources src2 =
      codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, tf32);
  CHECK(src2.model_cpp.find("Precision::Tf32") != std::string::npos);
  CHECK(src2.cuda_arch == "sm_80");
  codegen::cuda::CudaOptions bad;
  bad.precision = "fp8";
  CHECK_THROWS_AS(codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, bad),
                  CompileError);
  bad.precision = "bf16";
  bad.arch = 75;  // no bfloat16 tensor cores before sm_80
  CHECK_THROWS_AS(codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, bad),
                  CompileError);
}

namespace {

uint16_t bits16(const ir::Graph& g, int id, size_t index) {
  const ir::Constant& c = g.constant_of(id);
  return static_cast<uint16_t>(c.bytes[index * 2] | (c.bytes[index * 2 + 1] << 8));
}

// A 3x3 convolution (GEMM path), a depthwise one (direct, float32) and a linear layer.
ir::Graph lowp_graph(const std::vector<float>& weights) {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {1, 2, 5, 5}, "x");
  const int w = g.add_f32_constant({2, 2, 3, 3}, weights);
  const int c = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
  add_conv(g, x, w, -1, c, 2, 2, 5, 3, 1);
  const int dw = g.add_f32_constant({2, 1, 3, 3}, std::vector<float>(18, 0.25f));
  const int d = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
  add_conv(g, c, dw, -1, d, 2, 2, 5, 3, 2);
  // linear: [1, 50] x W[3, 50]^T
  const int flat = g.add_alias(d, {1, 50});
  const int lw = g.add_f32_constant({3, 50}, std::vector<float>(150, 0.5f));
  const int y = g.add_value(ir::DType::Float32, {1, 3});
  g.add_op(ir::kind::gemm, {flat, lw, -1}, {y}, where(3)).attrs = {{"m", int64_t{1}},
                                                                   {"n", int64_t{3}},
                                                                   {"k", int64_t{50}},
                                                                   {"trans_a", false},
                                                                   {"trans_b", true},
                                                                   {"lda", int64_t{50}},
                                                                   {"ldb", int64_t{50}},
                                                                   {"ldc", int64_t{3}},
                                                                   {"alpha", 1.0},
                                                                   {"beta", 1.0},
                                                                   {"bias_kind", int64_t{0}},
                                                                   {ir::attr::clamp_lo, -INFINITY},
                                                                   {ir::attr::clamp_hi, INFINITY}};
  g.outputs.push_back({y, "y"});
  return g;
}

}  // namespace

TEST_CASE("cuda: fp16 and bf16 convert GEMM weights at compile time, rounding to nearest even") {
  // 1, 0.1, 65504 (largest half), 1e-8 (below half's subnormals), a bf16 tie to even
  // (1 + 2^-8: 0x3f808000 -> 0x3f80) and one that rounds up (1 + 3 * 2^-8 -> 0x3f82), -2.
  std::vector<float> w(36, 0.0f);
  const float values[] = {1.0f, 0.1f, 65504.0f, 1e-8f, 1.00390625f, 1.01171875f, -2.0f};
  for (size_t i = 0; i < 7; ++i) w[i] = values[i];
  for (const auto precision : {rt::cuda::Precision::Fp16, rt::cuda::Precision::Bf16}) {
    ir::Graph g = lowp_graph(w);
    passes::run_default_passes(g, false);
    ops::cuda::check_cuda_support(g);
    passes::cuda::run_cuda_passes(g, precision, false);
    const bool fp16 = precision == rt::cuda::Precision::Fp16;
    const ir::DType type = fp16 ? ir::DType::Float16 : ir::DType::BFloat16;
    const ir::Op* conv = nullptr;
    const ir::Op* depthwise = nullptr;
    const ir::Op* gemm = nullptr;
    for (const ir::Op& op : g.ops) {
      if (op.kind == ir::kind::conv2d) (op.i("groups") == 1 ? conv : depthwise) = &op;
      if (op.kind == ir::kind::gemm) gemm = &op;
    }
    REQUIRE(conv);
    REQUIRE(depthwise);
    REQUIRE(gemm);
    CHECK(conv->b(ir::attr::weights_16bit));
    CHECK(g.value(conv->inputs[1]).dtype == type);
    CHECK_FALSE(depthwise->b(ir::attr::weights_16bit));  // a direct kernel: float32 weights
    CHECK(g.value(depthwise->inputs[1]).dtype == ir::DType::Float32);
    const uint16_t expected_fp16[] = {0x3c00, 0x2e66, 0x7bff, 0x0000, 0x3c04, 0x3c0c, 0xc000};
    const uint16_t expected_bf16[] = {0x3f80, 0x3dcd, 0x4780, 0x322c, 0x3f80, 0x3f82, 0xc000};
    for (size_t i = 0; i < 7; ++i)
      CHECK_MESSAGE(bits16(g, conv->inputs[1], i) == (fp16 ? expected_fp16[i] : expected_bf16[i]), values[i]);
    // The 3x3 convolution's columns in 16 bits: (c_in * 9) x 25 halves.
    CHECK(conv->scratch_bytes == 2 * 9 * 25 * 2);
    // The linear layer: the weight (operand b) converted, the activation rounded into scratch.
    CHECK(gemm->b(ir::attr::b_16bit));
    CHECK_FALSE(gemm->b(ir::attr::a_16bit));
    CHECK(g.value(gemm->inputs[1]).dtype == type);
    CHECK(gemm->scratch_bytes == 256);  // 50 halves, from a 256-byte boundary
    codegen::cuda::CudaOptions options;
    options.precision = fp16 ? "fp16" : "bf16";
    const codegen::Sources src =
        codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, options);
    CHECK(src.model_cpp.find("aotc::rt::cuda::conv2d_16bit(ex, p, ") != std::string::npos);
    CHECK(src.model_cpp.find("aotc::rt::cuda::conv2d_f32(ex, p, ") !=
          std::string::npos);  // the depthwise one
    CHECK(src.model_cpp.find("aotc::rt::cuda::gemm_16bit(ex, p, ") != std::string::npos);
    CHECK(src.model_cpp.find(fp16 ? "Precision::Fp16" : "Precision::Bf16") != std::string::npos);
    // The 16-bit weights replace the float32 ones in the blob: 36 + 150 halves and the
    // depthwise floats, each 64-byte aligned.
    CHECK(src.weights_bin.size() < 36 * 4 + 150 * 4);
  }
  // fp32 and tf32 keep every weight float32.
  ir::Graph g = lowp_graph(w);
  passes::run_default_passes(g, false);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Tf32, false);
  for (const ir::Op& op : g.ops)
    for (int in : op.inputs)
      if (in >= 0) CHECK(g.value(in).dtype == ir::DType::Float32);
  // At fp32 the linear layer's weight is marked as one (its split for gemm_f16x2 is made
  // once at context creation) and the call is gemm_weight_f32; tf32 keeps gemm_f32.
  for (const auto precision : {rt::cuda::Precision::Fp32, rt::cuda::Precision::Tf32}) {
    ir::Graph lg = lowp_graph(w);
    passes::run_default_passes(lg, false);
    passes::cuda::run_cuda_passes(lg, precision, false);
    const bool fp32 = precision == rt::cuda::Precision::Fp32;
    const ir::Op* gemm = nullptr;
    for (const ir::Op& op : lg.ops)
      if (op.kind == ir::kind::gemm) gemm = &op;
    REQUIRE(gemm);
    CHECK(gemm->has(ir::attr::b_weight) == fp32);
    codegen::cuda::CudaOptions options;
    options.precision = fp32 ? "fp32" : "tf32";
    const codegen::Sources src =
        codegen::cuda::generate_cuda_sources(lg, "m.pt", codegen::WeightsMode::Embed, options);
    CHECK((src.model_cpp.find("aotc::rt::cuda::gemm_weight_f32(ex, p, ") != std::string::npos) == fp32);
    CHECK((src.model_cpp.find("aotc::rt::cuda::gemm_f32(ex, p, ") != std::string::npos) == !fp32);
  }
}

TEST_CASE("cuda: fp16 conversion at the edges: overflow, subnormals, ties, infinities, NaN") {
  // Values and their binary16 patterns (round to nearest even).
  const std::pair<float, uint16_t> cases[] = {{65504.0f, 0x7bff},       {65519.0f, 0x7bff},
                                              {65520.0f, 0x7c00},       {1e6f, 0x7c00},
                                              {-1e6f, 0xfc00},          {6.103515625e-05f, 0x0400},
                                              {5.9604645e-08f, 0x0001}, {2.98023224e-08f, 0x0000},
                                              {3.0e-08f, 0x0001},       {8.94069672e-08f, 0x0002},
                                              {6.0975552e-05f, 0x03ff}, {-0.0f, 0x8000},
                                              {0.33325195f, 0x3555},    {2049.0f, 0x6800},
                                              {2051.0f, 0x6802},        {INFINITY, 0x7c00},
                                              {-INFINITY, 0xfc00},      {NAN, 0x7e00}};
  std::vector<float> w(36, 0.0f);
  for (const auto& c : cases) {  // no structured binding: clang 14 cannot capture one
    w[0] = c.first;
    ir::Graph g = lowp_graph(w);
    passes::run_default_passes(g, false);
    passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp16, false);
    for (const ir::Op& op : g.ops)
      if (op.kind == ir::kind::conv2d && op.i("groups") == 1)
        CHECK_MESSAGE(bits16(g, op.inputs[1], 0) == c.second, c.first);
  }
}

TEST_CASE("cuda: AOTC_CUDA_IMPLICIT_GEMM=1 takes the implicit GEMM and fuses the residual add into it") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {1, 2, 5, 5}, "x");
  const int w = g.add_f32_constant({2, 2, 3, 3}, std::vector<float>(36, 0.5f));
  const int c = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
  add_conv(g, x, w, -1, c, 2, 2, 5, 3, 1);
  // The skip branch is computed after the convolution, as ResNet's downsample is.
  const int skip = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
  g.add_op(ir::kind::unary, {x}, {skip}, where(2)).attrs = {{"op", int64_t{2}}, {"a", 0.0}, {"b", 0.0}};
  const int s = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
  g.add_op(ir::kind::binary, {c, skip}, {s}, where(3)).attrs = {{"op", int64_t{0}}, {"alpha", 1.0}};
  const int r = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
  g.add_op(ir::kind::unary, {s}, {r}, where(4)).attrs = {{"op", int64_t{1}}, {"a", 0.0}, {"b", 0.0}};
  g.outputs.push_back({r, "r"});
  passes::run_default_passes(g, false);
  ::setenv("AOTC_CUDA_IMPLICIT_GEMM", "1", 1);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Tf32, false);
  ::unsetenv("AOTC_CUDA_IMPLICIT_GEMM");
  REQUIRE(g.ops.size() == 2);
  CHECK(g.ops[0].kind == ir::kind::unary);  // the skip branch first, then the fused convolution
  const ir::Op& conv = g.ops[1];
  CHECK(conv.kind == ir::kind::conv2d);
  CHECK(static_cast<rt::cuda::Conv2dPath>(conv.i(ir::attr::cuda_path)) == rt::cuda::Conv2dPath::ImplicitGemm);
  REQUIRE(conv.inputs.size() == 4);
  CHECK(conv.inputs[3] == skip);
  CHECK(conv.outputs[0] == r);
  CHECK(conv.f(ir::attr::clamp_lo) == 0.0);
  CHECK(conv.scratch_bytes == 0);  // 25 columns, K = 18: one tile, no split
  const codegen::Sources src =
      codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, {90, "tf32"});
  CHECK(src.model_cpp.find("aotc::rt::cuda::implicit_gemm_conv2d(ex, p, aotc::rt::cuda::Precision::Tf32") !=
        std::string::npos);
  // Exact float32 never takes it (tensor cores round).
  ::setenv("AOTC_CUDA_IMPLICIT_GEMM", "1", 1);
  CHECK(rt::cuda::conv2d_path(ops::conv2d_params_of(conv), rt::cuda::Precision::Fp32, true) ==
        rt::cuda::Conv2dPath::Im2colGemm);
  ::unsetenv("AOTC_CUDA_IMPLICIT_GEMM");
}

namespace {

// x (1 x c x 10 x 10) -> conv 3x3 + relu -> conv 3x3 -> + (the first conv's result) -> relu
// -> max pool 2x2 -> global average pool -> flatten -> linear (5 outputs), c = 8 unless
// given. depthwise: the second convolution depthwise instead.
ir::Graph small_resnet(bool depthwise, int64_t c = 8) {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {1, c, 10, 10}, "x");
  std::vector<float> w1(static_cast<size_t>(c * c * 9)),
      w2(static_cast<size_t>(depthwise ? c * 9 : c * c * 9)), b1(static_cast<size_t>(c)),
      fc(static_cast<size_t>(5 * c)), fb(5, 0.25f);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = static_cast<float>(i % 17) - 8.0f;
  for (size_t i = 0; i < w2.size(); ++i)
    w2[i] = static_cast<float>(i % 13) * 0.5f + (c == 8 ? 0.0f : 1.0f / 3.0f);
  for (size_t i = 0; i < b1.size(); ++i) b1[i] = static_cast<float>(i);
  const int c1 = g.add_value(ir::DType::Float32, {1, c, 10, 10});
  add_conv(g, x, g.add_f32_constant({c, c, 3, 3}, w1), g.add_f32_constant({c}, b1), c1, c, c, 10, 3, 1)
      .attrs[ir::attr::clamp_lo] = 0.0;
  const int c2 = g.add_value(ir::DType::Float32, {1, c, 10, 10});
  add_conv(g, c1, g.add_f32_constant({c, depthwise ? 1 : c, 3, 3}, w2), -1, c2, c, c, 10, 3,
           depthwise ? c : 1);
  const int s = g.add_value(ir::DType::Float32, {1, c, 10, 10});
  g.add_op(ir::kind::binary, {c2, c1}, {s}, where(2)).attrs = {{"op", int64_t{0}}, {"alpha", 1.0}};
  const int r = g.add_value(ir::DType::Float32, {1, c, 10, 10});
  g.add_op(ir::kind::unary, {s}, {r}, where(3)).attrs = {{"op", int64_t{1}}, {"a", 0.0}, {"b", 0.0}};
  const int m = g.add_value(ir::DType::Float32, {1, c, 5, 5});
  g.add_op(ir::kind::max_pool2d, {r}, {m}, where(4)).attrs = {{"n", int64_t{1}},
                                                              {"c", c},
                                                              {"h_in", int64_t{10}},
                                                              {"w_in", int64_t{10}},
                                                              {"h_out", int64_t{5}},
                                                              {"w_out", int64_t{5}},
                                                              {"kernel", std::vector<int64_t>{2, 2}},
                                                              {"stride", std::vector<int64_t>{2, 2}},
                                                              {"padding", std::vector<int64_t>{0, 0}},
                                                              {"dilation", std::vector<int64_t>{1, 1}},
                                                              {"count_include_pad", true},
                                                              {"divisor_override", int64_t{0}}};
  const int a = g.add_value(ir::DType::Float32, {1, c, 1, 1});
  g.add_op(ir::kind::adaptive_avg_pool2d, {m}, {a}, where(5)).attrs = {
      {"n", int64_t{1}},    {"c", c}, {"h_in", int64_t{5}}, {"w_in", int64_t{5}}, {"h_out", int64_t{1}},
      {"w_out", int64_t{1}}};
  const int flat = g.add_alias(a, {1, c});
  const int y = g.add_value(ir::DType::Float32, {1, 5});
  ir::Op& linear = g.add_op(
      ir::kind::gemm, {flat, g.add_f32_constant({5, c}, fc), g.add_f32_constant({5}, fb)}, {y}, where(6));
  ops::GemmShape shape;
  shape.m = 1;
  shape.n = 5;
  shape.k = c;
  shape.trans_b = true;
  shape.bias_kind = rt::BiasKind::PerColumn;
  linear.attrs = ops::gemm_attrs(shape);
  g.outputs.push_back({y, "y"});
  return g;
}

size_t count_kind(const ir::Graph& g, const char* kind) {
  size_t n = 0;
  for (const ir::Op& op : g.ops) n += op.kind == kind;
  return n;
}

}  // namespace

TEST_CASE("cuda: a CNN of ungrouped convolutions runs in NHWC, its convolutions GEMMs") {
  ir::Graph g = small_resnet(false);
  passes::run_default_passes(g, false);
  ops::cuda::check_cuda_support(g);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  CHECK(count_kind(g, ir::kind::conv2d) == 0);
  CHECK(count_kind(g, ir::kind::copy) == 0);  // the image unfolds from NCHW; the pooled features are an alias
  REQUIRE(count_kind(g, ir::kind::im2col_nhwc) == 2);
  CHECK(count_kind(g, ir::kind::binary) == 0);  // the add and its relu, fused into the second GEMM
  REQUIRE(g.ops.size() == 7);
  const ir::Op& unfold1 = g.ops[0];
  CHECK(unfold1.kind == ir::kind::im2col_nhwc);
  CHECK(unfold1.b(ir::attr::nchw_input));
  CHECK(unfold1.i("row_stride") == 72);
  CHECK(g.value(unfold1.outputs[0]).shape == ir::Shape{100, 72});
  const ir::Op& conv1 = g.ops[1];
  REQUIRE(conv1.kind == ir::kind::gemm);
  CHECK(conv1.i("m") == 100);
  CHECK(conv1.i("n") == 8);
  CHECK(conv1.i("k") == 72);
  CHECK(conv1.b("trans_b"));
  CHECK(static_cast<rt::BiasKind>(conv1.i("bias_kind")) == rt::BiasKind::PerColumn);
  CHECK(conv1.f(ir::attr::clamp_lo) == 0.0);
  CHECK(g.value(conv1.outputs[0]).shape == ir::Shape{1, 10, 10, 8});
  // The weights reordered to (c_out, kh, kw, c_in): W'[o][(kh * 3 + kw) * 8 + c] = W[o][c][kh][kw].
  const ir::Constant& w = g.constant_of(conv1.inputs[1]);
  REQUIRE(w.shape == ir::Shape{8, 72});
  for (int o : {0, 5})
    for (int c : {0, 3, 7})
      for (int kh : {0, 2})
        for (int kw : {1, 2})
          CHECK(w.f32()[o * 72 + (kh * 3 + kw) * 8 + c] ==
                static_cast<float>((((o * 8 + c) * 3 + kh) * 3 + kw) % 17) - 8.0f);
  CHECK_FALSE(g.ops[2].b(ir::attr::nchw_input));  // the second unfolding reads the first GEMM's NHWC result
  const ir::Op& conv2 = g.ops[3];
  REQUIRE(conv2.kind == ir::kind::gemm);
  REQUIRE(conv2.inputs.size() == 4);
  CHECK(conv2.inputs[3] == conv1.outputs[0]);  // the residual
  CHECK(conv2.f(ir::attr::clamp_lo) == 0.0);
  CHECK(g.ops[4].kind == ir::kind::max_pool2d);
  CHECK(g.ops[4].b(ir::attr::channels_last));
  CHECK(g.ops[5].kind == ir::kind::adaptive_avg_pool2d);
  CHECK(g.ops[5].b(ir::attr::channels_last));
  CHECK(g.ops[6].kind == ir::kind::gemm);
  const codegen::Sources src =
      codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, {});
  CHECK(src.model_cpp.find("aotc::rt::cuda::im2col_nhwc_f32(stream, p, true, 72, ") != std::string::npos);
  CHECK(src.model_cpp.find("aotc::rt::cuda::max_pool2d_nhwc_f32(") != std::string::npos);
  CHECK(src.model_cpp.find(
            "aotc::rt::cuda::adaptive_avg_pool2d_nhwc(stream, aotc::rt::cuda::Precision::Fp32, ") !=
        std::string::npos);
}

TEST_CASE(
    "cuda: NHWC at fp16 unfolds into 16-bit columns; a depthwise network and AOTC_CUDA_LAYOUT=nchw stay "
    "NCHW") {
  {
    ir::Graph g = small_resnet(false);
    passes::run_default_passes(g, false);
    passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp16, false);
    REQUIRE(g.ops[0].kind == ir::kind::im2col_nhwc);
    CHECK(g.value(g.ops[0].outputs[0]).dtype == ir::DType::Float16);
    CHECK(g.ops[1].b(ir::attr::a_16bit));
    CHECK(g.ops[1].b(ir::attr::b_16bit));
    CHECK(g.value(g.ops[1].inputs[1]).dtype == ir::DType::Float16);
    CHECK(g.ops[1].scratch_bytes == 0);  // nothing to round as it runs
  }
  {
    ir::Graph g = small_resnet(true);  // one ungrouped convolution left: not worth a layout of its own
    passes::run_default_passes(g, false);
    passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
    CHECK(count_kind(g, ir::kind::im2col_nhwc) == 0);
    CHECK(count_kind(g, ir::kind::conv2d) == 2);
  }
  {
    ir::Graph g = small_resnet(false);
    passes::run_default_passes(g, false);
    ::setenv("AOTC_CUDA_LAYOUT", "nchw", 1);
    passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
    ::unsetenv("AOTC_CUDA_LAYOUT");
    CHECK(count_kind(g, ir::kind::im2col_nhwc) == 0);
    CHECK(count_kind(g, ir::kind::conv2d) == 2);
  }
}

// x (1x4x6x6) -> 1x1 conv to 8 channels + bias + clamp [0, clamp_hi] -> v -> depthwise 3x3
// + bias -> d (1x8x6x6): a MobileNet expansion and the depthwise layer after it.
struct ExpandDepthwise {
  int x, v, expand_bias, d;
};
ExpandDepthwise add_expand_depthwise(ir::Graph& g, double clamp_hi) {
  ExpandDepthwise e;
  e.x = g.add_input(ir::DType::Float32, {1, 4, 6, 6}, "x");
  e.v = g.add_value(ir::DType::Float32, {1, 8, 6, 6});
  e.expand_bias = g.add_f32_constant({8}, std::vector<float>(8, 0.5f));
  ir::Op& expand = add_conv(g, e.x, g.add_f32_constant({8, 4, 1, 1}, std::vector<float>(32, 0.25f)),
                            e.expand_bias, e.v, 4, 8, 6, 1, 1);
  expand.attrs[ir::attr::clamp_lo] = 0.0;
  expand.attrs[ir::attr::clamp_hi] = clamp_hi;
  e.d = g.add_value(ir::DType::Float32, {1, 8, 6, 6});
  add_conv(g, e.v, g.add_f32_constant({8, 1, 3, 3}, std::vector<float>(72, 0.125f)),
           g.add_f32_constant({8}, std::vector<float>(8, -1.0f)), e.d, 8, 8, 6, 3, 8);
  return e;
}

TEST_CASE("cuda: a depthwise convolution applies the bias and clamp of the NCHW convolution it alone reads") {
  // x -> 1x1 conv + bias + relu6 -> v -> depthwise 3x3 + bias -> y; variant 1: v is also
  // an output (two readers of the bytes: nothing moves).
  for (int variant = 0; variant < 2; ++variant) {
    CAPTURE(variant);
    ir::Graph g;
    const ExpandDepthwise e = add_expand_depthwise(g, 6.0);
    const int b1 = e.expand_bias;
    g.outputs.push_back({e.d, "y"});
    if (variant == 1) g.outputs.push_back({e.v, "v"});
    passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
    REQUIRE(count_kind(g, ir::kind::conv2d) == 2);
    const ir::Op& first = g.ops[0];
    const ir::Op& depthwise = g.ops[1];
    REQUIRE(depthwise.i("groups") == 8);
    if (variant == 1) {
      CHECK_FALSE(depthwise.has(ir::attr::input_clamp_lo));
      CHECK(first.inputs[2] == b1);
      CHECK(first.f(ir::attr::clamp_hi) == 6.0);
      continue;
    }
    REQUIRE(depthwise.has(ir::attr::input_clamp_lo));
    CHECK(depthwise.f(ir::attr::input_clamp_lo) == 0.0);
    CHECK(depthwise.f(ir::attr::input_clamp_hi) == 6.0);
    REQUIRE(depthwise.inputs.size() == 4);
    CHECK(depthwise.inputs[3] == b1);
    CHECK(first.inputs[2] == -1);  // the 1x1 convolution writes the bare product: no pass
    CHECK(std::isinf(first.f(ir::attr::clamp_lo)));
    CHECK(std::isinf(first.f(ir::attr::clamp_hi)));
    const auto src = codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, {});
    CHECK(src.model_cpp.find("aotc::rt::cuda::DepthwiseInputEpilogue in{};") != std::string::npos);
    CHECK(src.model_cpp.find(", &in);") != std::string::npos);
  }
}

TEST_CASE("cuda: float binary ops also get a kernel of 16-byte runs, taken where sizes and addresses allow") {
  // x * gate as a squeeze-and-excitation block multiplies (the gate one value per image and
  // channel), x + r (dense), x * s (one value per row), and an int64 add (scalar only).
  for (const auto precision : {rt::cuda::Precision::Fp32, rt::cuda::Precision::Fp16}) {
    CAPTURE(precision);
    const bool half = precision == rt::cuda::Precision::Fp16;
    const ir::DType f = ir::DType::Float32;
    ir::Graph g;
    const int x = g.add_input(f, {2, 5, 7, 24}, "x");
    const int gate = g.add_input(f, {2, 1, 1, 24}, "gate");
    const int r = g.add_input(f, {2, 5, 7, 24}, "r");
    const int s = g.add_input(f, {2, 5, 7, 1}, "s");
    const int i = g.add_input(ir::DType::Int64, {2, 5, 7, 24}, "i");
    const auto binary = [&](int a, int b, ir::DType t, int64_t op, int line) {
      const int out = g.add_value(t, {2, 5, 7, 24});
      g.add_op(ir::kind::binary, {a, b}, {out}, where(line)).attrs = {{"op", op}, {"alpha", 1.0}};
      g.outputs.push_back({out, "y" + std::to_string(line)});
    };
    binary(x, gate, f, static_cast<int64_t>(rt::BinaryOp::Mul), 1);
    binary(x, r, f, static_cast<int64_t>(rt::BinaryOp::Add), 2);
    binary(x, s, f, static_cast<int64_t>(rt::BinaryOp::Mul), 3);
    binary(i, i, ir::DType::Int64, static_cast<int64_t>(rt::BinaryOp::Add), 4);
    ops::cuda::check_cuda_support(g);
    passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
    if (half)  // as store_activations_16bit.cpp keeps activations; the gate stays float32
      for (ir::Value& v : g.values)
        if (v.dtype == ir::DType::Float32 && &v != &g.value(gate)) v.dtype = ir::DType::Float16;
    const codegen::Sources src =
        codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, {});
    const std::string& code = src.model_cpp;
    const std::string run = half ? "8" : "4";
    const std::string type = half ? "uint16_t" : "float";
    const std::string pack = "aotc::rt::cuda::Pack<" + type + ", " + run + ">";
    for (const char* kernel : {"aotc_op0_runs", "aotc_op1_runs", "aotc_op2_runs"}) {
      CAPTURE(kernel);
      CHECK(code.find(std::string("void __launch_bounds__(256) ") + kernel + "(") != std::string::npos);
    }
    CHECK(code.find("aotc_op3_runs") == std::string::npos);
    // The gate and s are read once per run, x and r as packs; the runs are taken where the
    // element count, the last dim and every pack's address allow.
    CHECK(code.find("const " + type + " pb = b[ib];") != std::string::npos);
    // A float32 gate beside 16-bit tensors: runs of 8 all the same, its pack two loads.
    CHECK(code.find("const aotc::rt::cuda::Pack<float, " + run + "> pb = *reinterpret_cast<") !=
          std::string::npos);
    CHECK(code.find("const " + pack + " pa = *reinterpret_cast<const " + pack + "*>(a + i);") !=
          std::string::npos);
    CHECK(code.find("const " + pack + " pb = *reinterpret_cast<const " + pack + "*>(b + i);") !=
          std::string::npos);
    CHECK(code.find("if ((1680ll % " + run + " == 0) && (24ll % " + run +
                    " == 0) && aotc::rt::cuda::pack_aligned(") != std::string::npos);
    CHECK(code.find("if ((1680ll % " + run + " == 0) && aotc::rt::cuda::pack_aligned(") != std::string::npos);
    CHECK(code.find("static_cast<unsigned>((1680ll / " + run + " + 255) / 256)") != std::string::npos);
  }
}

TEST_CASE("cuda: an NHWC depthwise convolution applies relu6's upper bound for the GEMM it alone reads") {
  // x -> 1x1 conv + bias + clamp -> v -> depthwise 3x3 + bias -> 1x1 conv -> y, in NHWC.
  // Variant 0: relu6 (its bound 6 was a pass after cuBLASLt: it moves); 1: v is also
  // returned (two readers: nothing moves); 2: relu (cuBLASLt fuses it with the bias: it stays).
  for (int variant = 0; variant < 3; ++variant) {
    CAPTURE(variant);
    ir::Graph g;
    const ExpandDepthwise e = add_expand_depthwise(g, variant == 2 ? INFINITY : 6.0);
    const int b1 = e.expand_bias;
    const int y = g.add_value(ir::DType::Float32, {1, 4, 6, 6});
    add_conv(g, e.d, g.add_f32_constant({4, 8, 1, 1}, std::vector<float>(32, 0.5f)), -1, y, 8, 4, 6, 1, 1);
    g.outputs.push_back({y, "y"});
    if (variant == 1) g.outputs.push_back({e.v, "v"});
    run_cuda_passes_nhwc(g, rt::cuda::Precision::Fp32);
    const ir::Op* gemm = nullptr;
    const ir::Op* dw = nullptr;
    for (const ir::Op& op : g.ops) {
      if (op.kind == ir::kind::gemm && !gemm) gemm = &op;
      if (op.kind == ir::kind::depthwise_conv2d_nhwc) dw = &op;
    }
    REQUIRE(gemm);
    REQUIRE(dw);
    REQUIRE(g.storage_root(dw->inputs[0]) == g.storage_root(gemm->outputs[0]));
    if (variant != 0) {
      CHECK_FALSE(dw->has(ir::attr::input_clamp_lo));
      CHECK(dw->inputs.size() == 3);
      CHECK(gemm->inputs[2] == b1);
      CHECK(gemm->f(ir::attr::clamp_lo) == 0.0);
      continue;
    }
    REQUIRE(dw->has(ir::attr::input_clamp_lo));
    CHECK(dw->f(ir::attr::input_clamp_lo) == -INFINITY);
    CHECK(dw->f(ir::attr::input_clamp_hi) == 6.0);
    REQUIRE(dw->inputs.size() == 4);
    CHECK(dw->inputs[3] == -1);
    // The GEMM keeps the bias and relu that cuBLASLt's epilogue applies.
    CHECK(gemm->inputs[2] == b1);
    CHECK(ops::gemm_params_of(*gemm).bias_kind == rt::BiasKind::PerColumn);
    CHECK(gemm->f(ir::attr::clamp_lo) == 0.0);
    CHECK(gemm->f(ir::attr::clamp_hi) == INFINITY);
    const auto src = codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, {});
    CHECK(src.model_cpp.find("aotc::rt::cuda::DepthwiseInputEpilogue in{}; in.in_bias = nullptr;") !=
          std::string::npos);
    CHECK(src.model_cpp.find("depthwise_conv2d_nhwc(stream, p, io, ") != std::string::npos);
    CHECK(src.model_cpp.find(", &in);") != std::string::npos);
  }
}

TEST_CASE("cuda: NHWC convolutions over 32k channels gather their input in the GEMM (fp32, tf32)") {
  for (const auto precision :
       {rt::cuda::Precision::Fp32, rt::cuda::Precision::Tf32, rt::cuda::Precision::Fp16}) {
    CAPTURE(static_cast<int>(precision));
    ir::Graph g = small_resnet(false, 32);
    passes::run_default_passes(g, false);
    passes::cuda::run_cuda_passes(g, precision, false);
    if (precision == rt::cuda::Precision::Fp16) {  // 16-bit columns: both unfold
      CHECK(count_kind(g, ir::kind::im2col_nhwc) == 2);
      continue;
    }
    // The image is read in NCHW by an unfolding; the second convolution reads the first's
    // NHWC result and gathers it.
    REQUIRE(count_kind(g, ir::kind::im2col_nhwc) == 1);
    const ir::Op& conv1 = g.ops[1];
    const ir::Op& conv2 = g.ops[2];
    REQUIRE(conv1.kind == ir::kind::gemm);
    REQUIRE(conv2.kind == ir::kind::gemm);
    CHECK_FALSE(conv1.has(ir::attr::conv_geometry));
    REQUIRE(conv2.has(ir::attr::conv_geometry));
    CHECK(conv2.ints(ir::attr::conv_geometry) ==
          std::vector<int64_t>{1, 32, 10, 10, 32, 10, 10, 3, 3, 1, 1, 1, 1, 1, 1});
    CHECK(conv2.inputs[0] == conv1.outputs[0]);  // the NHWC tensor itself
    CHECK(g.value(conv2.inputs[0]).shape == ir::Shape{1, 10, 10, 32});
    CHECK(conv2.i("k") == 288);
    REQUIRE(conv2.inputs.size() == 4);            // the residual still fuses
    CHECK(conv2.scratch_bytes == 100 * 288 * 4);  // the columns, for im2col + GEMM
    // tf32: the weights are tf32 numbers (w2 has thirds); fp32 keeps them.
    const ir::Constant& w = g.constant_of(conv2.inputs[1]);
    size_t low_bits = 0;
    for (int64_t i = 0; i < 32 * 288; ++i) low_bits += (std::bit_cast<uint32_t>(w.f32()[i]) & 0x1fffu) != 0;
    if (precision == rt::cuda::Precision::Tf32)
      CHECK(low_bits == 0);
    else
      CHECK(low_bits > 0);
    // W'[0][1] = W[0][1][0][0] = w2[9] = 4.5 + 1/3 (0x409aaaab), to nearest tf32 0x409aa000.
    CHECK(w.f32()[1] ==
          (precision == rt::cuda::Precision::Tf32 ? std::bit_cast<float>(0x409aa000u) : 4.5f + 1.0f / 3.0f));
    const codegen::Sources src =
        codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, {});
    CHECK(src.model_cpp.find("aotc::rt::Conv2dParams conv{}; conv.n = 1; conv.c_in = 32;") !=
          std::string::npos);
    CHECK(src.model_cpp.find("aotc::rt::cuda::conv_gemm_nhwc_f32(ex, p, conv, ") != std::string::npos);
  }
}

namespace {

// Every op reads only bytes that an earlier op, an input or a constant wrote; every graph
// output has a writer.
void check_defined_before_use(const ir::Graph& g) {
  std::set<int> written;
  auto defined = [&](int id) {
    const int root = g.storage_root(id);
    const ir::Storage st = g.value(root).storage;
    return st == ir::Storage::Input || st == ir::Storage::Constant || written.count(root) > 0;
  };
  for (const ir::Op& op : g.ops) {
    for (int in : op.inputs)
      if (in >= 0) CHECK_MESSAGE(defined(in), op.kind << " reads %" << in << " before anything writes it");
    for (int out : op.outputs) written.insert(g.storage_root(out));
  }
  for (const ir::GraphOutput& out : g.outputs) CHECK_MESSAGE(defined(out.value), "output " << out.name);
}

}  // namespace

TEST_CASE("cuda: NHWC forced on a graph whose converted values are also read in NCHW and returned") {
  // c1 = conv(x); c2 = conv(c1); e = exp(c2) (NHWC); v = a copy of c2 (an op with no NHWC
  // form: c2 comes back to NCHW first); c3 = conv(v) (unfolds v in NCHW in place); outputs
  // c3, c1 (converted, returned: back to NCHW at the end) and e.
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {1, 8, 10, 10}, "x");
  auto conv = [&](int in) {
    const int out = g.add_value(ir::DType::Float32, {1, 8, 10, 10});
    add_conv(g, in, g.add_f32_constant({8, 8, 3, 3}, std::vector<float>(576, 0.25f)), -1, out, 8, 8, 10, 3,
             1);
    return out;
  };
  const int c1 = conv(x), c2 = conv(c1);
  const int e = g.add_value(ir::DType::Float32, {1, 8, 10, 10});
  g.add_op(ir::kind::unary, {c2}, {e}, where(2)).attrs = {{"op", int64_t{2}}, {"a", 0.0}, {"b", 0.0}};
  const int v = g.add_value(ir::DType::Float32, {1, 8, 10, 10});
  g.add_op(ir::kind::copy, {c2}, {v}, where(3)).attrs = {
      {"dims", std::vector<int64_t>{1, 8, 10, 10}},
      {"src_strides", std::vector<int64_t>{800, 100, 10, 1}},
      {"dst_strides", std::vector<int64_t>{800, 100, 10, 1}},
      {"elem_size", int64_t{4}}};
  const int c3 = conv(v);
  g.outputs = {{c3, "c3"}, {c1, "c1"}, {e, "e"}};
  passes::run_default_passes(g, false);
  run_cuda_passes_nhwc(g, rt::cuda::Precision::Fp32);
  CHECK(count_kind(g, ir::kind::conv2d) == 0);
  CHECK(count_kind(g, ir::kind::im2col_nhwc) == 3);
  // Permuting copies: c2 before the copy reads it, then c3, c1 and e for the outputs.
  CHECK(count_kind(g, ir::kind::copy) == 1 + 4);
  for (const ir::GraphOutput& out : g.outputs) CHECK(g.value(out.value).shape == ir::Shape{1, 8, 10, 10});
  check_defined_before_use(g);
  // The third unfolding reads v (NCHW) in place.
  bool nchw_unfold = false;
  for (const ir::Op& op : g.ops)
    if (op.kind == ir::kind::im2col_nhwc && op.inputs[0] == v) nchw_unfold = op.b(ir::attr::nchw_input);
  CHECK(nchw_unfold);
  const codegen::Sources src =
      codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, {});
  CHECK(src.cuda);
}

namespace {

// A copy op permuting a dense 4-d value by `order` (out dim i is in dim order[i]), as the
// lowering of x.permute(...).contiguous() writes it.
void add_permute_copy(ir::Graph& g, int in, int out, const std::vector<int64_t>& order) {
  const ir::Shape s = g.value(in).shape;
  const std::vector<int64_t> dense = {s[1] * s[2] * s[3], s[2] * s[3], s[3], 1};
  std::vector<int64_t> dims(4), src(4);
  for (size_t i = 0; i < 4; ++i) {
    dims[i] = s[static_cast<size_t>(order[i])];
    src[i] = dense[static_cast<size_t>(order[i])];
  }
  g.add_op(ir::kind::copy, {in}, {out}, where(7)).attrs = {
      {"dims", dims},
      {"src_strides", src},
      {"dst_strides", std::vector<int64_t>{dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1}},
      {"elem_size", int64_t{4}},
      {"src_offset", int64_t{0}}};
}

// c1 = relu(conv3x3(x)); d = depthwise3x3(c1) + bias; p = d.permute(0, 2, 3, 1) (NHWC);
// e = exp(p); q = e.permute(0, 3, 1, 2); r = scale[8, 1, 1] * q + c1; a = mean of r's
// planes [1, 8, 1, 1]; c3 = conv3x3(r * a). Outputs c3, x.permute(0, 2, 3, 1) and, with
// return_q, q: a ConvNeXt block's permutes and layer scale, a squeeze-and-excitation gate.
ir::Graph convnext_like(bool return_q) {
  ir::Graph g;
  const int64_t c = 8, hw = 10;
  const ir::Shape nchw{1, c, hw, hw}, nhwc{1, hw, hw, c};
  const int x = g.add_input(ir::DType::Float32, nchw, "x");
  auto conv = [&](int in) {
    const int out = g.add_value(ir::DType::Float32, nchw);
    add_conv(g, in, g.add_f32_constant({c, c, 3, 3}, std::vector<float>(576, 0.125f)), -1, out, c, c, hw, 3,
             1);
    return out;
  };
  const int c1 = conv(x);
  g.ops.back().attrs[ir::attr::clamp_lo] = 0.0;
  std::vector<float> wd(static_cast<size_t>(c * 9));
  for (size_t i = 0; i < wd.size(); ++i) wd[i] = static_cast<float>(i);
  const int d = g.add_value(ir::DType::Float32, nchw);
  add_conv(g, c1, g.add_f32_constant({c, 1, 3, 3}, wd), g.add_f32_constant({c}, std::vector<float>(8, 0.5f)),
           d, c, c, hw, 3, c);
  const int p = g.add_value(ir::DType::Float32, nhwc);
  add_permute_copy(g, d, p, {0, 2, 3, 1});
  const int e = g.add_value(ir::DType::Float32, nhwc);
  g.add_op(ir::kind::unary, {p}, {e}, where(8)).attrs = {{"op", int64_t{2}}, {"a", 0.0}, {"b", 0.0}};
  const int q = g.add_value(ir::DType::Float32, nchw);
  add_permute_copy(g, e, q, {0, 3, 1, 2});
  const int scaled = g.add_value(ir::DType::Float32, nchw);
  g.add_op(ir::kind::binary, {g.add_f32_constant({c, 1, 1}, std::vector<float>(8, 0.75f)), q}, {scaled},
           where(9))
      .attrs = {{"op", int64_t{2}}, {"alpha", 1.0}};
  const int r = g.add_value(ir::DType::Float32, nchw);
  g.add_op(ir::kind::binary, {scaled, c1}, {r}, where(9)).attrs = {{"op", int64_t{0}}, {"alpha", 1.0}};
  const int a = g.add_value(ir::DType::Float32, {1, c, 1, 1});
  g.add_op(ir::kind::adaptive_avg_pool2d, {r}, {a}, where(10)).attrs = {
      {"n", int64_t{1}}, {"c", c}, {"h_in", hw}, {"w_in", hw}, {"h_out", int64_t{1}}, {"w_out", int64_t{1}}};
  const int gated = g.add_value(ir::DType::Float32, nchw);
  g.add_op(ir::kind::binary, {r, a}, {gated}, where(11)).attrs = {{"op", int64_t{2}}, {"alpha", 1.0}};
  const int c3 = conv(gated);
  const int px = g.add_value(ir::DType::Float32, nhwc);
  add_permute_copy(g, x, px, {0, 2, 3, 1});
  g.outputs = {{c3, "c3"}, {px, "px"}};
  if (return_q) g.outputs.push_back({q, "q"});
  return g;
}

}  // namespace

TEST_CASE("cuda: depthwise convolutions, permutes and per-channel broadcasts stay NHWC") {
  ir::Graph g = convnext_like(false);
  passes::run_default_passes(g, false);
  ops::cuda::check_cuda_support(g);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  check_defined_before_use(g);
  CHECK(count_kind(g, ir::kind::conv2d) == 0);
  REQUIRE(count_kind(g, ir::kind::depthwise_conv2d_nhwc) == 1);
  // Copies: the output c3 back to NCHW, and the permute of the input x (NCHW: it stays).
  CHECK(count_kind(g, ir::kind::copy) == 2);
  const ir::Op* dw = nullptr;
  const ir::Op* exp = nullptr;
  std::vector<const ir::Op*> muls;
  for (const ir::Op& op : g.ops) {
    if (op.kind == ir::kind::depthwise_conv2d_nhwc) dw = &op;
    if (op.kind == ir::kind::unary) exp = &op;
    if (op.kind == ir::kind::binary && op.i("op") == 2) muls.push_back(&op);
  }
  REQUIRE(dw);
  REQUIRE(exp);
  REQUIRE(muls.size() == 2);
  CHECK(g.value(dw->inputs[0]).shape == ir::Shape{1, 10, 10, 8});
  CHECK(g.value(dw->outputs[0]).shape == ir::Shape{1, 10, 10, 8});
  CHECK(g.value(dw->inputs[2]).shape == ir::Shape{8});
  // The weights as (kh, kw, c): W'[t * 8 + k] = W[k * 9 + t].
  const ir::Constant& w = g.constant_of(dw->inputs[1]);
  REQUIRE(w.shape == ir::Shape{3, 3, 8});
  for (int k : {0, 3, 7})
    for (int t : {0, 4, 8}) CHECK(w.f32()[t * 8 + k] == static_cast<float>(k * 9 + t));
  // exp reads the depthwise output's bytes through the permute's alias.
  CHECK(g.storage_root(exp->inputs[0]) == g.storage_root(dw->outputs[0]));
  // The layer scale [8, 1, 1] reads as [1, 1, 1, 8]; the gate is the pooling's NHWC result.
  CHECK(g.value(muls[0]->inputs[0]).shape == ir::Shape{1, 1, 1, 8});
  CHECK(g.value(muls[0]->inputs[1]).shape == ir::Shape{1, 10, 10, 8});
  CHECK(g.storage_root(muls[0]->inputs[1]) == g.storage_root(exp->outputs[0]));
  CHECK(g.value(muls[1]->inputs[1]).shape == ir::Shape{1, 1, 1, 8});
  const codegen::Sources src =
      codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, {});
  CHECK(src.model_cpp.find("aotc::rt::cuda::depthwise_conv2d_nhwc(stream, p, io, ") != std::string::npos);
}

TEST_CASE("cuda: ConvNeXt's layer scale after the permute back folds into the GEMM, its residual joins it") {
  // c1 = conv3x3(x); p = c1.permute(0, 2, 3, 1); y = p W^T + b (linear, 8 -> 8); q =
  // y.permute(0, 3, 1, 2); r = scale[8, 1, 1] * q + c1; out = conv3x3(r).
  ir::Graph g;
  const ir::Shape nchw{1, 8, 10, 10}, nhwc{1, 10, 10, 8};
  const int x = g.add_input(ir::DType::Float32, nchw, "x");
  auto conv = [&](int in) {
    const int out = g.add_value(ir::DType::Float32, nchw);
    add_conv(g, in, g.add_f32_constant({8, 8, 3, 3}, std::vector<float>(576, 0.125f)), -1, out, 8, 8, 10, 3,
             1);
    return out;
  };
  const int c1 = conv(x);
  const int p = g.add_value(ir::DType::Float32, nhwc);
  add_permute_copy(g, c1, p, {0, 2, 3, 1});
  std::vector<float> wv(64);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(i % 9) - 4.0f;
  const int w = g.add_f32_constant({8, 8}, wv);
  const int y = g.add_value(ir::DType::Float32, nhwc);
  ops::GemmShape shape;
  shape.m = 100;
  shape.n = 8;
  shape.k = 8;
  shape.trans_b = true;
  shape.bias_kind = rt::BiasKind::PerColumn;
  g.add_op(ir::kind::gemm, {p, w, g.add_f32_constant({8}, std::vector<float>(8, 1.0f))}, {y}, where(5))
      .attrs = ops::gemm_attrs(shape);
  const int q = g.add_value(ir::DType::Float32, nchw);
  add_permute_copy(g, y, q, {0, 3, 1, 2});
  std::vector<float> scale(8);
  for (size_t i = 0; i < scale.size(); ++i) scale[i] = 0.25f * static_cast<float>(i + 1);
  const int scaled = g.add_value(ir::DType::Float32, nchw);
  g.add_op(ir::kind::binary, {g.add_f32_constant({8, 1, 1}, scale), q}, {scaled}, where(6)).attrs = {
      {"op", static_cast<int64_t>(rt::BinaryOp::Mul)}, {"alpha", 1.0}};
  const int r = g.add_value(ir::DType::Float32, nchw);
  g.add_op(ir::kind::binary, {scaled, c1}, {r}, where(6)).attrs = {
      {"op", static_cast<int64_t>(rt::BinaryOp::Add)}, {"alpha", 1.0}};
  g.outputs = {{conv(r), "out"}};
  passes::run_default_passes(g, false);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  check_defined_before_use(g);
  CHECK(count_kind(g, ir::kind::binary) == 0);
  const ir::Op* linear = nullptr;
  for (const ir::Op& op : g.ops)
    if (op.kind == ir::kind::gemm && op.i("k") == 8 && !op.has(ir::attr::conv_geometry)) linear = &op;
  REQUIRE(linear);
  REQUIRE(linear->inputs.size() == 4);
  CHECK(g.storage_root(linear->inputs[3]) == g.storage_root(linear->inputs[0]));  // the residual: c1 in NHWC
  const ir::Constant& w2 = g.constant_of(linear->inputs[1]);
  const ir::Constant& b2 = g.constant_of(linear->inputs[2]);
  for (size_t j = 0; j < 8; ++j) {
    CHECK(b2.f32()[j] == scale[j]);
    for (size_t k : {size_t{0}, size_t{5}}) CHECK(w2.f32()[j * 8 + k] == wv[j * 8 + k] * scale[j]);
  }
}

TEST_CASE("cuda: a gate of the pooled features' shape with no NHWC form reads its NCHW bytes") {
  // c2 = conv(conv(x)); a = mean of c2's planes [1, 8, 1, 1] (NHWC); out = a * gate, gate a
  // model input of a's shape: on one-pixel planes its bytes are NHWC's too (at larger
  // sizes it would be a broadcast operand), so the product converts.
  ir::Graph g;
  const ir::Shape nchw{1, 8, 10, 10};
  const int x = g.add_input(ir::DType::Float32, nchw, "x");
  const int gate = g.add_input(ir::DType::Float32, {1, 8, 1, 1}, "gate");
  int c = x;
  for (int i = 0; i < 2; ++i) {
    const int out = g.add_value(ir::DType::Float32, nchw);
    add_conv(g, c, g.add_f32_constant({8, 8, 3, 3}, std::vector<float>(576, 0.125f)), -1, out, 8, 8, 10, 3,
             1);
    c = out;
  }
  const int a = g.add_value(ir::DType::Float32, {1, 8, 1, 1});
  g.add_op(ir::kind::adaptive_avg_pool2d, {c}, {a}, where(3)).attrs = {
      {"n", int64_t{1}},     {"c", int64_t{8}},     {"h_in", int64_t{10}},
      {"w_in", int64_t{10}}, {"h_out", int64_t{1}}, {"w_out", int64_t{1}}};
  const int out = g.add_value(ir::DType::Float32, {1, 8, 1, 1});
  g.add_op(ir::kind::binary, {a, gate}, {out}, where(4)).attrs = {
      {"op", static_cast<int64_t>(rt::BinaryOp::Mul)}, {"alpha", 1.0}};
  g.outputs = {{out, "out"}};
  passes::run_default_passes(g, false);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  check_defined_before_use(g);
  CHECK(count_kind(g, ir::kind::copy) == 0);
  const ir::Op& mul = g.ops.back();
  REQUIRE(mul.kind == ir::kind::binary);
  CHECK(g.value(mul.outputs[0]).shape == ir::Shape{1, 1, 1, 8});
  CHECK(g.value(mul.inputs[1]).shape == ir::Shape{1, 1, 1, 8});
  CHECK(g.storage_root(mul.inputs[1]) == gate);
}

TEST_CASE("cuda: a permute back to NCHW that is returned is copied once, from its NHWC input") {
  ir::Graph g = convnext_like(true);
  passes::run_default_passes(g, false);
  run_cuda_passes_nhwc(g, rt::cuda::Precision::Fp32);
  check_defined_before_use(g);
  REQUIRE(count_kind(g, ir::kind::copy) == 3);  // c3 and q back to NCHW, x's permute
  const ir::Op& q_copy = g.ops.back();
  REQUIRE(q_copy.kind == ir::kind::copy);
  CHECK(q_copy.outputs[0] == g.outputs[2].value);
  CHECK(g.value(q_copy.inputs[0]).shape == ir::Shape{1, 10, 10, 8});  // exp's result
  CHECK(q_copy.ints("src_strides") == std::vector<int64_t>{800, 1, 80, 8});
}

TEST_CASE("cuda: a convolution whose result is returned through a view of another shape stays NCHW") {
  // y = relu(conv2(conv1(x)).view(1, 4, 20, 10)): fuse_activation moves the relu onto conv2,
  // whose output becomes the [1, 4, 20, 10] view; NHWC bytes there would be permuted wrongly.
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {1, 8, 10, 10}, "x");
  const int c1 = g.add_value(ir::DType::Float32, {1, 8, 10, 10});
  add_conv(g, x, g.add_f32_constant({8, 8, 3, 3}, std::vector<float>(576, 0.25f)), -1, c1, 8, 8, 10, 3, 1);
  const int c2 = g.add_value(ir::DType::Float32, {1, 8, 10, 10});
  add_conv(g, c1, g.add_f32_constant({8, 8, 3, 3}, std::vector<float>(576, 0.5f)), -1, c2, 8, 8, 10, 3, 1);
  const int view = g.add_alias(c2, {1, 4, 20, 10});
  const int y = g.add_value(ir::DType::Float32, {1, 4, 20, 10});
  g.add_op(ir::kind::unary, {view}, {y}, where(2)).attrs = {{"op", int64_t{1}}, {"a", 0.0}, {"b", 0.0}};
  g.outputs.push_back({y, "y"});
  passes::run_default_passes(g, false);
  REQUIRE(g.ops.size() == 2);
  REQUIRE(g.value(g.ops[1].outputs[0]).shape == ir::Shape{1, 4, 20, 10});  // the relu, fused
  run_cuda_passes_nhwc(g, rt::cuda::Precision::Fp32);
  CHECK(count_kind(g, ir::kind::conv2d) == 1);  // conv2, in NCHW; conv1 in NHWC, copied back for it
  CHECK(count_kind(g, ir::kind::im2col_nhwc) == 1);
  CHECK(g.ops.back().kind == ir::kind::conv2d);
  CHECK(g.ops.back().outputs[0] == y);
  check_defined_before_use(g);
}

TEST_CASE("cuda: AOTC_CUDA_LAYOUT other than nchw or nhwc is refused") {
  ir::Graph g = small_resnet(false);
  passes::run_default_passes(g, false);
  ::setenv("AOTC_CUDA_LAYOUT", "NHWC ", 1);
  CHECK_THROWS_WITH_AS(passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false),
                       doctest::Contains("AOTC_CUDA_LAYOUT is 'NHWC '"), CompileError);
  ::unsetenv("AOTC_CUDA_LAYOUT");
}

TEST_CASE("cuda: the implicit GEMM splits K only when its tiles cannot fill the GPU") {
  rt::Conv2dParams p;
  p.n = 1, p.c_in = 512, p.h_in = p.w_in = 7, p.c_out = 512, p.h_out = p.w_out = 7;
  p.kernel_h = p.kernel_w = 3, p.pad_h = p.pad_w = 1;
  // 8 x 1 tiles, K = 4608 (144 steps): split 8 ways, 18 steps each.
  CHECK(rt::cuda::implicit_gemm_splits(p) == 8);
  CHECK(rt::cuda::conv2d_scratch_bytes(p, rt::cuda::Conv2dPath::ImplicitGemm, true) == 8 * 512 * 49 * 4);
  p.n = 32;  // 8 x 25 tiles
  CHECK(rt::cuda::implicit_gemm_splits(p) == 2);
  p.n = 64;  // 8 x 49 tiles: enough
  CHECK(rt::cuda::implicit_gemm_splits(p) == 1);
  CHECK(rt::cuda::conv2d_scratch_bytes(p, rt::cuda::Conv2dPath::ImplicitGemm, true) == 0);
}

namespace {

// The attributes of self-attention over a [2, 3, 4] tensor (2 batches, 1 head, 3 tokens of
// 4, scale 0.5, no weights), with the mask kind and strides given.
std::map<std::string, ir::Attr> self_attention_2x3x4(int64_t mask_kind, std::vector<int64_t> mask_strides) {
  return {{"batch", int64_t{2}},
          {"heads", int64_t{1}},
          {"q_len", int64_t{3}},
          {"kv_len", int64_t{3}},
          {"head_dim", int64_t{4}},
          {"v_head_dim", int64_t{4}},
          {"scale", 0.5},
          {"causal", false},
          {"q_strides", std::vector<int64_t>{12, 0, 4}},
          {"k_strides", std::vector<int64_t>{12, 0, 4}},
          {"v_strides", std::vector<int64_t>{12, 0, 4}},
          {ir::attr::out_strides, std::vector<int64_t>{12, 0, 4}},
          {"mask_kind", mask_kind},
          {"mask_strides", std::move(mask_strides)},
          {"weights", int64_t{0}},
          {"q_offset", int64_t{0}},
          {"k_offset", int64_t{0}},
          {"v_offset", int64_t{0}}};
}

}  // namespace

TEST_CASE("cuda: embedding ids and attention masks may be integers and bools, their data not") {
  ir::Graph g;
  const int table = g.add_f32_constant({10, 4}, std::vector<float>(40, 0.25f));
  const int ids = g.add_input(ir::DType::Int64, {2, 3}, "ids");
  const int mask = g.add_input(ir::DType::Bool, {2, 3}, "mask");
  const int x = g.add_value(ir::DType::Float32, {2, 3, 4});
  g.add_op(ir::kind::embedding, {table, ids}, {x}, where(1)).attrs = {
      {"count", int64_t{6}}, {"dim", int64_t{4}}, {"vocab", int64_t{10}}, {"ids_int32", false}};
  // Self-attention over x: 2 batches, 1 head, 3 tokens of 4, a bool key mask [2, 1, 1, 3].
  const int y = g.add_value(ir::DType::Float32, {2, 3, 4});
  ir::Op& att = g.add_op(ir::kind::attention, {x, x, x, mask}, {y}, where(2));
  att.attrs = self_attention_2x3x4(2, {3, 0, 0, 1});
  const int z = g.add_value(ir::DType::Float32, {2, 3, 4});
  g.add_op(ir::kind::layer_norm, {y, -1, -1}, {z}, where(3)).attrs = {
      {"rows", int64_t{6}}, {"cols", int64_t{4}}, {"eps", 1e-5}};
  g.outputs.push_back({z, "z"});
  ops::cuda::check_cuda_support(g);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  // The scores of every (batch, head): 2 x 1 x 3 x 3 floats of arena scratch.
  CHECK(g.ops[1].scratch_bytes == 2 * 3 * 3 * 4);
  const codegen::Sources src =
      codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, {});
  CHECK(src.model_cpp.find("aotc::rt::cuda::embedding_f32(stream, p, ") != std::string::npos);
  CHECK(src.model_cpp.find("aotc::rt::cuda::attention_f32(ex, p, ") != std::string::npos);
  CHECK(src.model_cpp.find("aotc::rt::cuda::layer_norm_f32(stream, p, ") != std::string::npos);

  // The same bool tensor as data of a float op is refused.
  ir::Graph bad;
  const int b = bad.add_input(ir::DType::Bool, {4}, "b");
  const int out = bad.add_value(ir::DType::Float32, {4});
  bad.add_op(ir::kind::layer_norm, {b, -1, -1}, {out}, where(9)).attrs = {
      {"rows", int64_t{1}}, {"cols", int64_t{4}}, {"eps", 1e-5}};
  bad.outputs.push_back({out, "out"});
  CHECK_THROWS_WITH_AS(ops::cuda::check_cuda_support(bad), doctest::Contains("bool"), CompileError);
}

TEST_CASE("cuda: --cuda-arch parsing") {
  CHECK(codegen::cuda::parse_cuda_arch("sm_90") == 90);
  CHECK(codegen::cuda::parse_cuda_arch("sm_80") == 80);
  CHECK(codegen::cuda::parse_cuda_arch("sm_120") == 120);
  for (const char* bad : {"sm_61", "90", "sm_", "sm_9a", "compute_90", "sm_1234", ""})
    CHECK_THROWS_AS(codegen::cuda::parse_cuda_arch(bad), CompileError);
}

TEST_CASE("cuda: a linear layer's GELU becomes the GEMM's epilogue, unless the GEMM's result is read again") {
  // y = gelu(x W1^T) (fused); z = gelu(y W2^T) + y W2^T (not: the product is read twice).
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {2, 8}, "x");
  const auto linear = [&](int in, int n) {
    const int w = g.add_f32_constant({n, 8}, std::vector<float>(static_cast<size_t>(n) * 8, 0.25f));
    const int out = g.add_value(ir::DType::Float32, {2, n});
    g.add_op(ir::kind::gemm, {in, w, -1}, {out}, where(1)).attrs = {{"m", int64_t{2}},
                                                                    {"n", int64_t{n}},
                                                                    {"k", int64_t{8}},
                                                                    {"trans_a", false},
                                                                    {"trans_b", true},
                                                                    {"lda", int64_t{8}},
                                                                    {"ldb", int64_t{8}},
                                                                    {"ldc", int64_t{n}},
                                                                    {"alpha", 1.0},
                                                                    {"beta", 1.0},
                                                                    {"bias_kind", int64_t{0}},
                                                                    {ir::attr::clamp_lo, -INFINITY},
                                                                    {ir::attr::clamp_hi, INFINITY}};
    return out;
  };
  const auto gelu = [&](int in) {
    const int out = g.add_value(ir::DType::Float32, g.value(in).shape);
    g.add_op(ir::kind::unary, {in}, {out}, where(2)).attrs = {
        {"op", static_cast<int64_t>(rt::UnaryOp::GeluErf)}, {"a", 0.0}, {"b", 0.0}};
    return out;
  };
  const int y = gelu(linear(x, 8));
  const int p = linear(y, 8);
  const int z = g.add_value(ir::DType::Float32, {2, 8});
  g.add_op(ir::kind::binary, {gelu(p), p}, {z}, where(3)).attrs = {
      {"op", static_cast<int64_t>(rt::BinaryOp::Add)}, {"alpha", 1.0}};
  g.outputs.push_back({z, "z"});
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  int fused = 0, unary = 0;
  for (const ir::Op& op : g.ops) {
    if (op.kind == ir::kind::gemm && op.has(ir::attr::activation)) {
      ++fused;
      CHECK(op.i(ir::attr::activation) == static_cast<int64_t>(rt::GemmActivation::GeluErf));
    }
    unary += op.kind == ir::kind::unary;
  }
  CHECK(fused == 1);
  CHECK(unary == 1);
  codegen::cuda::CudaOptions options;
  const codegen::Sources src =
      codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, options);
  CHECK(src.model_cpp.find("static_cast<aotc::rt::GemmActivation>(1)") != std::string::npos);
}

namespace {

// y = conv3d(x, w) with a constant weight: n x c_in x in -> c_out, the given kernel, stride
// and padding (no bias).
ir::Graph conv3d_graph(int64_t c_in, int64_t c_out, std::vector<int64_t> in, std::vector<int64_t> kernel,
                       int64_t stride, std::vector<int64_t> pad, std::vector<float>& w) {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {1, c_in, in[0], in[1], in[2]}, "x");
  std::vector<int64_t> out(3);
  for (int d = 0; d < 3; ++d) out[d] = (in[d] + 2 * pad[d] - kernel[d]) / stride + 1;
  w.resize(static_cast<size_t>(c_out * c_in * kernel[0] * kernel[1] * kernel[2]));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  const int wid = g.add_f32_constant({c_out, c_in, kernel[0], kernel[1], kernel[2]}, w, "w");
  const int y = g.add_value(ir::DType::Float32, {1, c_out, out[0], out[1], out[2]});
  g.add_op(ir::kind::conv3d, {x, wid, -1}, {y}, where(7)).attrs = {
      {"n", int64_t{1}},
      {"c_in", c_in},
      {"c_out", c_out},
      {"groups", int64_t{1}},
      {"in", in},
      {"out", out},
      {"kernel", kernel},
      {"stride", std::vector<int64_t>(3, stride)},
      {"padding", pad},
      {"dilation", std::vector<int64_t>(3, 1)},
      {ir::attr::clamp_lo, -INFINITY},
      {ir::attr::clamp_hi, INFINITY}};
  g.outputs.push_back({y, "y"});
  return g;
}

}  // namespace

TEST_CASE("cuda: stride-1 3x3x3 and 1x3x3 conv3d run by Winograd with weights transformed at compile time") {
  struct Case {
    std::vector<int64_t> kernel, pad;
    int64_t stride;
    rt::cuda::Precision precision;
    bool winograd_option;
    int64_t tile;  // 0: the GEMM path
  };
  const Case cases[] = {
      {{3, 3, 3}, {1, 1, 1}, 1, rt::cuda::Precision::Fp32, true, 4},
      {{1, 3, 3}, {0, 1, 1}, 1, rt::cuda::Precision::Fp32, true, 4},
      {{3, 3, 3}, {1, 1, 1}, 1, rt::cuda::Precision::Tf32, true, 2},
      {{3, 3, 3}, {1, 1, 1}, 1, rt::cuda::Precision::Fp16, true, 2},
      {{3, 3, 3}, {1, 1, 1}, 1, rt::cuda::Precision::Fp32, false, 0},  // --winograd off
      {{3, 3, 3}, {1, 1, 1}, 2, rt::cuda::Precision::Fp32, true, 0},   // strided
      {{3, 1, 1}, {1, 0, 0}, 1, rt::cuda::Precision::Fp32, true, 0},   // temporal only
      {{1, 3, 3}, {1, 1, 1}, 1, rt::cuda::Precision::Fp32, true, 0},   // a depth pad with a depth kernel of 1
  };
  for (const Case& c : cases) {
    CAPTURE(c.tile);
    std::vector<float> w;
    ir::Graph g = conv3d_graph(5, 6, {4, 9, 10}, c.kernel, c.stride, c.pad, w);
    ops::cuda::check_cuda_support(g);
    passes::cuda::run_cuda_passes(g, c.precision, false, c.winograd_option);
    const ir::Op& conv = g.ops.back();
    REQUIRE(conv.kind == ir::kind::conv3d);
    const rt::ConvNdParams p = ops::conv_nd_params_of(conv);
    const codegen::Sources src =
        codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, {});
    if (c.tile == 0) {
      CHECK_FALSE(conv.has(ir::attr::winograd));
      CHECK(src.model_cpp.find("aotc::rt::cuda::conv3d_f32(ex, p, ") != std::string::npos);
      continue;
    }
    REQUIRE(conv.has(ir::attr::winograd));
    CHECK(conv.i(ir::attr::winograd) == c.tile);
    const int64_t points = rt::cuda::conv3d_winograd_points(p, c.tile);
    CHECK(points ==
          (c.kernel[0] == 3 ? (c.tile + 2) * (c.tile + 2) * (c.tile + 2) : (c.tile + 2) * (c.tile + 2)));
    CHECK(g.value(conv.inputs[1]).shape == ir::Shape{points, 6, 5});
    std::vector<float> u(static_cast<size_t>(points * 30));
    rt::cuda::conv3d_winograd_weights(p, c.tile, w.data(), u.data());
    const float* const got = passes::constant_floats(g, conv.inputs[1], points * 30);
    REQUIRE(got != nullptr);
    CHECK(std::vector<float>(got, got + u.size()) == u);
    CHECK(conv.scratch_bytes == rt::cuda::conv3d_winograd_scratch_bytes(p, c.tile));
    CHECK(src.model_cpp.find("aotc::rt::cuda::conv3d_winograd_f32(ex, p, " + std::to_string(c.tile) + ", ") !=
          std::string::npos);
  }
}

TEST_CASE("cuda: the Winograd conv3d weight transform is G g G^T along each dimension of 3") {
  // One input and output channel, weights of one tap at a time: u at point (a, b, c) must be
  // G[a][kd] G[b][kh] G[c][kw] (F(4, 3)), and for a 1x3x3 kernel G[b][kh] G[c][kw].
  for (const int64_t kd : {1, 3}) {
    rt::ConvNdParams p;
    p.c_in = p.c_out = 1;
    p.kernel[0] = kd;
    p.kernel[1] = p.kernel[2] = 3;
    const double* const g = rt::winograd_g(4)[0];
    const int64_t ad = kd == 3 ? 6 : 1, points = rt::cuda::conv3d_winograd_points(p, 4);
    for (int64_t tap = 0; tap < kd * 9; ++tap) {
      std::vector<float> w(static_cast<size_t>(kd * 9), 0.0f), u(static_cast<size_t>(points));
      w[static_cast<size_t>(tap)] = 1.0f;
      rt::cuda::conv3d_winograd_weights(p, 4, w.data(), u.data());
      const int64_t td = tap / 9, th = tap / 3 % 3, tw = tap % 3;
      for (int64_t a = 0; a < ad; ++a)
        for (int64_t b = 0; b < 6; ++b)
          for (int64_t c = 0; c < 6; ++c) {
            const double want = (kd == 3 ? g[a * 3 + td] : 1.0) * g[b * 3 + th] * g[c * 3 + tw];
            CHECK(u[static_cast<size_t>((a * 6 + b) * 6 + c)] == doctest::Approx(want).epsilon(1e-6));
          }
    }
  }
}

namespace {

// A copy of `src` (shape from) through a permutation of its dims into a dense new value, as
// a permute + contiguous lowers.
int permute_copy(ir::Graph& g, int src, const std::vector<int64_t>& order) {
  const ir::Shape& from = g.value(src).shape;
  std::vector<int64_t> dense(from.size(), 1), dims, strides;
  for (size_t d = from.size() - 1; d-- > 0;) dense[d] = dense[d + 1] * from[d + 1];
  for (int64_t o : order) {
    dims.push_back(from[static_cast<size_t>(o)]);
    strides.push_back(dense[static_cast<size_t>(o)]);
  }
  std::vector<int64_t> out_dense(dims.size(), 1);
  for (size_t d = dims.size() - 1; d-- > 0;) out_dense[d] = out_dense[d + 1] * dims[d + 1];
  const int out = g.add_value(ir::DType::Float32, dims);
  g.add_op(ir::kind::copy, {src}, {out}, where(5)).attrs = {{"dims", dims},
                                                            {"src_strides", strides},
                                                            {"dst_strides", out_dense},
                                                            {"elem_size", int64_t{4}},
                                                            {"src_offset", int64_t{0}}};
  return out;
}

}  // namespace

TEST_CASE("cuda: a Swin block's shift and window partition become the order its layer norm reads rows in") {
  // x [1, 4, 4, 8] -> layer_norm -> roll(-1, -1) over h, w -> windows of 2 x 2:
  // [1, 2, 2, 2, 2, 8] read as (wh, i, ww, j) -> (wh, ww, i, j). Then the reverse and the
  // residual: windows -> [1, 4, 4, 8] + x.
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {1, 4, 4, 8}, "x");
  const int y = g.add_value(ir::DType::Float32, {1, 4, 4, 8});
  g.add_op(ir::kind::layer_norm, {x, -1, -1}, {y}, where(1)).attrs = {
      {"rows", int64_t{16}}, {"cols", int64_t{8}}, {"eps", 1e-5}};
  // roll by -1 along h and w: output [0, 3) from input [1, 4), output 3 from input 0.
  const int rolled = g.add_value(ir::DType::Float32, {1, 4, 4, 8});
  std::vector<int64_t> ranks, src_off, dst_off, dims, src_strides, dst_strides, inputs;
  for (int hp = 0; hp < 2; ++hp)
    for (int wp = 0; wp < 2; ++wp) {
      const int64_t h0 = hp ? 3 : 0, hn = hp ? 1 : 3, hs = hp ? 0 : 1;
      const int64_t w0 = wp ? 3 : 0, wn = wp ? 1 : 3, ws = wp ? 0 : 1;
      inputs.push_back(0);
      ranks.push_back(4);
      src_off.push_back(hs * 32 + ws * 8);
      dst_off.push_back(h0 * 32 + w0 * 8);
      dims.insert(dims.end(), {1, hn, wn, 8});
      src_strides.insert(src_strides.end(), {128, 32, 8, 1});
      dst_strides.insert(dst_strides.end(), {128, 32, 8, 1});
    }
  g.add_op(ir::kind::assemble, {y}, {rolled}, where(2)).attrs = {
      {"piece_input", inputs},           {"piece_rank", ranks}, {"piece_src_offset", src_off},
      {"piece_dst_offset", dst_off},     {"piece_dims", dims},  {"piece_src_strides", src_strides},
      {"piece_dst_strides", dst_strides}};
  const int windows = permute_copy(g, g.add_alias(rolled, {1, 2, 2, 2, 2, 8}), {0, 1, 3, 2, 4, 5});
  const int back = permute_copy(g, windows, {0, 1, 3, 2, 4, 5});
  const int sum = g.add_value(ir::DType::Float32, {1, 4, 4, 8});
  g.add_op(ir::kind::binary, {x, g.add_alias(back, {1, 4, 4, 8})}, {sum}, where(6)).attrs = {
      {"op", static_cast<int64_t>(rt::BinaryOp::Add)}, {"alpha", 1.0}};
  g.outputs.push_back({windows, "windows"});
  g.outputs.push_back({sum, "sum"});
  // A transpose of the channels is no row order: it stays a copy.
  const int transposed = permute_copy(g, x, {0, 1, 3, 2});
  g.outputs.push_back({transposed, "transposed"});

  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  std::vector<std::string> kinds;
  for (const ir::Op& op : g.ops) kinds.push_back(op.kind);
  CHECK(kinds == std::vector<std::string>{"layer_norm", "gather_rows", "copy"});
  const ir::Op& ln = g.ops[0];
  REQUIRE(ln.inputs.size() == 4);
  CHECK(ln.outputs[0] == windows);
  // Output row (wh, ww, i, j) normalises input row ((2 wh + i + 1) % 4, (2 ww + j + 1) % 4).
  std::vector<int32_t> want;
  for (int wh = 0; wh < 2; ++wh)
    for (int ww = 0; ww < 2; ++ww)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) want.push_back((2 * wh + i + 1) % 4 * 4 + (2 * ww + j + 1) % 4);
  const ir::Constant& order = g.constant_of(ln.inputs[3]);
  std::vector<int32_t> got(order.bytes.size() / 4);
  std::memcpy(got.data(), order.bytes.data(), order.bytes.size());
  CHECK(got == want);
  CHECK(ln.i("row_period") == 16);
  CHECK(ln.i("row_src_period") == 16);
  // The reverse partition and the residual add: one gather of 2 x 8 floats a row (a window
  // row's two tokens are adjacent in the image too), x added.
  const ir::Op& gather = g.ops[1];
  CHECK(gather.outputs[0] == sum);
  CHECK(gather.inputs[0] == windows);
  CHECK(gather.inputs[2] == x);
  CHECK(gather.i("cols") == 16);
  CHECK(gather.i("rows") == 8);
  codegen::cuda::CudaOptions options;
  const codegen::Sources src =
      codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, options);
  CHECK(src.model_cpp.find("aotc::rt::cuda::gather_rows_f32(stream, 8, 16, aotc::rt::cuda::RowGather{") !=
        std::string::npos);
  CHECK(src.model_cpp.find("aotc::rt::cuda::RowGather{") < src.model_cpp.find("gather_rows_f32"));
}

TEST_CASE("cuda: a copy that moves long runs gathers rows of at most 1024 floats; one copy alone stays") {
  // y = x.clone() + w: the copy and the add become one gather of rows that fill the GPU, not
  // one row of 6000 floats. z = x.clone() alone stays a copy (one launch either way).
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {2, 3000}, "x");
  const int w = g.add_input(ir::DType::Float32, {2, 3000}, "w");
  const int copy = permute_copy(g, x, {0, 1});
  const int y = g.add_value(ir::DType::Float32, {2, 3000});
  g.add_op(ir::kind::binary, {copy, w}, {y}, where(6)).attrs = {
      {"op", static_cast<int64_t>(rt::BinaryOp::Add)}, {"alpha", 1.0}};
  const int z = permute_copy(g, x, {0, 1});
  g.outputs = {{y, "y"}, {z, "z"}};
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  REQUIRE(g.ops.size() == 2);
  CHECK(g.ops[0].kind == ir::kind::gather_rows);
  CHECK(g.ops[0].outputs[0] == y);
  CHECK(g.ops[0].i("cols") == 1000);  // the widest multiple of 4 up to 1024 dividing 6000
  CHECK(g.ops[0].i("rows") == 6);
  CHECK(g.ops[0].i("row_period") == 1);  // an identity order repeats after every row
  CHECK(g.ops[1].kind == ir::kind::copy);
}

TEST_CASE("cuda: a flip and a crop compose into one row order per image; a pad by a nonzero value stays") {
  // x [2, 6, 6, 8]: f = x.flip(1) (a copy walking h backwards), c = f[:, 1:5, 0:3] (a copy):
  // out (b, i, j) reads x (b, 4 - i, j); a row of three tokens is contiguous in x.
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {2, 6, 6, 8}, "x");
  const int f = g.add_value(ir::DType::Float32, {2, 6, 6, 8});
  g.add_op(ir::kind::copy, {x}, {f}, where(1)).attrs = {{"dims", std::vector<int64_t>{2, 6, 6, 8}},
                                                        {"src_strides", std::vector<int64_t>{288, -48, 8, 1}},
                                                        {"dst_strides", std::vector<int64_t>{288, 48, 8, 1}},
                                                        {"elem_size", int64_t{4}},
                                                        {"src_offset", int64_t{5 * 48}}};
  const int c = g.add_value(ir::DType::Float32, {2, 4, 3, 8});
  g.add_op(ir::kind::copy, {f}, {c}, where(2)).attrs = {{"dims", std::vector<int64_t>{2, 4, 3, 8}},
                                                        {"src_strides", std::vector<int64_t>{288, 48, 8, 1}},
                                                        {"dst_strides", std::vector<int64_t>{96, 24, 8, 1}},
                                                        {"elem_size", int64_t{4}},
                                                        {"src_offset", int64_t{48}}};
  // p = pad(x2, value=1) to [1, 4, 4, 8], then its 2 x 2 windows: the fill is no source row.
  const int x2 = g.add_input(ir::DType::Float32, {1, 3, 3, 8}, "x2");
  const int p = g.add_value(ir::DType::Float32, {1, 4, 4, 8});
  g.add_op(ir::kind::assemble, {x2}, {p}, where(3)).attrs = {
      {"piece_input", std::vector<int64_t>{0}},
      {"piece_rank", std::vector<int64_t>{4}},
      {"piece_src_offset", std::vector<int64_t>{0}},
      {"piece_dst_offset", std::vector<int64_t>{0}},
      {"piece_dims", std::vector<int64_t>{1, 3, 3, 8}},
      {"piece_src_strides", std::vector<int64_t>{72, 24, 8, 1}},
      {"piece_dst_strides", std::vector<int64_t>{128, 32, 8, 1}},
      {"fill", std::vector<int64_t>{0x00, 0x00, 0x80, 0x3f}}};
  const int windows = permute_copy(g, g.add_alias(p, {1, 2, 2, 2, 2, 8}), {0, 1, 3, 2, 4, 5});
  g.outputs = {{c, "c"}, {windows, "windows"}};
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  std::vector<std::string> kinds;
  for (const ir::Op& op : g.ops) kinds.push_back(op.kind);
  CHECK(kinds == std::vector<std::string>{"gather_rows", "assemble", "copy"});
  const ir::Op& gather = g.ops[0];
  CHECK(gather.inputs[0] == x);
  CHECK(gather.outputs[0] == c);
  CHECK(gather.inputs[2] == -1);
  CHECK(gather.i("cols") == 24);  // three tokens of 8
  CHECK(gather.i("rows") == 8);
  CHECK(gather.i("row_period") == 4);       // one image's rows
  CHECK(gather.i("row_src_period") == 12);  // the next image's rows are 12 rows of 24 on
  const ir::Constant& order = g.constant_of(gather.inputs[1]);
  std::vector<int32_t> got(order.bytes.size() / 4);
  std::memcpy(got.data(), order.bytes.data(), order.bytes.size());
  CHECK(got == std::vector<int32_t>{8, 6, 4, 2});  // x's rows 4, 3, 2, 1 of 6 tokens, 2 rows each
}

namespace {

// y (m x n) = clamp(x (m x k) W^T + bias (+ residual)), W and bias constants; relu or none.
void add_linear(ir::Graph& g, int x, int y, int64_t m, int64_t n, int64_t k, bool relu, int residual = -1) {
  std::vector<float> w(static_cast<size_t>(n * k)), b(static_cast<size_t>(n));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) * 0.125f - 0.375f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 3) * 0.5f;
  const int wid = g.add_f32_constant({n, k}, w), bid = g.add_f32_constant({n}, b);
  std::vector<int> inputs = {x, wid, bid};
  if (residual >= 0) inputs.push_back(residual);
  ops::GemmShape shape;
  shape.m = m, shape.n = n, shape.k = k;
  shape.trans_b = true;
  shape.bias_kind = rt::BiasKind::PerColumn;
  ir::Op& op = g.add_op(ir::kind::gemm, inputs, {y}, where(2));
  op.attrs = ops::gemm_attrs(shape);
  if (relu) op.attrs[ir::attr::clamp_lo] = 0.0;
}

// h1 = relu(x W1^T + b1); h2 = h1 W2^T + b2; h3 = relu(h2 W3^T + b3 + h1); y = h3 W4^T + b4.
ir::Graph four_linear_layers(bool return_h2) {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {5, 12}, "x");
  const int h1 = g.add_value(ir::DType::Float32, {5, 16}, "h1"),
            h2 = g.add_value(ir::DType::Float32, {5, 16}, "h2"),
            h3 = g.add_value(ir::DType::Float32, {5, 16}, "h3"),
            y = g.add_value(ir::DType::Float32, {5, 3}, "y");
  add_linear(g, x, h1, 5, 16, 12, true);
  add_linear(g, h1, h2, 5, 16, 16, false);
  add_linear(g, h2, h3, 5, 16, 16, true, h1);
  add_linear(g, h3, y, 5, 3, 16, false);
  g.outputs.push_back({y, "y"});
  if (return_h2) g.outputs.push_back({h2, "h2"});
  return g;
}

}  // namespace

TEST_CASE("cuda: fp16 and bf16 keep activations 16-bit where only 16-bit GEMM operands read them") {
  for (const auto precision : {rt::cuda::Precision::Fp16, rt::cuda::Precision::Bf16}) {
    const ir::DType type = precision == rt::cuda::Precision::Fp16 ? ir::DType::Float16 : ir::DType::BFloat16;
    for (const bool return_h2 : {false, true}) {
      CAPTURE(return_h2);
      ir::Graph g = four_linear_layers(return_h2);
      passes::run_default_passes(g, false);
      ops::cuda::check_cuda_support(g);
      passes::cuda::run_cuda_passes(g, precision, false);
      std::vector<const ir::Op*> gemms;
      for (const ir::Op& op : g.ops)
        if (op.kind == ir::kind::gemm) gemms.push_back(&op);
      REQUIRE(gemms.size() == 4);
      const auto kept = [&](const ir::Op* op) {
        return op->has(ir::attr::c_16bit) && op->b(ir::attr::c_16bit);
      };
      // h1: read as g2's operand and as g3's residual, whose own output is kept.
      CHECK(kept(gemms[0]));
      CHECK(g.value(gemms[0]->outputs[0]).dtype == type);
      CHECK(g.value(gemms[0]->inputs[2]).dtype == type);  // the bias, converted for cuBLASLt
      CHECK_FALSE(gemms[0]->b(ir::attr::a_16bit));        // x: a float32 input, rounded
      // h2: returned, it stays float32 and g3 rounds it.
      CHECK(kept(gemms[1]) == !return_h2);
      CHECK(g.value(gemms[1]->outputs[0]).dtype == (return_h2 ? ir::DType::Float32 : type));
      CHECK(gemms[1]->b(ir::attr::a_16bit));
      CHECK(gemms[2]->b(ir::attr::a_16bit) == !return_h2);
      CHECK(kept(gemms[2]));
      CHECK(g.value(gemms[2]->inputs[3]).dtype == type);
      // y: returned, float32, and its bias too.
      CHECK_FALSE(kept(gemms[3]));
      CHECK(g.value(gemms[3]->outputs[0]).dtype == ir::DType::Float32);
      CHECK(g.value(gemms[3]->inputs[2]).dtype == ir::DType::Float32);
      CHECK(gemms[3]->b(ir::attr::a_16bit));
      // No rounding scratch for the 16-bit operands.
      CHECK(gemms[3]->scratch_bytes == 0);
      codegen::cuda::CudaOptions options;
      options.precision = precision == rt::cuda::Precision::Fp16 ? "fp16" : "bf16";
      const codegen::Sources src =
          codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, options);
      size_t calls = 0;
      for (size_t at = src.model_cpp.find("gemm_16bit_output(ex, p, "); at != std::string::npos;
           at = src.model_cpp.find("gemm_16bit_output(ex, p, ", at + 1))
        ++calls;
      CHECK(calls == (return_h2 ? 2u : 3u));
    }
  }
  // fp32 and tf32: every activation float32.
  for (const auto precision : {rt::cuda::Precision::Fp32, rt::cuda::Precision::Tf32}) {
    ir::Graph g = four_linear_layers(false);
    passes::run_default_passes(g, false);
    passes::cuda::run_cuda_passes(g, precision, false);
    for (const ir::Value& v : g.values) CHECK(v.dtype == ir::DType::Float32);
  }
}

namespace {

// A pre-norm transformer MLP: n = layer_norm(x); h = gelu(n W1^T + b1); y = h W2^T + b2 + x.
// x [5, 12]; n also returned where return_norm; the first GEMM reads n through a reshape
// (an alias of all its bytes) where reshaped.
ir::Graph pre_norm_mlp(bool return_norm, bool reshaped = false) {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {5, 12}, "x");
  const int n = g.add_value(ir::DType::Float32, {5, 12}, "n"),
            u = g.add_value(ir::DType::Float32, {5, 16}, "u"),
            h = g.add_value(ir::DType::Float32, {5, 16}, "h"),
            y = g.add_value(ir::DType::Float32, {5, 12}, "y");
  const int gamma = g.add_f32_constant({12}, std::vector<float>(12, 1.5f)),
            beta = g.add_f32_constant({12}, std::vector<float>(12, 0.25f));
  g.add_op(ir::kind::layer_norm, {x, gamma, beta}, {n}, where(1)).attrs = {
      {"rows", int64_t{5}}, {"cols", int64_t{12}}, {"eps", 1e-5}};
  add_linear(g, reshaped ? g.add_alias(n, {1, 5, 12}) : n, u, 5, 16, 12, false);
  g.add_op(ir::kind::unary, {u}, {h}, where(3)).attrs = {
      {"op", static_cast<int64_t>(rt::UnaryOp::GeluErf)}, {"a", 0.0}, {"b", 0.0}};
  add_linear(g, h, y, 5, 12, 16, false, x);
  g.outputs.push_back({y, "y"});
  if (return_norm) g.outputs.push_back({n, "n"});
  return g;
}

}  // namespace

TEST_CASE("cuda: fp16 and bf16 keep a layer norm's and a GELU'd linear layer's outputs 16-bit for GEMMs") {
  for (const auto precision : {rt::cuda::Precision::Fp16, rt::cuda::Precision::Bf16})
    for (const int shape : {0, 1, 2, 3}) {
      const bool return_norm = shape % 2 == 1, reshaped = shape >= 2;
      CAPTURE(return_norm);
      CAPTURE(reshaped);
      const ir::DType type =
          precision == rt::cuda::Precision::Fp16 ? ir::DType::Float16 : ir::DType::BFloat16;
      ir::Graph g = pre_norm_mlp(return_norm, reshaped);
      passes::run_default_passes(g, false);
      ops::cuda::check_cuda_support(g);
      passes::cuda::run_cuda_passes(g, precision, false);
      const auto kept = [](const ir::Op& op) { return op.has(ir::attr::c_16bit) && op.b(ir::attr::c_16bit); };
      std::vector<const ir::Op*> norms, gemms;
      for (const ir::Op& op : g.ops) {
        if (op.kind == ir::kind::layer_norm) norms.push_back(&op);
        if (op.kind == ir::kind::gemm) gemms.push_back(&op);
        CHECK(op.kind != ir::kind::unary);  // the GELU is the first GEMM's epilogue
      }
      REQUIRE(norms.size() == 1);
      REQUIRE(gemms.size() == 2);
      // The normalised rows: only the first GEMM reads them, unless they are returned too.
      CHECK(kept(*norms[0]) == !return_norm);
      CHECK(g.value(norms[0]->outputs[0]).dtype == (return_norm ? ir::DType::Float32 : type));
      CHECK(gemms[0]->b(ir::attr::a_16bit) == !return_norm);
      CHECK((g.value(gemms[0]->inputs[0]).storage == ir::Storage::Alias) == reshaped);
      CHECK(g.value(gemms[0]->inputs[0]).dtype == (return_norm ? ir::DType::Float32 : type));
      // GELU(n W1^T + b1): only the second GEMM reads it.
      CHECK(gemms[0]->i(ir::attr::activation) == static_cast<int64_t>(rt::GemmActivation::GeluErf));
      CHECK(kept(*gemms[0]));
      CHECK(g.value(gemms[0]->outputs[0]).dtype == type);
      CHECK(g.value(gemms[0]->inputs[2]).dtype == type);  // the bias, for cuBLASLt
      CHECK(gemms[1]->b(ir::attr::a_16bit));
      // y and the residual x it adds: float32 (y is returned).
      CHECK_FALSE(kept(*gemms[1]));
      CHECK(g.value(gemms[1]->outputs[0]).dtype == ir::DType::Float32);
      CHECK(g.value(gemms[1]->inputs[3]).dtype == ir::DType::Float32);
      codegen::cuda::CudaOptions options;
      options.precision = precision == rt::cuda::Precision::Fp16 ? "fp16" : "bf16";
      const codegen::Sources src =
          codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, options);
      const std::string norm_call =
          std::string("aotc::rt::cuda::layer_norm_16bit(stream, aotc::rt::cuda::Precision::") +
          (precision == rt::cuda::Precision::Fp16 ? "Fp16" : "Bf16") + ", p, ";
      CHECK((src.model_cpp.find(norm_call) != std::string::npos) == !return_norm);
      CHECK((src.model_cpp.find("aotc::rt::cuda::layer_norm_f32(stream, p, ") != std::string::npos) ==
            return_norm);
      CHECK(src.model_cpp.find("gemm_16bit_output(ex, p, ") != std::string::npos);
    }
  // fp32 and tf32: float32 throughout.
  for (const auto precision : {rt::cuda::Precision::Fp32, rt::cuda::Precision::Tf32}) {
    ir::Graph g = pre_norm_mlp(false);
    passes::run_default_passes(g, false);
    passes::cuda::run_cuda_passes(g, precision, false);
    for (const ir::Value& v : g.values) CHECK(v.dtype == ir::DType::Float32);
  }
}

TEST_CASE("cuda: fp16 and bf16 keep an attention's output 16-bit for the projection reading it") {
  for (const auto precision : {rt::cuda::Precision::Fp16, rt::cuda::Precision::Bf16})
    for (const bool returned : {false, true}) {
      CAPTURE(returned);
      // y = attention(x, x, x) over 2 batches, 1 head, 3 tokens of 4 ([2, 3, 4]); z = y W^T + b
      // through a reshape of y to [6, 4]; y also returned where `returned`.
      ir::Graph g;
      const int x = g.add_input(ir::DType::Float32, {2, 3, 4}, "x");
      const int y = g.add_value(ir::DType::Float32, {2, 3, 4}, "y");
      ir::Op& att = g.add_op(ir::kind::attention, {x, x, x, -1}, {y}, where(1));
      att.attrs = self_attention_2x3x4(0, {0, 0, 0, 0});
      const int z = g.add_value(ir::DType::Float32, {6, 5}, "z");
      add_linear(g, g.add_alias(y, {6, 4}), z, 6, 5, 4, false);
      g.outputs.push_back({z, "z"});
      if (returned) g.outputs.push_back({y, "y"});
      passes::run_default_passes(g, false);
      ops::cuda::check_cuda_support(g);
      passes::cuda::run_cuda_passes(g, precision, false);
      const ir::DType type =
          precision == rt::cuda::Precision::Fp16 ? ir::DType::Float16 : ir::DType::BFloat16;
      const ir::Op* attention = nullptr;
      const ir::Op* gemm = nullptr;
      for (const ir::Op& op : g.ops) {
        if (op.kind == ir::kind::attention) attention = &op;
        if (op.kind == ir::kind::gemm) gemm = &op;
      }
      REQUIRE(attention);
      REQUIRE(gemm);
      const bool kept = attention->has(ir::attr::c_16bit) && attention->b(ir::attr::c_16bit);
      CHECK(kept == !returned);
      CHECK(g.value(attention->outputs[0]).dtype == (returned ? ir::DType::Float32 : type));
      CHECK(gemm->b(ir::attr::a_16bit) == !returned);
      // The scratch: the scores (2 x 1 x 3 x 3 floats), and for a 16-bit output the float32
      // result of the three launches (2 x 1 x 3 x 4 floats).
      CHECK(attention->scratch_bytes == (returned ? 18 * 4 : (18 + 24) * 4));
      codegen::cuda::CudaOptions options;
      options.precision = precision == rt::cuda::Precision::Fp16 ? "fp16" : "bf16";
      const codegen::Sources src =
          codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, options);
      CHECK((src.model_cpp.find("aotc::rt::cuda::attention_16bit_output(ex, p, ") != std::string::npos) ==
            !returned);
      CHECK((src.model_cpp.find("aotc::rt::cuda::attention_f32(ex, p, ") != std::string::npos) == returned);
    }
}

TEST_CASE("cuda: fp16 keeps a residual and the GEMM adding it float32 together when its result is pooled") {
  // small_resnet: the first convolution's result is unfolded for the second and added as
  // its residual; the second's is pooled (a float32 reader), so neither is kept 16-bit.
  ir::Graph g = small_resnet(false);
  passes::run_default_passes(g, false);
  ops::cuda::check_cuda_support(g);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp16, false);
  for (const ir::Op& op : g.ops) {
    CHECK_FALSE((op.has(ir::attr::c_16bit) && op.b(ir::attr::c_16bit)));
    if (op.kind == ir::kind::gemm) CHECK(g.value(op.outputs[0]).dtype == ir::DType::Float32);
  }
}

namespace {

// A ConvNeXt block between two 3x3 convolutions: c1 = conv3x3(x); d = depthwise(c1) + b, a
// window `window` wide (ConvNeXt's: 7); n = layer_norm(d.permute(0, 2, 3, 1)); h = gelu(n W1^T
// + b1); y = h W2^T + b2 + the residual c1 in NHWC; out = conv3x3(y.permute(0, 3, 1, 2)), or
// with norm_sum conv3x3(layer_norm(y).permute(0, 3, 1, 2)) (a ConvNeXt stage's last sum,
// normalised for the downsampling). d is also returned where return_d.
ir::Graph convnext_block(bool return_d, int64_t window, bool norm_sum = false) {
  ir::Graph g;
  const int64_t c = 8, hw = 10;
  const ir::Shape nchw{1, c, hw, hw}, nhwc{1, hw, hw, c};
  const int x = g.add_input(ir::DType::Float32, nchw, "x");
  auto conv = [&](int in) {
    const int out = g.add_value(ir::DType::Float32, nchw);
    add_conv(g, in, g.add_f32_constant({c, c, 3, 3}, std::vector<float>(576, 0.125f)), -1, out, c, c, hw, 3,
             1);
    return out;
  };
  const int c1 = conv(x);
  const int c1_nhwc = g.add_value(ir::DType::Float32, nhwc);
  add_permute_copy(g, c1, c1_nhwc, {0, 2, 3, 1});
  const int d = g.add_value(ir::DType::Float32, nchw);
  add_conv(g, c1,
           g.add_f32_constant({c, 1, window, window},
                              std::vector<float>(static_cast<size_t>(c * window * window), 0.02f)),
           g.add_f32_constant({c}, std::vector<float>(8, 0.5f)), d, c, c, hw, window, c);
  const int p = g.add_value(ir::DType::Float32, nhwc);
  add_permute_copy(g, d, p, {0, 2, 3, 1});
  const int n = g.add_value(ir::DType::Float32, nhwc);
  g.add_op(ir::kind::layer_norm,
           {p, g.add_f32_constant({c}, std::vector<float>(8, 1.5f)),
            g.add_f32_constant({c}, std::vector<float>(8, 0.25f))},
           {n}, where(1))
      .attrs = {{"rows", hw * hw}, {"cols", c}, {"eps", 1e-6}};
  const int u = g.add_value(ir::DType::Float32, {1, hw, hw, 32}),
            h = g.add_value(ir::DType::Float32, {1, hw, hw, 32});
  add_linear(g, n, u, hw * hw, 32, c, false);
  g.add_op(ir::kind::unary, {u}, {h}, where(3)).attrs = {
      {"op", static_cast<int64_t>(rt::UnaryOp::GeluErf)}, {"a", 0.0}, {"b", 0.0}};
  const int y = g.add_value(ir::DType::Float32, nhwc);
  add_linear(g, h, y, hw * hw, c, 32, false, c1_nhwc);
  int last = y;
  if (norm_sum) {
    last = g.add_value(ir::DType::Float32, nhwc);
    g.add_op(ir::kind::layer_norm,
             {y, g.add_f32_constant({c}, std::vector<float>(8, 1.25f)),
              g.add_f32_constant({c}, std::vector<float>(8, 0.5f))},
             {last}, where(5))
        .attrs = {{"rows", hw * hw}, {"cols", c}, {"eps", 1e-6}};
  }
  const int q = g.add_value(ir::DType::Float32, nchw);
  add_permute_copy(g, last, q, {0, 3, 1, 2});
  g.outputs = {{conv(q), "out"}};
  if (return_d) g.outputs.push_back({d, "d"});
  return g;
}

}  // namespace

TEST_CASE("cuda: fp16 and bf16 keep a ConvNeXt block's depthwise output 16-bit, and to 7x7 its input") {
  for (const auto precision : {rt::cuda::Precision::Fp16, rt::cuda::Precision::Bf16})
    for (const int64_t window : {7, 3, 9})
      for (const bool return_d : {false, true})
        for (const bool norm_sum : {false, true}) {
          CAPTURE(window);
          CAPTURE(return_d);
          CAPTURE(norm_sum);
          const ir::DType type =
              precision == rt::cuda::Precision::Fp16 ? ir::DType::Float16 : ir::DType::BFloat16;
          ir::Graph g = convnext_block(return_d, window, norm_sum);
          passes::run_default_passes(g, false);
          ops::cuda::check_cuda_support(g);
          run_cuda_passes_nhwc(g, precision);
          check_defined_before_use(g);
          const ir::Op* dw = nullptr;
          const ir::Op* norm = nullptr;
          const ir::Op* second = nullptr;    // the linear layer adding the residual
          const ir::Op* sum_norm = nullptr;  // the layer norm of the sum, with norm_sum
          for (const ir::Op& op : g.ops) {
            if (op.kind == ir::kind::depthwise_conv2d_nhwc) dw = &op;
            if (op.kind == ir::kind::layer_norm) (norm ? sum_norm : norm) = &op;
            if (op.kind == ir::kind::gemm && op.inputs.size() > 3 && op.inputs[3] >= 0) second = &op;
          }
          REQUIRE(dw);
          REQUIRE(norm);
          REQUIRE(second);
          // The layer norm reads the depthwise output 16-bit. A window up to 7 wide (the taps
          // kernel's 7x7) reads its input (c1) 16-bit too, and so the residual and the sum of
          // the second linear layer (read by the last convolution's unfolding, or by a layer
          // norm: a residual stream that depthwise convolutions read is 16-bit whole); a 9x9 one
          // reads float32, and they stay so. A returned d keeps all of them float32.
          const ir::DType kept = return_d ? ir::DType::Float32 : type;
          const ir::DType stream = window <= 7 ? kept : ir::DType::Float32;
          REQUIRE((sum_norm != nullptr) == norm_sum);
          if (sum_norm) CHECK(g.value(sum_norm->inputs[0]).dtype == stream);
          CHECK(g.value(dw->outputs[0]).dtype == kept);
          CHECK(g.value(norm->inputs[0]).dtype == kept);
          CHECK(g.value(dw->inputs[0]).dtype == stream);
          CHECK(g.value(second->inputs[3]).dtype == stream);
          CHECK(g.value(second->outputs[0]).dtype == stream);
          CHECK(g.storage_root(second->inputs[3]) == g.storage_root(dw->inputs[0]));
          // The normalised rows are the first linear layer's operand either way.
          CHECK(g.value(norm->outputs[0]).dtype == type);
          codegen::cuda::CudaOptions options;
          options.precision = precision == rt::cuda::Precision::Fp16 ? "fp16" : "bf16";
          const codegen::Sources src =
              codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, options);
          const std::string name = precision == rt::cuda::Precision::Fp16 ? "Fp16" : "Bf16";
          CHECK((src.model_cpp.find(
                     "aotc::rt::cuda::layer_norm_16bit_input(stream, aotc::rt::cuda::Precision::" + name +
                     ", p, ") != std::string::npos) == !return_d);
          CHECK((src.model_cpp.find("aotc::rt::cuda::layer_norm_16bit(stream, aotc::rt::cuda::Precision::" +
                                    name + ", p, ") != std::string::npos) ==
                (return_d || (norm_sum && window == 9)));
          CHECK((src.model_cpp.find("io.storage = aotc::rt::cuda::Precision::" + name) !=
                 std::string::npos) == !return_d);
          CHECK((src.model_cpp.find("io.float_input = true") != std::string::npos) ==
                (!return_d && window == 9));
        }
}

TEST_CASE("cuda: fp16 layer norms read a linear layer's output 16-bit, and sums float32") {
  // u = x W^T + b; s = u1 + u2 (two linear layers); r = x W^T + b + u3 (a residual); each
  // normalised and taken by a linear layer whose result is returned. The normalisation of u
  // reads it 16-bit; s and r, sums (in a transformer its residual stream), stay float32.
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {5, 12}, "x");
  const auto linear = [&](int in, int residual = -1) {
    const int out = g.add_value(ir::DType::Float32, {5, 12});
    add_linear(g, in, out, 5, 12, 12, false, residual);
    return out;
  };
  const auto norm = [&](int in) {
    const int out = g.add_value(ir::DType::Float32, {5, 12});
    g.add_op(ir::kind::layer_norm,
             {in, g.add_f32_constant({12}, std::vector<float>(12, 1.5f)),
              g.add_f32_constant({12}, std::vector<float>(12, 0.25f))},
             {out}, where(1))
        .attrs = {{"rows", int64_t{5}}, {"cols", int64_t{12}}, {"eps", 1e-5}};
    return out;
  };
  const int u = linear(x);
  const int s = g.add_value(ir::DType::Float32, {5, 12});
  g.add_op(ir::kind::binary, {linear(x), linear(x)}, {s}, where(4)).attrs = {
      {"op", static_cast<int64_t>(rt::BinaryOp::Add)}, {"alpha", 1.0}};
  const int r = linear(x, linear(x));
  g.outputs = {{linear(norm(u)), "yu"}, {linear(norm(s)), "ys"}, {linear(norm(r)), "yr"}};
  passes::run_default_passes(g, false);
  ops::cuda::check_cuda_support(g);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp16, false);
  check_defined_before_use(g);
  std::vector<const ir::Op*> norms;
  for (const ir::Op& op : g.ops)
    if (op.kind == ir::kind::layer_norm) norms.push_back(&op);
  REQUIRE(norms.size() == 3);
  CHECK(g.value(norms[0]->inputs[0]).dtype == ir::DType::Float16);
  CHECK(g.value(norms[1]->inputs[0]).dtype == ir::DType::Float32);
  CHECK(g.value(norms[2]->inputs[0]).dtype == ir::DType::Float32);
  for (const ir::Op* n : norms) CHECK(g.value(n->outputs[0]).dtype == ir::DType::Float16);
  codegen::cuda::CudaOptions options;
  options.precision = "fp16";
  const codegen::Sources src =
      codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, options);
  CHECK(src.model_cpp.find(
            "aotc::rt::cuda::layer_norm_16bit_input(stream, aotc::rt::cuda::Precision::Fp16, p, ") !=
        std::string::npos);
}

namespace {

// An EfficientNet block: e = silu(conv1x1(x)); d = silu(depthwise3x3(e)); the
// squeeze-and-excitation gate s = sigmoid(conv1x1(silu(conv1x1(mean(d))))); y = conv1x1(d * s)
// + x, with c expanded channels. d is also returned where return_d.
ir::Graph mbconv_block(bool return_d, int64_t c = 16) {
  ir::Graph g;
  const auto silu = [&](int in, const ir::Shape& shape, rt::UnaryOp op = rt::UnaryOp::Silu) {
    const int out = g.add_value(ir::DType::Float32, shape);
    g.add_op(ir::kind::unary, {in}, {out}, where(7)).attrs = {
        {"op", static_cast<int64_t>(op)}, {"a", 0.0}, {"b", 0.0}};
    return out;
  };
  const auto weights = [&](ir::Shape shape) {
    std::vector<float> w(static_cast<size_t>(ir::numel(shape)));
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) * 0.125f - 0.375f;
    return g.add_f32_constant(std::move(shape), w);
  };
  const int x = g.add_input(ir::DType::Float32, {1, 8, 10, 10}, "x");
  const int e0 = g.add_value(ir::DType::Float32, {1, c, 10, 10});
  add_conv(g, x, weights({c, 8, 1, 1}), weights({c}), e0, 8, c, 10, 1, 1);
  const int e = silu(e0, {1, c, 10, 10});
  const int d0 = g.add_value(ir::DType::Float32, {1, c, 10, 10});
  add_conv(g, e, weights({c, 1, 3, 3}), weights({c}), d0, c, c, 10, 3, c);
  const int d = silu(d0, {1, c, 10, 10});
  const int a = g.add_value(ir::DType::Float32, {1, c, 1, 1});
  g.add_op(ir::kind::adaptive_avg_pool2d, {d}, {a}, where(3)).attrs = {
      {"n", int64_t{1}},    {"c", c}, {"h_in", int64_t{10}}, {"w_in", int64_t{10}}, {"h_out", int64_t{1}},
      {"w_out", int64_t{1}}};
  const int f1 = g.add_value(ir::DType::Float32, {1, 4, 1, 1});
  add_conv(g, a, weights({4, c, 1, 1}), weights({4}), f1, c, 4, 1, 1, 1);
  const int f2 = g.add_value(ir::DType::Float32, {1, c, 1, 1});
  add_conv(g, silu(f1, {1, 4, 1, 1}), weights({c, 4, 1, 1}), weights({c}), f2, 4, c, 1, 1, 1);
  const int s = silu(f2, {1, c, 1, 1}, rt::UnaryOp::Sigmoid);
  const int gated = g.add_value(ir::DType::Float32, {1, c, 10, 10});
  g.add_op(ir::kind::binary, {s, d}, {gated}, where(4)).attrs = {
      {"op", static_cast<int64_t>(rt::BinaryOp::Mul)}, {"alpha", 1.0}};
  const int p = g.add_value(ir::DType::Float32, {1, 8, 10, 10});
  add_conv(g, gated, weights({8, c, 1, 1}), weights({8}), p, c, 8, 10, 1, 1);
  const int y = g.add_value(ir::DType::Float32, {1, 8, 10, 10});
  g.add_op(ir::kind::binary, {p, x}, {y}, where(5)).attrs = {{"op", static_cast<int64_t>(rt::BinaryOp::Add)},
                                                             {"alpha", 1.0}};
  g.outputs.push_back({y, "y"});
  if (return_d) g.outputs.push_back({d, "d"});
  return g;
}

}  // namespace

TEST_CASE("cuda: an EfficientNet block's SiLUs join the GEMMs and the depthwise convolution before them") {
  // 16 expanded channels: the expansion's SiLU goes on into the depthwise convolution's
  // loads (fold_depthwise_input.cpp, its shared-memory tiles); 12 (not a multiple of 8),
  // or with AOTC_CUDA_FOLD_DEPTHWISE=0, it stays the expansion GEMM's epilogue.
  for (const auto precision : {rt::cuda::Precision::Fp32, rt::cuda::Precision::Tf32})
    for (const int64_t c : {16, 12})
      for (const bool fold : {true, false}) {
        CAPTURE(precision);
        CAPTURE(c);
        CAPTURE(fold);
        ir::Graph g = mbconv_block(false, c);
        passes::run_default_passes(g, false);
        ops::cuda::check_cuda_support(g);
        if (!fold) ::setenv("AOTC_CUDA_FOLD_DEPTHWISE", "0", 1);
        run_cuda_passes_nhwc(g, precision);
        ::unsetenv("AOTC_CUDA_FOLD_DEPTHWISE");
        check_defined_before_use(g);
        // The gate's two layers and sigmoid are one op (fuse_squeeze_excitation.cpp).
        CHECK(count_kind(g, ir::kind::unary) == 0);
        CHECK(count_kind(g, ir::kind::squeeze_excitation) == 1u);
        CHECK(count_kind(g, ir::kind::gemm) == 2u);  // the expansion and the projection
        size_t with_silu = 0;
        const ir::Op* dw = nullptr;
        for (const ir::Op& op : g.ops) {
          if (op.has(ir::attr::activation)) {
            CHECK(op.i(ir::attr::activation) == static_cast<int64_t>(rt::GemmActivation::Silu));
            ++with_silu;
          }
          if (op.kind == ir::kind::depthwise_conv2d_nhwc) dw = &op;
          for (int v : op.outputs) CHECK(g.value(v).dtype == ir::DType::Float32);
        }
        REQUIRE(dw);
        const bool moved = fold && c == 16;
        // the depthwise convolution, the gate's first layer (in squeeze_excitation), and the
        // expansion unless moved
        CHECK(with_silu == (moved ? 2 : 3));
        CHECK(dw->has(ir::attr::input_activation) == moved);
        // The gate's pooling of d becomes the output of the convolution that took the SiLU
        // (fuse_depthwise_pool.cpp), with its scratch.
        CHECK(count_kind(g, ir::kind::adaptive_avg_pool2d) == (moved ? 0u : 1u));
        REQUIRE(dw->outputs.size() == (moved ? 2u : 1u));
        CHECK((dw->scratch_bytes > 0) == moved);
        const codegen::Sources src =
            codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, {});
        CHECK(src.model_cpp.find("io.activation = static_cast<aotc::rt::GemmActivation>(3);") !=
              std::string::npos);
        CHECK((src.model_cpp.find("in.in_activation = static_cast<aotc::rt::GemmActivation>(3);") !=
               std::string::npos) == moved);
        CHECK((src.model_cpp.find("io.pool = ") != std::string::npos) == moved);
        CHECK(src.model_cpp.find("aotc::rt::cuda::squeeze_excitation_gate(stream, p, ") != std::string::npos);
        // The fused gate: its sizes, and the second layer's weights transposed to r x c.
        const ir::Op* se = nullptr;
        for (const ir::Op& op : g.ops)
          if (op.kind == ir::kind::squeeze_excitation) se = &op;
        REQUIRE(se);
        CHECK(se->i("n") == 1);
        CHECK(se->i("c") == c);
        CHECK(se->i("r") == 4);
        CHECK(se->i("gate") == static_cast<int64_t>(rt::UnaryOp::Sigmoid));
        const float* w2t = passes::constant_floats(g, se->inputs[3], 4 * c);
        REQUIRE(w2t);
        bool transposed = true;
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t j = 0; j < 4; ++j)
            transposed =
                transposed && w2t[j * c + ch] == static_cast<float>((ch * 4 + j) % 7) * 0.125f - 0.375f;
        CHECK(transposed);
      }
  // AOTC_CUDA_FUSE_DEPTHWISE_POOL=0: the pooling stays an op.
  {
    ir::Graph g = mbconv_block(false);
    passes::run_default_passes(g, false);
    ::setenv("AOTC_CUDA_FUSE_DEPTHWISE_POOL", "0", 1);
    run_cuda_passes_nhwc(g, rt::cuda::Precision::Fp32);
    ::unsetenv("AOTC_CUDA_FUSE_DEPTHWISE_POOL");
    CHECK(count_kind(g, ir::kind::adaptive_avg_pool2d) == 1u);
  }
  // AOTC_CUDA_FUSE_SILU=0 and AOTC_CUDA_FUSE_SE=0: every SiLU and the sigmoid a pass of
  // its own, the gate's two layers GEMMs.
  ir::Graph g = mbconv_block(false);
  passes::run_default_passes(g, false);
  ::setenv("AOTC_CUDA_FUSE_SILU", "0", 1);
  ::setenv("AOTC_CUDA_FUSE_SE", "0", 1);
  passes::cuda::run_cuda_passes(g, rt::cuda::Precision::Fp32, false);
  ::unsetenv("AOTC_CUDA_FUSE_SILU");
  ::unsetenv("AOTC_CUDA_FUSE_SE");
  CHECK(count_kind(g, ir::kind::unary) == 4);
  CHECK(count_kind(g, ir::kind::squeeze_excitation) == 0u);
}

TEST_CASE("cuda: fp16 and bf16 keep an EfficientNet block's tensors 16-bit, expansion to projection") {
  for (const auto precision : {rt::cuda::Precision::Fp16, rt::cuda::Precision::Bf16}) {
    const ir::DType type = precision == rt::cuda::Precision::Fp16 ? ir::DType::Float16 : ir::DType::BFloat16;
    const std::string name = precision == rt::cuda::Precision::Fp16 ? "Fp16" : "Bf16";
    for (const bool return_d : {false, true}) {
      CAPTURE(precision);
      CAPTURE(return_d);
      ir::Graph g = mbconv_block(return_d);
      passes::run_default_passes(g, false);
      ops::cuda::check_cuda_support(g);
      run_cuda_passes_nhwc(g, precision);  // the gate's fusion leaves fp16 / bf16 alone
      check_defined_before_use(g);
      const ir::Op* dw = nullptr;
      const ir::Op* gate = nullptr;
      std::vector<const ir::Op*> gemms;
      for (const ir::Op& op : g.ops) {
        if (op.kind == ir::kind::depthwise_conv2d_nhwc) dw = &op;
        if (op.kind == ir::kind::binary && op.i("op") == static_cast<int64_t>(rt::BinaryOp::Mul)) gate = &op;
        if (op.kind == ir::kind::gemm) gemms.push_back(&op);
      }
      REQUIRE(dw);
      REQUIRE(dw->outputs.size() == 2);  // d and its pooling (fuse_depthwise_pool.cpp)
      REQUIRE(gate);
      REQUIRE(gemms.size() == 4);  // expansion, the gate's two layers, projection
      CHECK(count_kind(g, ir::kind::squeeze_excitation) == 0u);  // fp32 / tf32 only
      const ir::Op& expand = *gemms[0];
      const ir::Op& project = *gemms[3];
      REQUIRE(g.storage_root(dw->inputs[0]) == g.storage_root(expand.outputs[0]));
      // The depthwise convolution reads and writes one type: d returned keeps both float32.
      const ir::DType dw_type = return_d ? ir::DType::Float32 : type;
      CHECK(g.value(expand.outputs[0]).dtype == dw_type);
      CHECK((expand.has(ir::attr::c_16bit) && expand.b(ir::attr::c_16bit)) == !return_d);
      CHECK(g.value(dw->inputs[0]).dtype == dw_type);
      CHECK(g.value(dw->outputs[0]).dtype == dw_type);
      CHECK(g.value(dw->outputs[1]).dtype == ir::DType::Float32);
      // The gate writes the projection's operand 16-bit either way.
      CHECK(g.value(gate->outputs[0]).dtype == type);
      CHECK(project.b(ir::attr::a_16bit));
      CHECK(g.storage_root(project.inputs[0]) == g.storage_root(gate->outputs[0]));
      // The block's output is returned: float32.
      CHECK(g.value(project.outputs[0]).dtype == ir::DType::Float32);
      const codegen::Sources src =
          codegen::cuda::generate_cuda_sources(g, "m.pt", codegen::WeightsMode::Embed, {});
      const std::string prefix = "aotc::rt::cuda::Precision::";
      CHECK((src.model_cpp.find("io.storage = " + prefix + (return_d ? "Fp32" : name) + ";") !=
             std::string::npos));
      CHECK(src.model_cpp.find("io.pool = ") != std::string::npos);
      CHECK((src.model_cpp.find(precision == rt::cuda::Precision::Fp16
                                    ? "aotc::rt::cuda::fp16_bits("
                                    : "aotc::rt::cuda::bf16_bits(") != std::string::npos));
    }
  }
}
