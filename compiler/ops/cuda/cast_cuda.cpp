// IR "cast" on CUDA: a kernel generated for this op, its element count and both element
// types compile-time constants, converting as the CPU's rt::cast does (float to
// integer truncates, NaN gives 0 and out-of-range values clamp; anything to bool is != 0):
// aotc::rt::cuda::cast_apply in aotc/rt/cuda/pointwise.cuh.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_cast(const EmitContext& e, const ir::Op& op, size_t index) {
  return elementwise_map(
      e, op, index,
      "aotc::rt::cuda::cast_apply<" + EmitContext::c_type(e.graph.value(op.outputs[0]).dtype) + ">(x[i])");
}

}  // namespace

void register_cast_cuda(CudaRegistry& r) { r.add(ir::kind::cast, emit_cast, nullptr, any_dtype); }

}  // namespace aotc::ops::cuda
