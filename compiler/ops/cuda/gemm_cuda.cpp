// IR "gemm" and "batched_gemm" on CUDA -> aotc::rt::cuda::gemm_f32 / batched_gemm_f32
// (runtime/cuda/kernels/gemm_cublas.cu): cuBLAS, then the bias, residual and clamp
// epilogue; gemm_16bit where gemm_operands_cuda.cpp made a weight operand 16-bit.
#include <aotc/rt/cuda/gemm_plan.h>

#include "../gemm.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

// Whether gemm_operands_cuda.cpp gave the op a 16-bit weight operand.
bool has_16bit_operand(const ir::Op& op) { return op.has("a_16bit") && (op.b("a_16bit") || op.b("b_16bit")); }

CudaCode emit_gemm(const EmitContext& e, const ir::Op& op, size_t) {
  const ParamsCode p = gemm_params_code(e, op);
  if (has_16bit_operand(op))
    return {"", kernel_call(op, p.str(),
                            "aotc::rt::cuda::gemm_16bit(ex, p, " + e.in(op.inputs[0]) + ", " +
                                (op.b("a_16bit") ? "true" : "false") + ", " + e.in(op.inputs[1]) + ", " +
                                (op.b("b_16bit") ? "true" : "false") + ", " + e.in(op.inputs[2]) + ", " +
                                e.out(op.outputs[0]) + ", " + e.scratch(op) + ");")};
  return {"", kernel_call(op, p.str(), "aotc::rt::cuda::gemm_f32(ex, p, " + gemm_operands(e, op) + ");")};
}

CudaCode emit_batched_gemm(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, batched_gemm_params_code(op).str(),
                          "aotc::rt::cuda::batched_gemm_f32(ex, p, " + gemm_operands(e, op) + ");")};
}

}  // namespace

void register_gemm_cuda(CudaRegistry& r) {
  r.add("gemm", emit_gemm, [](const ir::Op& op) -> int64_t {
    return has_16bit_operand(op)
               ? rt::cuda::gemm_16bit_scratch_bytes(gemm_params_of(op), op.b("a_16bit"), op.b("b_16bit"))
               : 0;
  });
  r.add("batched_gemm", emit_batched_gemm);
}

}  // namespace aotc::ops::cuda
