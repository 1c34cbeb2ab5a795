// IR "gemm" and "batched_gemm" on CUDA -> aotc::rt::cuda::gemm_f32 / batched_gemm_f32
// (runtime/cuda/kernels/gemm_cublas.cu): cuBLAS, then the bias, residual and clamp
// epilogue; gemm_16bit where gemm_operands_cuda.cpp made a weight operand 16-bit;
// conv_gemm_nhwc_f32 for a convolution whose GEMM gathers its input (channels_last_cuda.cpp).
#include <aotc/rt/cuda/gemm_plan.h>

#include "../gemm.h"
#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

// Whether gemm_operands_cuda.cpp gave the op a 16-bit weight operand.
bool has_16bit_operand(const ir::Op& op) { return op.has("a_16bit") && (op.b("a_16bit") || op.b("b_16bit")); }

// A convolution that channels_last_cuda.cpp made a GEMM over its gathered input
// ("conv_geometry": n, c_in, h_in, w_in, c_out, h_out, w_out, kernel, stride, padding,
// dilation, each of the last four as h and w): the input is the NHWC tensor itself, the
// scratch the unfolded columns for the im2col + GEMM path.
rt::Conv2dParams gathered_conv_of(const ir::Op& op) {
  const std::vector<int64_t>& g = op.ints("conv_geometry");
  rt::Conv2dParams c;
  c.n = g.at(0);
  c.c_in = g.at(1);
  c.h_in = g.at(2);
  c.w_in = g.at(3);
  c.c_out = g.at(4);
  c.h_out = g.at(5);
  c.w_out = g.at(6);
  c.kernel_h = g.at(7);
  c.kernel_w = g.at(8);
  c.stride_h = g.at(9);
  c.stride_w = g.at(10);
  c.pad_h = g.at(11);
  c.pad_w = g.at(12);
  c.dilation_h = g.at(13);
  c.dilation_w = g.at(14);
  return c;
}

CudaCode emit_gathered_conv(const EmitContext& e, const ir::Op& op, const ParamsCode& p) {
  const ParamsCode conv = conv2d_params_code(gathered_conv_of(op), "conv");
  return {"", kernel_call(op, p.str() + "\n    " + conv.str(),
                          "aotc::rt::cuda::conv_gemm_nhwc_f32(ex, p, conv, " + gemm_operands(e, op) + ", " +
                              e.scratch(op) + ");")};
}

CudaCode emit_gemm(const EmitContext& e, const ir::Op& op, size_t) {
  const ParamsCode p = gemm_params_code(e, op);
  if (op.has("conv_geometry")) return emit_gathered_conv(e, op, p);
  if (has_16bit_operand(op))
    return {"", kernel_call(op, p.str(),
                            "aotc::rt::cuda::gemm_16bit(ex, p, " + e.in(op.inputs[0]) + ", " +
                                (op.b("a_16bit") ? "true" : "false") + ", " + e.in(op.inputs[1]) + ", " +
                                (op.b("b_16bit") ? "true" : "false") + ", " + e.in(op.inputs[2]) + ", " +
                                e.out(op.outputs[0]) + ", " + e.scratch(op) + ");")};
  return {"", kernel_call(op, p.str(), "aotc::rt::cuda::gemm_f32(ex, p, " + gemm_operands(e, op) + ");")};
}

CudaCode emit_batched_gemm(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, batched_gemm_params_code(op).str(),
                          "aotc::rt::cuda::batched_gemm_f32(ex, p, " + gemm_operands(e, op) + ");")};
}

}  // namespace

void register_gemm_cuda(CudaRegistry& r) {
  r.add("gemm", emit_gemm, [](const ir::Op& op) -> int64_t {
    if (op.has("conv_geometry")) {  // the unfolded columns, m x k floats
      const rt::GemmParams p = gemm_params_of(op);
      return p.m * p.k * static_cast<int64_t>(sizeof(float));
    }
    return has_16bit_operand(op)
               ? rt::cuda::gemm_16bit_scratch_bytes(gemm_params_of(op), op.b("a_16bit"), op.b("b_16bit"))
               : 0;
  });
  r.add("batched_gemm", emit_batched_gemm);
}

}  // namespace aotc::ops::cuda
