// cuda_target.h - aotc --target cuda: CUDA C++ from templates/model.cu.in (the ops'
// generators in compiler/ops/cuda/) and the build.ninja that builds it with nvcc and links
// the runtime's CUDA half (runtime/cuda/) and cuBLAS.
#pragma once

#include <aotc/rt/cuda/precision.h>

#include <string>

#include "../codegen.h"

namespace aotc::codegen::cuda {

struct CudaOptions {
  int arch = 90;                   // --cuda-arch sm_90
  std::string precision = "fp32";  // --precision: fp32 (exact), tf32, fp16 or bf16
};

// --precision's value as the runtime's enum; throws CompileError for another name.
rt::cuda::Precision parse_precision(const std::string& name);

// Parses --cuda-arch: sm_NN or sm_NNN with a compute capability from 7.0 on (e.g. sm_80,
// sm_90, sm_120); throws CompileError otherwise.
int parse_cuda_arch(const std::string& text);

// Like generate_sources, for CUDA: the graph must have run passes::cuda::run_cuda_pipeline
// (the default passes, the check that every op has a CUDA generator, the CUDA passes).
Sources generate_cuda_sources(ir::Graph& graph, const std::string& source_name, WeightsMode weights,
                              const CudaOptions& options);

// build.ninja for CUDA sources (Sources::cuda); throws CompileError when aotc was built
// without nvcc (no CUDA runtime library) or the toolchain it recorded is gone.
std::string cuda_build_ninja(const Sources& sources, const std::string& cxx, const std::string& runtime_lib,
                             const std::string& runtime_include);

}  // namespace aotc::codegen::cuda
