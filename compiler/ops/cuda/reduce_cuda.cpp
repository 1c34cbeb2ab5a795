// IR "reduce" (sum, mean, max, min, prod over any dims) on CUDA -> aotc::rt::cuda::reduce_f32,
// or reduce_i64 for int64 tensors (sum, max, min, prod; integer and bool sums and the max / min
// of bool and int32 tensors come as int64).
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_reduce(const EmitContext& e, const ir::Op& op, size_t) {
  const ir::Value& x = e.graph.value(op.inputs[0]);
  ParamsCode p("aotc::rt::ReduceParams");
  p.raw("op", "static_cast<aotc::rt::ReduceOp>(" + std::to_string(op.i("op")) + ")")
      .set("rank", static_cast<int64_t>(x.shape.size()))
      .set_array("dims", x.shape);
  const auto& mask = op.ints("mask");
  for (size_t d = 0; d < mask.size(); ++d) p.set_bool("reduce_mask[" + std::to_string(d) + "]", mask[d] != 0);
  const std::string fn =
      x.dtype == ir::DType::Int64 ? "aotc::rt::cuda::reduce_i64" : "aotc::rt::cuda::reduce_f32";
  return {"", kernel_call(op, p.str(),
                          fn + "(stream, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_reduce_cuda(CudaRegistry& r) {
  r.add(ir::kind::reduce, emit_reduce, nullptr, [](const ir::Op& op, size_t, ir::DType t) {
    // (The mean is float only, on the CPU too.)
    return t == ir::DType::Float32 ||
           (t == ir::DType::Int64 && static_cast<rt::ReduceOp>(op.i("op")) != rt::ReduceOp::Mean);
  });
}

}  // namespace aotc::ops::cuda
