// IR "scatter" (scatter / scatter_ of a src tensor or a scalar, no reduction) on CUDA ->
// aotc::rt::cuda::scatter (runtime/cuda/kernels/scatter.cu): self copied into the output,
// then the scatter, the last write in index order winning as on the CPU; its scratch as
// scatter_plan.h says.
#include <aotc/rt/cuda/scatter_plan.h>

#include "../indexing.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_scatter(const EmitContext& e, const ir::Op& op, size_t) {
  const bool has_src = op.inputs.size() > 2;
  const ir::Value& y = e.graph.value(op.outputs[0]);
  return {"", kernel_call(op, scatter_params_code(e, op),
                          "aotc::rt::cuda::scatter(stream, p, " + e.in(op.inputs[0]) + ", " +
                              std::to_string(y.bytes()) + ", " + (has_src ? e.in(op.inputs[2]) : "nullptr") +
                              ", " + (has_src ? "nullptr" : "value") + ", " + e.in(op.inputs[1]) + ", " +
                              e.out(op.outputs[0]) + ", " + e.scratch(op) + ");")};
}

// The kernel's parameters as far as its scratch depends on them, from the attributes the
// lowering (scatter.cpp) records for this.
int64_t scatter_scratch(const ir::Op& op) {
  const std::vector<int64_t>& dims = op.ints("index_shape");
  rt::ScatterParams p;
  p.rank = static_cast<int32_t>(dims.size());
  p.dim = static_cast<int32_t>(op.i("dim"));
  for (size_t d = 0; d < dims.size() && d < 8; ++d) p.dims[d] = dims[d];
  p.y_dim_size = op.i("y_dim_size");
  return rt::cuda::scatter_scratch_bytes(p);
}

}  // namespace

void register_scatter_cuda(CudaRegistry& r) {
  // inputs 0 and 2, self and src: any dtype (the kernel moves bytes); input 1, the index:
  // int64 or int32
  r.add(ir::kind::scatter, emit_scatter, scatter_scratch, [](const ir::Op&, size_t index, ir::DType t) {
    return index != 1 || t == ir::DType::Int64 || t == ir::DType::Int32;
  });
}

}  // namespace aotc::ops::cuda
