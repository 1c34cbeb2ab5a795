// IR "conv3d" on CUDA -> aotc::rt::cuda::conv3d_f32 (runtime/cuda/kernels/conv3d.cu): vol2col
// into arena scratch and a cuBLAS GEMM per image-group (images or groups one strided batch),
// bias and clamp in the GEMM's epilogue; a 1x1x1, stride-1, unpadded one multiplies the input
// itself; depthwise ones are a direct kernel. The scratch (conv_nd_plan.h) is the whole
// batch's columns, at most kConvNdScratchBudget bytes (the runtime then goes in chunks).
#include <aotc/rt/cuda/conv_nd_plan.h>

#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_conv3d(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, conv_nd_params_code(op),
                          "aotc::rt::cuda::conv3d_f32(ex, p, " + e.in(op.inputs[0]) + ", " +
                              e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " + e.out(op.outputs[0]) +
                              ", " + e.scratch(op) + ");")};
}

}  // namespace

void register_conv3d_cuda(CudaRegistry& r) {
  r.add(ir::kind::conv3d, emit_conv3d,
        [](const ir::Op& op) { return rt::cuda::conv3d_cuda_scratch_bytes(conv_nd_params_of(op)); });
}

}  // namespace aotc::ops::cuda
