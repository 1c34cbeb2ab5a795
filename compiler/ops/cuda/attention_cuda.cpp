// IR "attention" (scaled_dot_product_attention, the MHA fast path, the transformer encoder
// layer) on CUDA -> aotc::rt::cuda::attention_f32 (runtime/cuda/kernels/attention.cu): two
// cuBLAS strided-batched GEMMs around a mask + softmax kernel, the scores in arena scratch.
#include <aotc/rt/cuda/attention_plan.h>

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

std::string pointer(const EmitContext& e, int id, int64_t offset) {
  if (id < 0) return "nullptr";
  return offset ? "(" + e.in(id) + " + " + std::to_string(offset) + ")" : e.in(id);
}

CudaCode emit_attention(const EmitContext& e, const ir::Op& op, size_t) {
  ParamsCode p("aotc::rt::AttentionParams");
  p.set("batch", op.i("batch"))
      .set("heads", op.i("heads"))
      .set("q_len", op.i("q_len"))
      .set("kv_len", op.i("kv_len"))
      .set("head_dim", op.i("head_dim"))
      .set("v_head_dim", op.i("v_head_dim"))
      .set_f32("scale", op.f("scale"))
      .set_bool("causal", op.b("causal"))
      .set_array("q_strides", op.ints("q_strides"))
      .set_array("k_strides", op.ints("k_strides"))
      .set_array("v_strides", op.ints("v_strides"))
      .set_array("out_strides", op.ints("out_strides"))
      .raw("mask_kind", "static_cast<aotc::rt::AttentionMask>(" + std::to_string(op.i("mask_kind")) + ")")
      .set_array("mask_strides", op.ints("mask_strides"))
      .raw("weights", "static_cast<aotc::rt::AttentionWeights>(" + std::to_string(op.i("weights")) + ")");
  const std::string probs = op.outputs.size() > 1 ? e.out(op.outputs[1]) : "nullptr";
  return {"",
          kernel_call(op, p.str(),
                      "aotc::rt::cuda::attention_f32(ex, p, " + pointer(e, op.inputs[0], op.i("q_offset")) +
                          ", " + pointer(e, op.inputs[1], op.i("k_offset")) + ", " +
                          pointer(e, op.inputs[2], op.i("v_offset")) + ", " + pointer(e, op.inputs[3], 0) +
                          ", " + e.out(op.outputs[0]) + ", " + probs + ", " + e.scratch(op) + ");")};
}

}  // namespace

void register_attention_cuda(CudaRegistry& r) {
  r.add("attention", emit_attention,
        [](const ir::Op& op) { return rt::cuda::attention_scratch_bytes(params_of(op)); });
}

}  // namespace aotc::ops::cuda
