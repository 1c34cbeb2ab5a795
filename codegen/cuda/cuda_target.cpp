#include "cuda_target.h"

#include <aotc/rt/model_desc.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "../../compiler/ir/error.h"
#include "../../compiler/ops/cuda/cuda_registry.h"
#include "../install_paths.h"
#include "../template_text.h"
#include "aotc_config.h"
#include "cuda_templates_embedded.h"
#include "templates_embedded.h"

namespace aotc::codegen::cuda {
rt::cuda::Precision parse_precision(const std::string& name) {
  if (name == "fp32") return rt::cuda::Precision::Fp32;
  if (name == "tf32") return rt::cuda::Precision::Tf32;
  if (name == "fp16") return rt::cuda::Precision::Fp16;
  if (name == "bf16") return rt::cuda::Precision::Bf16;
  throw CompileError("--precision must be fp32, tf32, fp16 or bf16, got '" + name + "'");
}

int parse_cuda_arch(const std::string& text) {
  const std::string digits = text.rfind("sm_", 0) == 0 ? text.substr(3) : "";
  const bool ok = (digits.size() == 2 || digits.size() == 3) &&
                  digits.find_first_not_of("0123456789") == std::string::npos;
  const int arch = ok ? std::stoi(digits) : 0;
  if (arch < 70)
    throw CompileError("--cuda-arch '" + text +
                       "': expected sm_NN for a GPU of compute capability 7.0 or newer, e.g. "
                       "sm_80 (A100), sm_90 (H100)");
  return arch;
}

Sources generate_cuda_sources(ir::Graph& graph, const std::string& source_name, WeightsMode weights,
                              const CudaOptions& options) {
  const rt::cuda::Precision precision = parse_precision(options.precision);
  if (precision == rt::cuda::Precision::Bf16 && options.arch < 80)
    throw CompileError("--precision " + options.precision +
                       " needs a GPU of compute capability 8.0 or newer (sm_80), not sm_" +
                       std::to_string(options.arch));
  ModelSource model = model_source(graph, source_name, weights);
  Sources& sources = model.sources;
  sources.cuda = true;
  sources.cuda_arch = "sm_" + std::to_string(options.arch);

  const ops::cuda::CudaRegistry& registry = ops::cuda::CudaRegistry::get();
  ops::EmitContext emit(graph);
  std::string kernels, body;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& op = graph.ops[i];
    const ops::cuda::CudaEmitFn* fn = registry.find(op.kind);
    if (!fn) throw CompileError("internal: no CUDA code generator for IR op '" + op.kind + "'");
    const ops::cuda::CudaCode code = (*fn)(emit, op, i);
    kernels += code.kernels;
    body += code.launch;
  }
  std::string copies;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const ir::GraphOutput& out = graph.outputs[i];
    const int64_t bytes = graph.value(out.value).bytes();
    if (bytes > 0)
      copies += "  cudaMemcpyAsync(args.outputs[" + std::to_string(i) + "], " + emit.in(out.value) + ", " +
                std::to_string(bytes) +
                ", cudaMemcpyDeviceToDevice, stream);\n"
                "  aotc::rt::cuda::check_launch(\"output copy\");\n";
  }
  model.values["CUDA_ARCH"] = sources.cuda_arch;
  model.values["PRECISION"] = options.precision;
  model.values["PRECISION_ENUM"] = precision == rt::cuda::Precision::Tf32   ? "Tf32"
                                   : precision == rt::cuda::Precision::Fp16 ? "Fp16"
                                   : precision == rt::cuda::Precision::Bf16 ? "Bf16"
                                                                            : "Fp32";
  model.values["ARCH_NUMBER"] = std::to_string(options.arch);
  model.values["KERNELS"] = kernels;
  model.values["RUN_BODY"] = body;
  model.values["OUTPUT_COPIES"] = copies;
  sources.model_cpp = fill_template(templates::model_cu_in, model.values);
  return sources;
}

std::string cuda_build_ninja(const Sources& sources, const std::string& cxx, const std::string& runtime_lib,
                             const std::string& runtime_include) {
  const std::string cuda_runtime = cuda_runtime_lib();
  const std::string nvcc = nvcc_program();
  const std::string cuda_lib = cuda_lib_dir();
  std::error_code ec;
  if (!AOTC_HAVE_CUDA && (cuda_runtime.empty() || nvcc.empty()))
    throw CompileError(
        "--target cuda: this aotc was built without CUDA (nvcc was not found when it was configured; "
        "install the CUDA toolkit and reconfigure, or set AOTC_NVCC and AOTC_CUDA_RUNTIME_LIB)");
  if (nvcc.empty())
    throw CompileError("--target cuda: cannot find nvcc (the one aotc was configured with, " +
                       std::string(AOTC_NVCC) + ", is gone and none is on PATH): install the CUDA toolkit, " +
                       "or set AOTC_NVCC");
  if (cuda_runtime.empty())
    throw CompileError("--target cuda: cannot find the aotc CUDA runtime library " +
                       runtime_lookup_note("AOTC_CUDA_RUNTIME_LIB"));
  if (!std::filesystem::is_regular_file(cuda_runtime, ec))
    throw CompileError("--target cuda: the aotc CUDA runtime library " + cuda_runtime + " does not exist " +
                       runtime_lookup_note("AOTC_CUDA_RUNTIME_LIB"));
  const std::string arch = sources.cuda_arch.substr(3);
  return fill_template(templates::build_cuda_ninja_in, {{"AOTC_VERSION", AOTC_VERSION_STRING},
                                                        {"NVCC", ninja_shell_arg(nvcc)},
                                                        {"CXX", ninja_shell_arg(cxx)},
                                                        {"CUDA_ARCH_NUMBER", arch},
                                                        {"RUNTIME_INCLUDE", ninja_shell_arg(runtime_include)},
                                                        {"CUDA_LIB_DIR", ninja_shell_arg(cuda_lib)},
                                                        {"RUNTIME_LIB", ninja_path(runtime_lib)},
                                                        {"CUDA_RUNTIME_LIB", ninja_path(cuda_runtime)}});
}

}  // namespace aotc::codegen::cuda
