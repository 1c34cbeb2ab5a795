// IR "layer_norm" (layer_norm, native_layer_norm) on CUDA -> aotc::rt::cuda::layer_norm_f32
// (runtime/cuda/kernels/layer_norm.cu): a warp or a block per row, float32 reductions. A
// 4th input, an int32 row order with attributes "row_period" and "row_src_period"
// (fuse_row_gathers.cpp), reorders the rows it reads. layer_norm_16bit where
// store_activations_16bit.cpp keeps the output in the 16-bit type ("c_16bit"),
// layer_norm_16bit_input where it keeps the input so (the output either type).
#include "../sequence_ops.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_layer_norm(const EmitContext& e, const ir::Op& op, size_t) {
  const std::string gather = row_gather_code(e, op, 3);
  const std::string rows = e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " +
                           e.out(op.outputs[0]);
  const std::string order = gather.empty() ? "" : ", " + gather;
  const bool out_16bit = op.has(ir::attr::c_16bit) && op.b(ir::attr::c_16bit);
  const ir::DType x_type = e.graph.value(op.inputs[0]).dtype;
  if (x_type == ir::DType::Float16 || x_type == ir::DType::BFloat16) {
    if (op.outputs.size() != 1 || (out_16bit && e.graph.value(op.outputs[0]).dtype != x_type))
      throw CompileError("internal: a layer norm of 16-bit rows with statistics or another output type");
    return {"",
            kernel_call(
                op, layer_norm_params_code(op).str(),
                std::string("aotc::rt::cuda::layer_norm_16bit_input(stream, aotc::rt::cuda::Precision::") +
                    (x_type == ir::DType::Float16 ? "Fp16" : "Bf16") + ", p, " + rows + ", " +
                    (out_16bit ? "true" : "false") + order + ");")};
  }
  if (out_16bit) {
    const bool fp16 = e.graph.value(op.outputs[0]).dtype == ir::DType::Float16;
    return {"",
            kernel_call(op, layer_norm_params_code(op).str(),
                        std::string("aotc::rt::cuda::layer_norm_16bit(stream, aotc::rt::cuda::Precision::") +
                            (fp16 ? "Fp16" : "Bf16") + ", p, " + rows + order + ");")};
  }
  const bool stats = op.outputs.size() == 3;  // native_layer_norm's mean and rstd
  return {"", kernel_call(op, layer_norm_params_code(op).str(),
                          "aotc::rt::cuda::layer_norm_f32(stream, p, " + rows + ", " +
                              (stats ? e.out(op.outputs[1]) : "nullptr") + ", " +
                              (stats ? e.out(op.outputs[2]) : "nullptr") + order + ");")};
}

}  // namespace

void register_layer_norm_cuda(CudaRegistry& r) { r.add(ir::kind::layer_norm, emit_layer_norm); }

}  // namespace aotc::ops::cuda
