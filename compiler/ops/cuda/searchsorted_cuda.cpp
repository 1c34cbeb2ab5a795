// IR "searchsorted" (torch.searchsorted, torch.bucketize) on CUDA ->
// aotc::rt::cuda::searchsorted (runtime/cuda/kernels/searchsorted.cu), the CPU's search.
#include "../elementwise.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_searchsorted(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, "",
                          "aotc::rt::cuda::searchsorted(stream, " + searchsorted_arguments(e, op) + ");")};
}

}  // namespace

void register_searchsorted_cuda(CudaRegistry& r) {
  r.add(ir::kind::searchsorted, emit_searchsorted, nullptr,
        [](const ir::Op&, size_t, ir::DType t) { return t == ir::DType::Float32 || t == ir::DType::Int64; });
}

}  // namespace aotc::ops::cuda
