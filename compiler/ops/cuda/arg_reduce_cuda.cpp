// IR "arg_reduce" (max / min along a dim with indices, argmax, argmin) on CUDA ->
// aotc::rt::cuda::arg_reduce (runtime/cuda/kernels/arg_reduce.cu), for float32, int64,
// int32 and bool as on the CPU.
#include "../elementwise.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_arg_reduce(const EmitContext& e, const ir::Op& op, size_t) {
  return {"",
          kernel_call(op, "", "aotc::rt::cuda::arg_reduce(stream, " + arg_reduce_arguments(e, op) + ");")};
}

}  // namespace

void register_arg_reduce_cuda(CudaRegistry& r) {
  r.add(ir::kind::arg_reduce, emit_arg_reduce, nullptr, [](const ir::Op&, size_t, ir::DType t) {
    return t == ir::DType::Float32 || t == ir::DType::Int64 || t == ir::DType::Int32 || t == ir::DType::Bool;
  });
}

}  // namespace aotc::ops::cuda
