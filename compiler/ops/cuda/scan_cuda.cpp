// IR "scan" (cumprod, logcumsumexp, cummax, cummin) on CUDA -> aotc::rt::cuda::scan
// (runtime/cuda/kernels/scan.cu), the CPU kernel's arithmetic and dtypes.
#include "../elementwise.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_scan(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, "", "aotc::rt::cuda::scan(stream, " + scan_arguments(e, op) + ");")};
}

}  // namespace

void register_scan_cuda(CudaRegistry& r) {
  r.add(ir::kind::scan, emit_scan, nullptr,
        [](const ir::Op&, size_t, ir::DType t) { return t == ir::DType::Float32 || t == ir::DType::Int64; });
}

}  // namespace aotc::ops::cuda
