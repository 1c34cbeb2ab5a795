// IR "upsample" (F.interpolate: nearest, nearest-exact, (bi/tri)linear, bicubic) on CUDA ->
// aotc::rt::cuda::upsample_f32 (runtime/cuda/kernels/upsample.cu): one thread per output
// element, no scratch (the CPU kernel's column table is not needed).
#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_upsample(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, upsample_params_code(op).str(),
                          "aotc::rt::cuda::upsample_f32(stream, p, " + e.in(op.inputs[0]) + ", " +
                              e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_upsample_cuda(CudaRegistry& r) { r.add(ir::kind::upsample, emit_upsample); }

}  // namespace aotc::ops::cuda
