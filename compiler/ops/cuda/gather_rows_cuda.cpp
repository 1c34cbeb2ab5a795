// IR "gather_rows" on CUDA -> aotc::rt::cuda::gather_rows_f32 (runtime/cuda/kernels/
// gather_rows.cu): inputs (source, int32 row order, addend or -1), attributes "rows" and
// "cols" (the output's), "row_period" and "row_src_period". Made by fuse_row_gathers.cpp
// from a chain of strided copies that only reorders rows (a Swin block's shift and window
// partition), with the residual add after it when there is one.
#include "cuda_registry.h"

namespace aotc::ops::cuda {

std::string row_gather_code(const EmitContext& e, const ir::Op& op, size_t index) {
  if (op.inputs.size() <= index || op.inputs[index] < 0) return "";
  return "aotc::rt::cuda::RowGather{" + e.in(op.inputs[index]) + ", " + std::to_string(op.i("row_period")) +
         ", " + std::to_string(op.i("row_src_period")) + "}";
}

namespace {

CudaCode emit_gather_rows(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, "",
                          "aotc::rt::cuda::gather_rows_f32(stream, " + std::to_string(op.i("rows")) + ", " +
                              std::to_string(op.i("cols")) + ", " + row_gather_code(e, op, 1) + ", " +
                              e.in(op.inputs[0]) + ", " + e.in(op.inputs[2]) + ", " + e.out(op.outputs[0]) +
                              ");")};
}

}  // namespace

void register_gather_rows_cuda(CudaRegistry& r) {
  r.add(ir::kind::gather_rows, emit_gather_rows, nullptr, [](const ir::Op&, size_t index, ir::DType t) {
    return t == (index == 1 ? ir::DType::Int32 : ir::DType::Float32);
  });
}

}  // namespace aotc::ops::cuda
