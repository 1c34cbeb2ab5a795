// The CUDA target's compile-time side, without a GPU: its registry of generators, the
// error for an IR op it cannot compile, the graph preparation (residual add + relu fused,
// CUDA scratch planned), the generated CUDA C++, and --cuda-arch parsing.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cmath>

#include "../../codegen/cuda/cuda_target.h"
#include "../../compiler/ir/error.h"
#include "../../compiler/ir/graph.h"
#include "../../compiler/ops/cuda/cuda_registry.h"
#include "../../compiler/passes/passes.h"

using namespace aotc;

namespace {

ir::SourceLocation where(int line) {
  ir::SourceLocation loc;
  loc.file = "model.py";
  loc.line = line;
  loc.text = "y = self.thing(x)";
  return loc;
}

}  // namespace

TEST_CASE("cuda: the registry covers the op kinds of the CNN models") {
  const auto& r = ops::cuda::CudaRegistry::get();
  for (const char* kind : {"conv2d", "gemm", "batched_gemm", "unary", "binary", "max_pool2d", "avg_pool2d",
                           "adaptive_avg_pool2d", "copy", "concat", "channel_affine", "softmax", "reduce",
                           // the transformers' (vit_b_16, BERT)
                           "layer_norm", "attention", "embedding", "assemble", "where"})
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

TEST_CASE("cuda: a non-float32 operand is refused") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Int64, {4}, "x");
  const int y = g.add_value(ir::DType::Float32, {4});
  ir::Op& op = g.add_op("unary", {x}, {y}, where(7));
  op.attrs = {{"op", int64_t{1}}, {"a", 0.0}, {"b", 0.0}};
  g.outputs.push_back({y, "y"});
  CHECK_THROWS_WITH_AS(ops::cuda::check_cuda_support(g), doctest::Contains("int64"), CompileError);
}

TEST_CASE("cuda: prepare fuses relu into the residual add and plans conv scratch") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {1, 2, 5, 5}, "x");
  const int w = g.add_f32_constant({2, 2, 3, 3}, std::vector<float>(36, 0.5f));
  const int c = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
  ir::Op& conv = g.add_op("conv2d", {x, w, -1}, {c}, where(1));
  conv.attrs = {{"n", int64_t{1}},
                {"c_in", int64_t{2}},
                {"h_in", int64_t{5}},
                {"w_in", int64_t{5}},
                {"c_out", int64_t{2}},
                {"h_out", int64_t{5}},
                {"w_out", int64_t{5}},
                {"kernel", std::vector<int64_t>{3, 3}},
                {"stride", std::vector<int64_t>{1, 1}},
                {"padding", std::vector<int64_t>{1, 1}},
                {"dilation", std::vector<int64_t>{1, 1}},
                {"groups", int64_t{1}},
                {"clamp_lo", -INFINITY},
                {"clamp_hi", INFINITY}};
  const int s = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
  g.add_op("binary", {c, x}, {s}, where(2)).attrs = {{"op", int64_t{0}}, {"alpha", 1.0}};
  const int r = g.add_value(ir::DType::Float32, {1, 2, 5, 5});
  g.add_op("unary", {s}, {r}, where(3)).attrs = {{"op", int64_t{1}}, {"a", 0.0}, {"b", 0.0}};
  g.outputs.push_back({r, "r"});
  passes::run_default_passes(g, false);
  ops::cuda::check_cuda_support(g);
  ops::cuda::prepare_graph_for_cuda(g, rt::cuda::Precision::Fp32);
  REQUIRE(g.ops.size() == 2);
  CHECK(g.ops[1].kind == "binary");
  CHECK(g.ops[1].f("clamp_lo") == 0.0);
  CHECK(std::isinf(g.ops[1].f("clamp_hi")));
  CHECK(g.ops[1].outputs[0] == r);
  // im2col scratch: (c_in * 3 * 3) rows x 25 positions, in the arena.
  CHECK(g.ops[0].scratch_bytes == 2 * 9 * 25 * 4);
  CHECK(g.ops[0].thread_scratch_bytes == 0);
  CHECK(g.arena_bytes >= g.ops[0].scratch_bytes);

  const codegen::Sources src =
      codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, {});
  CHECK(src.cuda);
  CHECK(src.cuda_arch == "sm_90");
  CHECK(src.model_cpp.find("aotc::rt::cuda::conv2d_f32(ex, p, ") != std::string::npos);
  CHECK(src.model_cpp.find("__global__") != std::string::npos);  // the fused add + relu kernel
  CHECK(src.model_cpp.find("clamp_apply") != std::string::npos);
  CHECK(src.model_cpp.find("Precision::Fp32") != std::string::npos);
  codegen::cuda::CudaOptions tf32;
  tf32.precision = "tf32";
  tf32.arch = 80;
  const codegen::Sources src2 =
      codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, tf32);
  CHECK(src2.model_cpp.find("Precision::Tf32") != std::string::npos);
  CHECK(src2.cuda_arch == "sm_80");
  codegen::cuda::CudaOptions fp16;
  fp16.precision = "fp16";
  CHECK_THROWS_AS(codegen::cuda::generate_cuda_sources(g, "model.pt", codegen::WeightsMode::Embed, fp16),
                  CompileError);
}

TEST_CASE("cuda: embedding ids and attention masks may be integers and bools, their data not") {
  ir::Graph g;
  const int table = g.add_f32_constant({10, 4}, std::vector<float>(40, 0.25f));
  const int ids = g.add_input(ir::DType::Int64, {2, 3}, "ids");
  const int mask = g.add_input(ir::DType::Bool, {2, 3}, "mask");
  const int x = g.add_value(ir::DType::Float32, {2, 3, 4});
  g.add_op("embedding", {table, ids}, {x}, where(1)).attrs = {
      {"count", int64_t{6}}, {"dim", int64_t{4}}, {"vocab", int64_t{10}}, {"ids_int32", false}};
  // Self-attention over x: 2 batches, 1 head, 3 tokens of 4, a bool key mask [2, 1, 1, 3].
  const int y = g.add_value(ir::DType::Float32, {2, 3, 4});
  ir::Op& att = g.add_op("attention", {x, x, x, mask}, {y}, where(2));
  att.attrs = {{"batch", int64_t{2}},
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
               {"out_strides", std::vector<int64_t>{12, 0, 4}},
               {"mask_kind", int64_t{2}},
               {"mask_strides", std::vector<int64_t>{3, 0, 0, 1}},
               {"weights", int64_t{0}},
               {"q_offset", int64_t{0}},
               {"k_offset", int64_t{0}},
               {"v_offset", int64_t{0}}};
  const int z = g.add_value(ir::DType::Float32, {2, 3, 4});
  g.add_op("layer_norm", {y, -1, -1}, {z}, where(3)).attrs = {
      {"rows", int64_t{6}}, {"cols", int64_t{4}}, {"eps", 1e-5}};
  g.outputs.push_back({z, "z"});
  ops::cuda::check_cuda_support(g);
  ops::cuda::prepare_graph_for_cuda(g, rt::cuda::Precision::Fp32);
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
  bad.add_op("layer_norm", {b, -1, -1}, {out}, where(9)).attrs = {
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
