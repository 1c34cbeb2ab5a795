// choose_conv2d_paths: picks each convolution's CUDA path for the model's --precision
// (rt::cuda::conv2d_path, shared with the runtime) and records it on the op ("cuda_path",
// "precision", "weights_16bit"), so that the generator and the scratch planner read one
// decision. For fp16 and bf16 the GEMM convolutions get their weights converted here, at
// compile time, to the 16-bit type (round to nearest even): the weights blob holds them
// so, and the GEMM reads half the bytes.
#include <aotc/rt/cuda/conv2d_plan.h>

#include <cstdlib>
#include <string>

#include "../../ops/cuda/cuda_registry.h"
#include "../../ops/spatial.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {
namespace {}  // namespace

void choose_conv2d_paths(ir::Graph& graph, rt::cuda::Precision precision) {
  const char* implicit_env = std::getenv("AOTC_CUDA_IMPLICIT_GEMM");
  const bool implicit_gemm = implicit_env && std::string(implicit_env) == "1";
  for (ir::Op& op : graph.ops) {
    if (op.kind != ir::kind::conv2d) continue;
    const rt::Conv2dParams p = ops::conv2d_params_of(op);
    rt::cuda::Conv2dPath path = rt::cuda::conv2d_path(p, precision, implicit_gemm);
    bool weights_16bit = false;
    if (rt::cuda::conv2d_16bit_operands(path, precision)) {
      const int w = op.inputs[1];
      // Only a weight that is a whole float32 constant of its own is converted; anything
      // else keeps float32 operands, whose products cuBLAS still rounds to the 16-bit type.
      weights_16bit = is_whole_f32_constant(graph, w);
      if (weights_16bit)
        op.inputs[1] = converted_constant(graph, w, precision);
      else
        path = rt::cuda::conv2d_path(p);
    }
    op.attrs[ir::attr::cuda_path] = static_cast<int64_t>(path);
    op.attrs[ir::attr::precision] = static_cast<int64_t>(precision);
    op.attrs[ir::attr::weights_16bit] = weights_16bit;
  }
}

}  // namespace aotc::passes::cuda
