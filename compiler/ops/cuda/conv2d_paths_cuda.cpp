// conv2d_paths_cuda: picks each convolution's CUDA path for the model's --precision
// (rt::cuda::conv2d_path, shared with the runtime) and records it on the op ("cuda_path",
// "precision", "weights_16bit"), so that the generator and the scratch planner read one
// decision. For fp16 and bf16 the GEMM convolutions get their weights converted here, at
// compile time, to the 16-bit type (round to nearest even): the weights blob holds them
// so, and the GEMM reads half the bytes.
#include <aotc/rt/cuda/conv2d_plan.h>

#include <cstdlib>
#include <string>

#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

rt::Conv2dParams conv_params(const ir::Op& op) {
  rt::Conv2dParams p;
  p.n = op.i("n");
  p.c_in = op.i("c_in");
  p.h_in = op.i("h_in");
  p.w_in = op.i("w_in");
  p.c_out = op.i("c_out");
  p.h_out = op.i("h_out");
  p.w_out = op.i("w_out");
  p.kernel_h = op.ints("kernel")[0];
  p.kernel_w = op.ints("kernel")[1];
  p.stride_h = op.ints("stride")[0];
  p.stride_w = op.ints("stride")[1];
  p.pad_h = op.ints("padding")[0];
  p.pad_w = op.ints("padding")[1];
  p.dilation_h = op.ints("dilation")[0];
  p.dilation_w = op.ints("dilation")[1];
  p.groups = op.i("groups");
  p.has_bias = op.inputs[2] >= 0;
  return p;
}

}  // namespace

rt::Conv2dParams conv2d_params_cuda(const ir::Op& op) { return conv_params(op); }

void choose_conv2d_paths(ir::Graph& graph, rt::cuda::Precision precision) {
  const char* implicit_env = std::getenv("AOTC_CUDA_IMPLICIT_GEMM");
  const bool implicit_gemm = implicit_env && std::string(implicit_env) == "1";
  for (ir::Op& op : graph.ops) {
    if (op.kind != "conv2d") continue;
    const rt::Conv2dParams p = conv_params(op);
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
    op.attrs["cuda_path"] = static_cast<int64_t>(path);
    op.attrs["precision"] = static_cast<int64_t>(precision);
    op.attrs["weights_16bit"] = weights_16bit;
  }
}

}  // namespace aotc::ops::cuda
