// IR "cast" on CUDA: a kernel generated for this op, its element count and both element
// types compile-time constants, converting as the CPU's cast_elements does (float to
// integer truncates, NaN gives 0 and out-of-range values clamp; anything to bool is != 0):
// aotc::rt::cuda::cast_apply in aotc/rt/cuda/pointwise.cuh.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_cast(const EmitContext& e, const ir::Op& op, size_t index) {
  const ir::Value& x = e.graph.value(op.inputs[0]);
  const ir::Value& y = e.graph.value(op.outputs[0]);
  const int64_t count = ir::numel(y.shape);
  const std::string name = kernel_name(index), from = EmitContext::c_type(x.dtype),
                    to = EmitContext::c_type(y.dtype);
  CudaCode code;
  code.kernels =
      "__global__ void __launch_bounds__(256) " + name + "(const " + from + "* __restrict__ x, " + to +
      "* y) {\n"
      "  const int64_t i = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;\n"
      "  if (i >= " +
      std::to_string(count) + "ll) return;\n  y[i] = aotc::rt::cuda::cast_apply<" + to + ">(x[i]);\n}\n";
  if (count > 0)
    code.launch = kernel_call(op, "",
                              name + "<<<" + std::to_string((count + 255) / 256) + ", 256, 0, stream>>>(" +
                                  e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) +
                                  "); aotc::rt::cuda::check_launch(\"" + name + "\");");
  return code;
}

}  // namespace

void register_cast_cuda(CudaRegistry& r) { r.add("cast", emit_cast); }

}  // namespace aotc::ops::cuda
