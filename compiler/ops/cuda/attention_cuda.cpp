// IR "attention" (scaled_dot_product_attention, the MHA fast path, the transformer encoder
// layer) on CUDA -> aotc::rt::cuda::attention_f32 (runtime/cuda/kernels/attention.cu): two
// cuBLAS strided-batched GEMMs around a mask + softmax kernel, the scores in arena scratch;
// attention_16bit_output where store_activations_16bit.cpp keeps the output 16-bit ("c_16bit").
#include <aotc/rt/cuda/attention_plan.h>

#include "../sequence_ops.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

bool output_16bit(const ir::Op& op) { return op.has(ir::attr::c_16bit) && op.b(ir::attr::c_16bit); }

CudaCode emit_attention(const EmitContext& e, const ir::Op& op, size_t) {
  const char* kernel = output_16bit(op) ? "attention_16bit_output" : "attention_f32";
  return {"", kernel_call(op, attention_params_code(op).str(),
                          std::string("aotc::rt::cuda::") + kernel + "(ex, p, " + attention_operands(e, op) +
                              ", " + e.scratch(op) + ");")};
}

}  // namespace

void register_attention_cuda(CudaRegistry& r) {
  r.add(
      ir::kind::attention, emit_attention,
      [](const ir::Op& op) {
        return rt::cuda::attention_scratch_bytes(attention_params_of(op), output_16bit(op));
      },
      // input 3, the mask: float or bool
      [](const ir::Op&, size_t index, ir::DType t) { return t == ir::DType::Float32 || index == 3; });
}

}  // namespace aotc::ops::cuda
