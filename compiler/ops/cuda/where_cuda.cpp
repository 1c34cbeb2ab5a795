// IR "where" (where, masked_fill) on CUDA -> aotc::rt::cuda::where_select
// (runtime/cuda/kernels/where.cu): broadcasting through strides, elements of any dtype.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_where(const EmitContext& e, const ir::Op& op, size_t) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  ParamsCode p("aotc::rt::WhereParams");
  p.set("rank", static_cast<int64_t>(y.shape.size()))
      .set_array("out_dims", y.shape)
      .set_array("cond_strides", broadcast_strides(e.graph.value(op.inputs[0]).shape, y.shape))
      .set_array("a_strides", broadcast_strides(e.graph.value(op.inputs[1]).shape, y.shape))
      .set_array("b_strides", broadcast_strides(e.graph.value(op.inputs[2]).shape, y.shape));
  return {"",
          kernel_call(op, p.str(),
                      "aotc::rt::cuda::where_select(stream, p, " + std::to_string(ir::dtype_size(y.dtype)) +
                          ", " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) +
                          ", " + e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_where_cuda(CudaRegistry& r) { r.add(ir::kind::where, emit_where, nullptr, any_dtype); }

}  // namespace aotc::ops::cuda
