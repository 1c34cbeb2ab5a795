// IR "unary" on CUDA: a kernel generated for this op, its element count a compile-time
// constant, the math from aotc/rt/cuda/pointwise.cuh (the CPU kernels' formulas).
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_unary(const EmitContext& e, const ir::Op& op, size_t index) {
  return elementwise_map(e, op, index,
                         "aotc::rt::cuda::unary_apply<static_cast<aotc::rt::UnaryOp>(" +
                             std::to_string(op.i("op")) + ")>(x[i], " + EmitContext::f32(op.f("a")) + ", " +
                             EmitContext::f32(op.f("b")) + ")");
}

}  // namespace

void register_unary_cuda(CudaRegistry& r) { r.add(ir::kind::unary, emit_unary); }

}  // namespace aotc::ops::cuda
