// IR "gather" (torch.gather, take_along_dim) on CUDA -> aotc::rt::cuda::gather
// (runtime/cuda/kernels/gather.cu): one thread per output element, any dtype.
#include "../indexing.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_gather(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, gather_params_code(e, op).str(),
                          "aotc::rt::cuda::gather(stream, p, " + e.in(op.inputs[0]) + ", " +
                              e.in(op.inputs[1]) + ", " + e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_gather_cuda(CudaRegistry& r) {
  // input 0, the data: any dtype (the kernel moves bytes); input 1, the index: int64 or int32
  r.add(ir::kind::gather, emit_gather, nullptr, [](const ir::Op&, size_t index, ir::DType t) {
    return index == 0 || t == ir::DType::Int64 || t == ir::DType::Int32;
  });
}

}  // namespace aotc::ops::cuda
