// IR "unary" on CUDA: a kernel generated for this op, its element count a compile-time
// constant, the math from aotc/rt/cuda/pointwise.cuh (the CPU kernels' formulas): float32
// as unary_f32, int64 / int32 / bool as the CPU's rt::unary (the ops that keep an integer
// dtype; the lowering converts integers to float32 for the others).
#include <cstdint>
#include <limits>

#include "../elementwise.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {

std::string int_bound_literal(ir::DType t, double v) {
  if (t == ir::DType::Bool) return v != 0.0 ? "true" : "false";
  if (t == ir::DType::Int32) {
    const double lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
    const int32_t b = !(v > lo)   ? std::numeric_limits<int32_t>::min()
                      : !(v < hi) ? std::numeric_limits<int32_t>::max()
                                  : static_cast<int32_t>(v);
    return "static_cast<int32_t>(" + std::to_string(b) + "ll)";
  }
  const double lo = static_cast<double>(std::numeric_limits<int64_t>::min());
  const double hi = static_cast<double>(std::numeric_limits<int64_t>::max());
  if (!(v > lo)) return "(-9223372036854775807ll - 1)";
  const int64_t b = !(v < hi) ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(v);
  return std::to_string(b) + "ll";
}

namespace {

using rt::UnaryOp;

// The ops the CPU kernels compute for dtype t: every float32 op but BitwiseNot, and for
// integers and bool those that keep their dtype (bool has no neg or abs).
bool computes(UnaryOp op, ir::DType t) {
  if (t == ir::DType::Float32) return op != UnaryOp::BitwiseNot;
  if (t == ir::DType::Bool && (op == UnaryOp::Neg || op == UnaryOp::Abs)) return false;
  return (t == ir::DType::Int64 || t == ir::DType::Int32 || t == ir::DType::Bool) &&
         unary_keeps_integer_dtype(op);
}

CudaCode emit_unary(const EmitContext& e, const ir::Op& op, size_t index) {
  const ir::DType t = e.graph.value(op.inputs[0]).dtype;
  const std::string kind = "static_cast<aotc::rt::UnaryOp>(" + std::to_string(op.i("op")) + ")";
  if (t == ir::DType::Float32)
    return elementwise_map(e, op, index,
                           "aotc::rt::cuda::unary_apply<" + kind + ">(x[i], " + EmitContext::f32(op.f("a")) +
                               ", " + EmitContext::f32(op.f("b")) + ")");
  return elementwise_map(e, op, index,
                         "aotc::rt::cuda::unary_apply_int<" + kind + ", " + EmitContext::c_type(t) +
                             ">(x[i], " + int_bound_literal(t, op.f("a")) + ", " +
                             int_bound_literal(t, op.f("b")) + ")");
}

}  // namespace

void register_unary_cuda(CudaRegistry& r) {
  r.add(ir::kind::unary, emit_unary, nullptr,
        [](const ir::Op& op, size_t, ir::DType t) { return computes(static_cast<UnaryOp>(op.i("op")), t); });
}

}  // namespace aotc::ops::cuda
