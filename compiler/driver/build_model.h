// build_model.h - from lowered IR to a model .so: the target's passes, code generation
// and the build. The aotc command and the TorchScript backend library (preprocess) share
// it, so a model compiles the same way whichever route reaches it. No LibTorch here.
#pragma once

#include <string>

#include "../../codegen/codegen.h"
#include "../../codegen/cuda/cuda_target.h"
#include "../ir/graph.h"

namespace aotc::driver {

struct ModelBuild {
  std::string source_name;  // the model file (or module) named in the generated source
  std::string output;       // the .so to write, atomically
  std::string emit_dir;     // keep the sources and build.ninja here; empty: a temp dir
  bool verbose = false;
  std::string target_triple;  // empty: the host
  codegen::WeightsMode weights = codegen::WeightsMode::Embed;
  bool cuda = false;                        // --target cuda
  codegen::cuda::CudaOptions cuda_options;  // --cuda-arch, --precision
  bool winograd = true;                     // --winograd
  int cpu_threads = 0;                      // --cpu-threads; 0: not said
  bool no_build = false;                    // --no-build: only the sources, into emit_dir; no .so
};

// Runs the target's passes on graph, generates the sources and builds build.output.
// Throws CompileError on any problem; nothing is left at build.output then.
void build_model(ir::Graph graph, const ModelBuild& build);

// The build target's pipeline after lowering (compiler/passes/): the CPU's up to (not
// including) the memory plan, CUDA's with it.
void run_target_pipeline(ir::Graph& graph, const ModelBuild& build);

// The model's sources for build's target from a graph that ran its passes and memory plan.
codegen::Sources generate_target_sources(ir::Graph& graph, const ModelBuild& build);

// Builds generated sources into build.output (atomically) with build's target and options.
void build_sources(const codegen::Sources& sources, const ModelBuild& build);

}  // namespace aotc::driver
