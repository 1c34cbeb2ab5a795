// IR "conv3d" on CUDA -> aotc::rt::cuda::conv3d_f32 (runtime/cuda/kernels/conv3d.cu): vol2col
// into arena scratch and a cuBLAS GEMM per image-group (images or groups one strided batch),
// bias and clamp in the GEMM's epilogue; a 1x1x1, stride-1, unpadded one multiplies the input
// itself; depthwise ones are a direct kernel. The scratch (conv_nd_plan.h) is the whole
// batch's columns, at most kConvNdScratchBudget bytes (the runtime then goes in chunks).
// With the attribute "winograd" (choose_conv3d_winograd, its weight input already
// transformed) -> aotc::rt::cuda::conv3d_winograd_f32 (conv3d_winograd.cu), its scratch from
// conv3d_winograd_plan.h.
#include <aotc/rt/cuda/conv3d_winograd_plan.h>
#include <aotc/rt/cuda/conv_nd_plan.h>

#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_conv3d(const EmitContext& e, const ir::Op& op, size_t) {
  const std::string operands = e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) +
                               ", " + e.out(op.outputs[0]) + ", " + e.scratch(op) + ");";
  if (op.has(ir::attr::winograd))
    return {"", kernel_call(op, conv_nd_params_code(op),
                            "aotc::rt::cuda::conv3d_winograd_f32(ex, p, " +
                                std::to_string(op.i(ir::attr::winograd)) + ", " + operands)};
  return {"", kernel_call(op, conv_nd_params_code(op), "aotc::rt::cuda::conv3d_f32(ex, p, " + operands)};
}

int64_t conv3d_scratch(const ir::Op& op) {
  const rt::ConvNdParams p = conv_nd_params_of(op);
  if (op.has(ir::attr::winograd)) return rt::cuda::conv3d_winograd_scratch_bytes(p, op.i(ir::attr::winograd));
  return rt::cuda::conv3d_cuda_scratch_bytes(p);
}

}  // namespace

void register_conv3d_cuda(CudaRegistry& r) { r.add(ir::kind::conv3d, emit_conv3d, conv3d_scratch); }

}  // namespace aotc::ops::cuda
