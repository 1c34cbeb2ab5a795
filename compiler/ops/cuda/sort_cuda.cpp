// IR "sort" (topk, sort, argsort, msort) on CUDA -> aotc::rt::cuda::sort_lines
// (runtime/cuda/kernels/sort.cu), the CPU kernel's order and dtypes.
#include "../elementwise.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_sort(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, "", "aotc::rt::cuda::sort_lines(stream, " + sort_arguments(e, op) + ");")};
}

}  // namespace

void register_sort_cuda(CudaRegistry& r) {
  r.add(ir::kind::sort, emit_sort, nullptr, [](const ir::Op&, size_t, ir::DType t) {
    return t == ir::DType::Float32 || t == ir::DType::Int64 || t == ir::DType::Int32 || t == ir::DType::Bool;
  });
}

}  // namespace aotc::ops::cuda
