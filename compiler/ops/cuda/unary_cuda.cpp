// IR "unary" on CUDA: a kernel generated for this op, its element count a compile-time
// constant, the math from aotc/rt/cuda/pointwise.cuh (the CPU kernels' formulas).
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_unary(const EmitContext& e, const ir::Op& op, size_t index) {
  const int64_t count = ir::numel(e.graph.value(op.outputs[0]).shape);
  const std::string name = kernel_name(index);
  CudaCode code;
  code.kernels = "__global__ void __launch_bounds__(256) " + name +
                 "(const float* __restrict__ x, float* y) {\n"
                 "  const int64_t i = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;\n"
                 "  if (i >= " +
                 std::to_string(count) +
                 "ll) return;\n"
                 "  y[i] = aotc::rt::cuda::unary_apply<static_cast<aotc::rt::UnaryOp>(" +
                 std::to_string(op.i("op")) + ")>(x[i], " + EmitContext::f32(op.f("a")) + ", " +
                 EmitContext::f32(op.f("b")) + ");\n}\n";
  if (count > 0)
    code.launch = kernel_call(op, "",
                              name + "<<<" + std::to_string((count + 255) / 256) + ", 256, 0, stream>>>(" +
                                  e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) +
                                  "); aotc::rt::cuda::check_launch(\"" + name + "\");");
  return code;
}

}  // namespace

void register_unary_cuda(CudaRegistry& r) { r.add("unary", emit_unary); }

}  // namespace aotc::ops::cuda
