// IR "index_gather" (index_select, x[idx] with index tensors, masked_select and take) on
// CUDA -> aotc::rt::cuda::index_gather (runtime/cuda/kernels/index_gather.cu): the selected
// blocks copied in wide units, any dtype.
#include "../indexing.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_index_gather(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, index_gather_params_code(e, op),
                          "aotc::rt::cuda::index_gather(stream, p, " + e.in(op.inputs[0]) + ", idx, " +
                              e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_index_gather_cuda(CudaRegistry& r) {
  // input 0, the data: any dtype (the kernel moves bytes); the others, the indices: int64
  // or int32 (a bool mask is made constant int64 indices when lowered)
  r.add(ir::kind::index_gather, emit_index_gather, nullptr, [](const ir::Op&, size_t index, ir::DType t) {
    return index == 0 || t == ir::DType::Int64 || t == ir::DType::Int32;
  });
}

}  // namespace aotc::ops::cuda
