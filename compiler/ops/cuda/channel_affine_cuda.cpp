// IR "channel_affine" (a batch norm not folded into a convolution) on CUDA ->
// aotc::rt::cuda::channel_affine_f32.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_channel_affine(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, "",
                          "aotc::rt::cuda::channel_affine_f32(stream, " + std::to_string(op.i("n")) + ", " +
                              std::to_string(op.i("c")) + ", " + std::to_string(op.i("spatial")) + ", " +
                              e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " +
                              EmitContext::f32(op.f(ir::attr::clamp_lo)) + ", " +
                              EmitContext::f32(op.f(ir::attr::clamp_hi)) + ", " + e.in(op.inputs[0]) + ", " +
                              e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_channel_affine_cuda(CudaRegistry& r) { r.add(ir::kind::channel_affine, emit_channel_affine); }

}  // namespace aotc::ops::cuda
