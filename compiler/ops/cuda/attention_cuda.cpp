// IR "attention" (scaled_dot_product_attention, the MHA fast path, the transformer encoder
// layer) on CUDA -> aotc::rt::cuda::attention_f32 (runtime/cuda/kernels/attention.cu): two
// cuBLAS strided-batched GEMMs around a mask + softmax kernel, the scores in arena scratch.
#include <aotc/rt/cuda/attention_plan.h>

#include "../sequence_ops.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_attention(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, attention_params_code(op).str(),
                          "aotc::rt::cuda::attention_f32(ex, p, " + attention_operands(e, op) + ", " +
                              e.scratch(op) + ");")};
}

}  // namespace

void register_attention_cuda(CudaRegistry& r) {
  r.add(
      ir::kind::attention, emit_attention,
      [](const ir::Op& op) { return rt::cuda::attention_scratch_bytes(attention_params_of(op)); },
      // input 3, the mask: float or bool
      [](const ir::Op&, size_t index, ir::DType t) { return t == ir::DType::Float32 || index == 3; });
}

}  // namespace aotc::ops::cuda
