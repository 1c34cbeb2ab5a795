// IR "adaptive_avg_pool3d" / "adaptive_max_pool3d" on CUDA (1-d and 2-d adaptive max
// pooling as 3-d with leading 1s) -> aotc::rt::cuda::adaptive_avg_pool3d_f32 /
// adaptive_max_pool3d_f32 (runtime/cuda/kernels/adaptive_avg_pool3d.cu, adaptive_max_pool3d.cu).
#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_adaptive_pool3d(const EmitContext& e, const ir::Op& op, size_t) {
  std::string call =
      "aotc::rt::cuda::" + op.kind + "_f32(stream, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]);
  if (op.kind == ir::kind::adaptive_max_pool3d) call += ", " + e.out(op.outputs[1]);  // the indices
  return {"", kernel_call(op, adaptive_pool3d_params_code(op).str(), call + ");")};
}

}  // namespace

void register_adaptive_pool3d_cuda(CudaRegistry& r) {
  r.add(ir::kind::adaptive_avg_pool3d, emit_adaptive_pool3d);
  r.add(ir::kind::adaptive_max_pool3d, emit_adaptive_pool3d);
}

}  // namespace aotc::ops::cuda
