// build_model.cpp - a model through its target's pipeline (compiler/passes/), code
// generation and the build.
#include "build_model.h"

#include <chrono>
#include <cstdio>

#include "../passes/cuda/cuda_passes.h"
#include "../passes/passes.h"

namespace aotc::driver {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void run_target_pipeline(ir::Graph& graph, const ModelBuild& build) {
  if (build.cuda) {
    passes::cuda::run_cuda_pipeline(graph, codegen::cuda::parse_precision(build.cuda_options.precision),
                                    build.verbose, build.winograd);
    return;
  }
  passes::CpuPipelineOptions options;
  options.winograd = build.winograd;
  options.cpu_threads = build.cpu_threads;
  // For a host build, what this machine has; for a cross target, none.
  options.avx512_target = build.target_triple.empty() && passes::host_runs_avx512_kernels();
  options.pointwise_rows_target = options.avx512_target && passes::host_prefers_pointwise_rows();
  options.verbose = build.verbose;
  passes::run_cpu_pipeline(graph, options);
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
  run_target_pipeline(graph, build);
  if (!build.cuda) {  // the CUDA pipeline plans its scratch itself
    passes::plan_memory(graph);
    if (verbose)
      std::fprintf(
          stderr,
          "aotc: memory planned again after single_pixel_conv_to_gemm, select_winograd, fuse_gemm_gelu, "
          "fuse_conv_residual, fuse_activation, fuse_expand_depthwise, select_pointwise_rows, "
          "prepack_gemm_weights\n");
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
  codegen::build_shared_library(sources, {build.output, build.emit_dir, build.verbose, build.target_triple,
                                          build.weights, build.no_build});
}

}  // namespace aotc::driver
