// IR "conv_transpose" (1-d, 2-d and 3-d) on CUDA -> aotc::rt::cuda::conv_transpose_f32
// (runtime/cuda/kernels/conv_transpose.cu): per image-group a cuBLAS GEMM col = W_g^T x_g
// into arena scratch (images or groups one strided batch), then col2vol gathers each
// output's contributions (no atomics), adds the bias and clamps; depthwise ones are a
// direct kernel. The scratch (conv_nd_plan.h) is the whole batch's columns, at most
// kConvNdScratchBudget bytes (the runtime then goes in chunks).
#include <aotc/rt/cuda/conv_nd_plan.h>

#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_conv_transpose(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, conv_nd_params_code(op),
                          "aotc::rt::cuda::conv_transpose_f32(ex, p, " + e.in(op.inputs[0]) + ", " +
                              e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " + e.out(op.outputs[0]) +
                              ", " + e.scratch(op) + ");")};
}

}  // namespace

void register_conv_transpose_cuda(CudaRegistry& r) {
  r.add(ir::kind::conv_transpose, emit_conv_transpose,
        [](const ir::Op& op) { return rt::cuda::conv_transpose_cuda_scratch_bytes(conv_nd_params_of(op)); });
}

}  // namespace aotc::ops::cuda
