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

void register_embedding_cuda(CudaRegistry& r) {
  // input 1, the ids: int64 or int32
  r.add(ir::kind::embedding, emit_embedding, nullptr,
        [](const ir::Op&, size_t index, ir::DType t) { return t == ir::DType::Float32 || index == 1; });
}

}  // namespace aotc::ops::cuda
