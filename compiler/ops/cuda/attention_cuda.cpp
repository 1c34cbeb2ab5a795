// IR "attention" (scaled_dot_product_attention, the MHA fast path, the transformer encoder
// layer) on CUDA -> aotc::rt::cuda::attention_f32 (runtime/cuda/kernels/attention.cu): two
// cuBLAS strided-batched GEMMs around a mask + softmax kernel, the scores in arena scratch.
#include <aotc/rt/cuda/attention_plan.h>

#include "../sequence_ops.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

rt::AttentionParams params_of(const ir::Op& op) {
  rt::AttentionParams p;
  p.batch = op.i("batch");
  p.heads = op.i("heads");
  p.q_len = op.i("q_len");
  p.kv_len = op.i("kv_len");
  p.head_dim = op.i("head_dim");
  p.v_head_dim = op.i("v_head_dim");
  return p;
}

CudaCode emit_attention(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, attention_params_code(op).str(),
                          "aotc::rt::cuda::attention_f32(ex, p, " + attention_operands(e, op) + ", " +
                              e.scratch(op) + ");")};
}

}  // namespace

void register_attention_cuda(CudaRegistry& r) {
  r.add(ir::kind::attention, emit_attention,
        [](const ir::Op& op) { return rt::cuda::attention_scratch_bytes(params_of(op)); });
}

}  // namespace aotc::ops::cuda
