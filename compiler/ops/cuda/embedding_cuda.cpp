// IR "embedding" on CUDA -> aotc::rt::cuda::embedding_f32 (runtime/cuda/kernels/embedding.cu):
// a gather of table rows by int64 or int32 ids.
#include "../sequence_ops.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_embedding(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, embedding_params_code(op).str(),
                          "aotc::rt::cuda::embedding_f32(stream, p, " + e.in(op.inputs[1]) + ", " +
                              e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_embedding_cuda(CudaRegistry& r) { r.add(ir::kind::embedding, emit_embedding); }

}  // namespace aotc::ops::cuda
