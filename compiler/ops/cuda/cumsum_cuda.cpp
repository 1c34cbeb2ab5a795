// IR "cumsum" on CUDA -> aotc::rt::cuda::cumsum (runtime/cuda/kernels/cumsum.cu), in
// float32 or int64 as on the CPU (the lowering casts other dtypes to one of them).
#include "../elementwise.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_cumsum(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, "", "aotc::rt::cuda::cumsum(stream, " + cumsum_arguments(e, op) + ");")};
}

}  // namespace

void register_cumsum_cuda(CudaRegistry& r) {
  r.add(ir::kind::cumsum, emit_cumsum, nullptr,
        [](const ir::Op&, size_t, ir::DType t) { return t == ir::DType::Float32 || t == ir::DType::Int64; });
}

}  // namespace aotc::ops::cuda
