// build_model.cpp - the passes of each target in order, code generation and the build.
#include "build_model.h"

#include <chrono>
#include <cstdio>

#include "../ops/cuda/cuda_registry.h"
#include "../ops/spatial.h"
#include "../passes/passes.h"

namespace aotc::driver {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void run_cpu_passes(ir::Graph& graph, const ModelBuild& build) {
  const bool verbose = build.verbose;
  if (verbose) std::fprintf(stderr, "aotc: IR after lowering:\n%s", graph.dump().c_str());
  passes::run_default_passes(graph, verbose);
  if (verbose) std::fprintf(stderr, "aotc: IR after passes:\n%s", graph.dump().c_str());
  // CPU only: the CUDA generators read the convolutions' weights as they are.
  if (build.winograd) passes::select_winograd(graph);
  // Before the residual: the GELU comes first in the GEMM's epilogue (as on CUDA).
  passes::fuse_gemm_gelu(graph, "AOTC_CPU_FUSE_GELU");
  // A ResNet block's add (and the relu after it, fused again) into the convolution before
  // it: the GEMM and Winograd kernels add it as they write; depthwise has no such epilogue.
  // Likewise a transformer block's residual add into the linear layer before it (vit_b_16:
  // 24 adds of 197 x 768 floats), which both GEMM kernels start their sums from.
  passes::fuse_conv_residual(graph, [](const ir::Op& op) {
    if (op.kind == "gemm") return true;
    return op.kind == "conv2d" && !rt::conv2d_is_depthwise(ops::conv2d_params_of(op));
  });
  passes::fuse_activation(graph);
  // Both choose kernels that the runtime runs on AVX-512 only: for a host build, what this
  // machine has; for a cross target, none.
  const bool avx512_target = build.target_triple.empty() && passes::host_runs_avx512_kernels();
  passes::fuse_expand_depthwise(graph, avx512_target);
  passes::select_pointwise_rows(graph, avx512_target);
  passes::prepack_gemm_weights(graph);
}

void run_cuda_passes(ir::Graph& graph, const ModelBuild& build) {
  const bool verbose = build.verbose;
  if (verbose) std::fprintf(stderr, "aotc: IR after lowering:\n%s", graph.dump().c_str());
  passes::run_default_passes(graph, verbose);
  if (verbose) std::fprintf(stderr, "aotc: IR after passes:\n%s", graph.dump().c_str());
  // The CUDA generators replace the CPU ones; their scratch needs another memory plan.
  ops::cuda::check_cuda_support(graph);
  ops::cuda::prepare_graph_for_cuda(graph, codegen::cuda::parse_precision(build.cuda_options.precision));
  if (verbose) std::fprintf(stderr, "aotc: IR for CUDA:\n%s", graph.dump().c_str());
}

codegen::Sources generate_target_sources(ir::Graph& graph, const ModelBuild& build) {
  if (build.cuda)
    return codegen::cuda::generate_cuda_sources(graph, build.source_name, build.weights, build.cuda_options);
  return codegen::generate_sources(graph, build.source_name, build.weights);
}

void build_model(ir::Graph graph, const ModelBuild& build) {
  const bool verbose = build.verbose;
  const auto start = std::chrono::steady_clock::now();
  codegen::resolve_target(build.target_triple);  // an unknown or unbuilt target fails before the work
  if (build.cuda) {
    run_cuda_passes(graph, build);
  } else {
    run_cpu_passes(graph, build);
    passes::plan_memory(graph);
    if (verbose)
      std::fprintf(stderr,
                   "aotc: memory planned again after select_winograd, fuse_gemm_gelu, fuse_conv_residual, "
                   "fuse_activation, fuse_expand_depthwise, select_pointwise_rows, prepack_gemm_weights\n");
  }
  const codegen::Sources sources = generate_target_sources(graph, build);
  const double t_codegen = seconds_since(start);
  build_sources(sources, build);
  if (verbose) {
    std::fprintf(stderr, "aotc: %zu ops, weights %zu bytes\n", graph.ops.size(), sources.weights_bin.size());
    std::fprintf(stderr, "aotc: arena %lld bytes, lower bound %lld bytes (%.3fx)\n",
                 static_cast<long long>(graph.arena_bytes), static_cast<long long>(graph.arena_lower_bound),
                 graph.arena_lower_bound
                     ? static_cast<double>(graph.arena_bytes) / static_cast<double>(graph.arena_lower_bound)
                     : 1.0);
    std::fprintf(stderr, "aotc: time: passes+codegen %.2f s, build %.2f s\n", t_codegen,
                 seconds_since(start) - t_codegen);
  }
}

void build_sources(const codegen::Sources& sources, const ModelBuild& build) {
  codegen::build_shared_library(
      sources, {build.output, build.emit_dir, build.verbose, build.target_triple, build.weights});
}

}  // namespace aotc::driver
