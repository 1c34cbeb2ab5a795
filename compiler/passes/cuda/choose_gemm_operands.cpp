// choose_gemm_operands: for --precision fp16 / bf16, a "gemm" whose one operand is a weight
// (a linear layer's W, an addmm's matrix) gets that weight converted at compile time to the
// 16-bit type; the other operand, an activation, is rounded into scratch as the op runs,
// and cuBLAS multiplies 16-bit operands with float32 accumulation (gemm_16bit). Records
// "a_16bit" / "b_16bit" for the generator and the scratch planner. GEMMs of two
// activations (attention) keep float32 operands; cuBLAS rounds them itself.
// For --precision fp32, a "gemm" whose B is a weight (trans_b: a linear layer's W) gets
// "b_weight": the generator calls gemm_weight_f32, which may multiply a split of the weight
// made once at context creation (gemm_f16x2).
#include <aotc/rt/cuda/gemm_plan.h>

#include "../../ops/cuda/cuda_registry.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {

void choose_gemm_operands(ir::Graph& graph, rt::cuda::Precision precision) {
  if (precision == rt::cuda::Precision::Fp32) {
    for (ir::Op& op : graph.ops)
      if (op.kind == ir::kind::gemm && !op.has(ir::attr::conv_geometry) && op.b("trans_b") &&
          !op.b("trans_a") && is_whole_f32_constant(graph, op.inputs[1]))
        op.attrs[ir::attr::b_weight] = true;
    return;
  }
  if (precision != rt::cuda::Precision::Fp16 && precision != rt::cuda::Precision::Bf16) return;
  for (ir::Op& op : graph.ops) {
    if (op.kind != ir::kind::gemm || op.has(ir::attr::a_16bit))
      continue;  // decided already (convert_to_channels_last.cpp)
    const bool a_weight = is_whole_f32_constant(graph, op.inputs[0]);
    const bool b_weight = is_whole_f32_constant(graph, op.inputs[1]);
    if (a_weight == b_weight) continue;  // two activations (or two constants): float32 operands
    const int weight = a_weight ? 0 : 1;
    op.inputs[static_cast<size_t>(weight)] =
        converted_constant(graph, op.inputs[static_cast<size_t>(weight)], precision);
    op.attrs[ir::attr::a_16bit] = a_weight;
    op.attrs[ir::attr::b_16bit] = b_weight;
    op.attrs[ir::attr::precision] = static_cast<int64_t>(precision);
  }
}

}  // namespace aotc::passes::cuda
