// IR "max_pool3d" / "avg_pool3d" on CUDA (3-d pooling, and 1-d, 2-d and 3-d max pooling
// that returns indices, all as 3-d with leading 1s) -> aotc::rt::cuda::max_pool3d_f32 /
// avg_pool3d_f32 (runtime/cuda/kernels/max_pool3d.cu, avg_pool3d.cu).
#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_pool3d(const EmitContext& e, const ir::Op& op, size_t) {
  std::string call =
      "aotc::rt::cuda::" + op.kind + "_f32(stream, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]);
  if (op.kind == ir::kind::max_pool3d)
    call += ", " + (op.outputs.size() > 1 ? e.out(op.outputs[1]) : "nullptr");  // the indices
  return {"", kernel_call(op, pool3d_params_code(op).str(), call + ");")};
}

}  // namespace

void register_pool3d_cuda(CudaRegistry& r) {
  r.add(ir::kind::max_pool3d, emit_pool3d);
  r.add(ir::kind::avg_pool3d, emit_pool3d);
}

}  // namespace aotc::ops::cuda
