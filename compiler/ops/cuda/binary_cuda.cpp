// IR "binary" on CUDA: a kernel generated for this op with torch's broadcasting folded
// into compile-time index arithmetic (an operand read densely or as a scalar needs none),
// and the relu/clamp that the CUDA pipeline fused into it (the residual add + relu of
// a ResNet block is one pass).
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

// Index expression of one operand for output element i.
std::string operand_index(const std::vector<int64_t>& strides, const ir::Shape& out, const std::string& var,
                          std::string& code) {
  const std::vector<int64_t> dense = dense_strides(out);
  bool all_zero = true, is_dense = true;  // dims of size 1 do not move the index
  for (size_t d = 0; d < out.size(); ++d) {
    all_zero = all_zero && (strides[d] == 0 || out[d] == 1);
    is_dense = is_dense && (strides[d] == dense[d] || out[d] == 1);
  }
  if (all_zero) return "0";
  if (is_dense) return "i";
  code += "  int64_t " + var + " = 0;\n  {\n    int64_t r = i;\n";
  for (size_t d = out.size(); d-- > 0;) {
    const std::string dim = std::to_string(out[d]) + "ll";
    if (strides[d] != 0)
      code += "    " + var + " += (r % " + dim + ") * " + std::to_string(strides[d]) + "ll;\n";
    if (d > 0) code += "    r /= " + dim + ";\n";
  }
  code += "  }\n";
  return var;
}

CudaCode emit_binary(const EmitContext& e, const ir::Op& op, size_t index) {
  const ir::Shape& out = e.graph.value(op.outputs[0]).shape;
  const int64_t count = ir::numel(out);
  const std::string name = kernel_name(index);
  std::string body;
  const std::string ia =
      operand_index(broadcast_strides(e.graph.value(op.inputs[0]).shape, out), out, "ia", body);
  const std::string ib =
      operand_index(broadcast_strides(e.graph.value(op.inputs[1]).shape, out), out, "ib", body);
  // Comparisons and logical ops write bool (where's condition); the rest float.
  const bool to_bool = e.graph.value(op.outputs[0]).dtype == ir::DType::Bool;
  // (Float operands, or for comparisons any one dtype: the lowering converts both to it.)
  const std::string in_type = EmitContext::c_type(e.graph.value(op.inputs[0]).dtype);
  const std::string op_code = "<static_cast<aotc::rt::BinaryOp>(" + std::to_string(op.i("op")) + ")>";
  std::string value = to_bool ? "aotc::rt::cuda::compare_apply" + op_code + "(a[" + ia + "], b[" + ib + "])"
                              : "aotc::rt::cuda::binary_apply" + op_code + "(a[" + ia + "], b[" + ib + "], " +
                                    EmitContext::f32(op.f("alpha")) + ")";
  if (op.has(ir::attr::clamp_lo))
    value = "aotc::rt::cuda::clamp_apply(" + value + ", " + EmitContext::f32(op.f(ir::attr::clamp_lo)) +
            ", " + EmitContext::f32(op.f(ir::attr::clamp_hi)) + ")";
  CudaCode code;
  code.kernels = "__global__ void __launch_bounds__(256) " + name + "(const " + in_type +
                 "* __restrict__ a, const " + in_type + "* __restrict__ b, " + (to_bool ? "bool" : "float") +
                 "* y, " + kKernelDimsParam +
                 ") {\n"
                 "  const int64_t i = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;\n"
                 "  if (i >= " +
                 std::to_string(count) + "ll) return;\n" + body + "  y[i] = " + value + ";\n}\n";
  if (count > 0)
    code.launch =
        kernel_call(op, "",
                    name + "<<<" + blocks_of_256(count) + ", 256, 0, stream>>>(" + e.in(op.inputs[0]) + ", " +
                        e.in(op.inputs[1]) + ", " + e.out(op.outputs[0]) +
                        ", aotc_dims); aotc::rt::cuda::check_launch(\"" + name + "\");");
  return code;
}

}  // namespace

void register_binary_cuda(CudaRegistry& r) {
  // Comparisons and logical ops of integer or bool operands (a mask from token ids).
  r.add(ir::kind::binary, emit_binary, nullptr, [](const ir::Op& op, size_t, ir::DType t) {
    return t == ir::DType::Float32 || rt::binary_op_gives_bool(static_cast<rt::BinaryOp>(op.i("op")));
  });
}

}  // namespace aotc::ops::cuda
