// IR "softmax" (softmax and log_softmax over one dim) on CUDA -> aotc::rt::cuda::softmax_f32.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_softmax(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, "",
                          "aotc::rt::cuda::softmax_f32(stream, " + std::to_string(op.i("outer")) + ", " +
                              std::to_string(op.i("axis")) + ", " + std::to_string(op.i("inner")) + ", " +
                              (op.b("log") ? "true" : "false") + ", " + e.in(op.inputs[0]) + ", " +
                              e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_softmax_cuda(CudaRegistry& r) { r.add(ir::kind::softmax, emit_softmax); }

}  // namespace aotc::ops::cuda
