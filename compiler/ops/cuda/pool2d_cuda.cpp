// IR "max_pool2d" / "avg_pool2d" on CUDA -> aotc::rt::cuda::max_pool2d_f32 / avg_pool2d_f32.
#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_pool(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, pool2d_params_code(op).str(),
                          "aotc::rt::cuda::" + op.kind + "_f32(stream, p, " + e.in(op.inputs[0]) + ", " +
                              e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_pool2d_cuda(CudaRegistry& r) {
  r.add("max_pool2d", emit_pool);
  r.add("avg_pool2d", emit_pool);
}

}  // namespace aotc::ops::cuda
