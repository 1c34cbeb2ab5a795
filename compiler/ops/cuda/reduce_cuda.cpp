// IR "reduce" (mean, sum over any dims) on CUDA -> aotc::rt::cuda::reduce_f32.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_reduce(const EmitContext& e, const ir::Op& op, size_t) {
  const ir::Shape& x = e.graph.value(op.inputs[0]).shape;
  ParamsCode p("aotc::rt::ReduceParams");
  p.raw("op", "static_cast<aotc::rt::ReduceOp>(" + std::to_string(op.i("op")) + ")")
      .set("rank", static_cast<int64_t>(x.size()))
      .set_array("dims", x);
  const auto& mask = op.ints("mask");
  for (size_t d = 0; d < mask.size(); ++d) p.set_bool("reduce_mask[" + std::to_string(d) + "]", mask[d] != 0);
  return {"", kernel_call(op, p.str(),
                          "aotc::rt::cuda::reduce_f32(stream, p, " + e.in(op.inputs[0]) + ", " +
                              e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_reduce_cuda(CudaRegistry& r) { r.add(ir::kind::reduce, emit_reduce); }

}  // namespace aotc::ops::cuda
