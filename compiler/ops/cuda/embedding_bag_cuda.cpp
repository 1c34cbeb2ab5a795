// IR "embedding_bag" on CUDA -> aotc::rt::cuda::embedding_bag_f32
// (runtime/cuda/kernels/embedding_bag.cu): a block per bag.
#include "../sequence_ops.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_embedding_bag(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(
                  op, embedding_bag_params_code(op).str(),
                  "aotc::rt::cuda::embedding_bag_f32(stream, p, " + embedding_bag_operands(e, op) + ");")};
}

}  // namespace

void register_embedding_bag_cuda(CudaRegistry& r) {
  // inputs 1 and 2, the ids and offsets: int64 or int32
  r.add(ir::kind::embedding_bag, emit_embedding_bag, nullptr, [](const ir::Op&, size_t index, ir::DType t) {
    return t == ir::DType::Float32 || index == 1 || index == 2;
  });
}

}  // namespace aotc::ops::cuda
