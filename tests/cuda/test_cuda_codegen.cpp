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
                           "adaptive_avg_pool2d", "copy", "concat", "channel_affine", "softmax", "reduce"})
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
  ops::cuda::prepare_graph_for_cuda(g);
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

TEST_CASE("cuda: --cuda-arch parsing") {
  CHECK(codegen::cuda::parse_cuda_arch("sm_90") == 90);
  CHECK(codegen::cuda::parse_cuda_arch("sm_80") == 80);
  CHECK(codegen::cuda::parse_cuda_arch("sm_120") == 120);
  for (const char* bad : {"sm_61", "90", "sm_", "sm_9a", "compute_90", "sm_1234", ""})
    CHECK_THROWS_AS(codegen::cuda::parse_cuda_arch(bad), CompileError);
}
