// IR "scatter_reduce" (scatter_add, scatter_reduce, index_add, index_reduce, x[i] += v) on
// CUDA -> aotc::rt::cuda::scatter_reduce (runtime/cuda/kernels/scatter_reduce.cu): self
// copied into the output, then each reached element folded in index order as on the CPU;
// its scratch as scatter_plan.h says.
#include <aotc/rt/cuda/scatter_plan.h>

#include "../indexing.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_scatter_reduce(const EmitContext& e, const ir::Op& op, size_t) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  return {"", kernel_call(op, scatter_reduce_params_code(e, op),
                          "aotc::rt::cuda::scatter_reduce(stream, r, " + e.in(op.inputs[0]) + ", " +
                              std::to_string(y.bytes()) + ", " + e.in(op.inputs[2]) + ", " +
                              scatter_reduce_index(e, op) + ", " + e.out(op.outputs[0]) + ", " +
                              e.scratch(op) + ");")};
}

// The kernel's parameters as far as its scratch depends on them, from the attributes the
// lowering (scatter_reduce.cpp) records for this.
int64_t scatter_reduce_scratch(const ir::Op& op) {
  const std::vector<int64_t>& dims = op.ints("index_shape");
  const std::vector<int64_t>& strides = op.ints("index_strides");
  rt::ScatterReduceParams p;
  p.geometry.rank = static_cast<int32_t>(dims.size());
  p.geometry.dim = static_cast<int32_t>(op.i("dim"));
  for (size_t d = 0; d < dims.size() && d < 8; ++d) {
    p.geometry.dims[d] = dims[d];
    p.index_strides[d] = strides.at(d);
  }
  p.geometry.y_dim_size = op.i("y_dim_size");
  return rt::cuda::scatter_reduce_scratch_of(p).bytes;
}

}  // namespace

void register_scatter_reduce_cuda(CudaRegistry& r) {
  // inputs 0 and 2, self and src: float32, int64 or int32 (the lowering checks); input 1,
  // the index: int64 or int32
  r.add(ir::kind::scatter_reduce, emit_scatter_reduce, scatter_reduce_scratch,
        [](const ir::Op&, size_t index, ir::DType t) {
          if (index == 1) return t == ir::DType::Int64 || t == ir::DType::Int32;
          return t == ir::DType::Float32 || t == ir::DType::Int64 || t == ir::DType::Int32;
        });
}

}  // namespace aotc::ops::cuda
