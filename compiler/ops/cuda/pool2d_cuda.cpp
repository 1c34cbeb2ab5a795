// IR "max_pool2d" / "avg_pool2d" on CUDA -> aotc::rt::cuda::max_pool2d_f32 / avg_pool2d_f32,
// max_pool2d_nhwc_f32 for NHWC tensors.
#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

// NHWC tensors (convert_to_channels_last.cpp converts max pooling only).
bool channels_last(const ir::Op& op) {
  return op.has(ir::attr::channels_last) && op.b(ir::attr::channels_last);
}

CudaCode emit_pool(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, pool2d_params_code(op).str(),
                          "aotc::rt::cuda::" + op.kind + (channels_last(op) ? "_nhwc" : "") +
                              "_f32(stream, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_pool2d_cuda(CudaRegistry& r) {
  r.add(ir::kind::max_pool2d, emit_pool);
  r.add(ir::kind::avg_pool2d, emit_pool);
}

}  // namespace aotc::ops::cuda
