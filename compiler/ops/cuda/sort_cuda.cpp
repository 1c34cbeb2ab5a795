// IR "sort" (topk, sort, argsort, msort) on CUDA -> aotc::rt::cuda::sort_lines
// (runtime/cuda/kernels/sort.cu), the CPU kernel's order and dtypes; lines longer than a
// chunk merge their sorted chunks in arena scratch (sort_plan.h).
#include <aotc/rt/cuda/sort_plan.h>

#include "../elementwise.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_sort(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, "",
                          "aotc::rt::cuda::sort_lines(stream, " + sort_arguments(e, op) + ", " +
                              e.scratch(op) + ");")};
}

}  // namespace

void register_sort_cuda(CudaRegistry& r) {
  const auto scratch = [](const ir::Op& op) {
    return rt::cuda::sort_lines_scratch_bytes(op.i("elem_size"), op.i("outer"), op.i("axis"), op.i("inner"),
                                              op.i("k"));
  };
  r.add(ir::kind::sort, emit_sort, scratch, [](const ir::Op&, size_t, ir::DType t) {
    return t == ir::DType::Float32 || t == ir::DType::Int64 || t == ir::DType::Int32 || t == ir::DType::Bool;
  });
}

}  // namespace aotc::ops::cuda
