// IR "recurrent" on CUDA -> aotc::rt::cuda::recurrent_f32 (runtime/cuda/kernels/recurrent.cu):
// the time loop of one LSTM or GRU layer, both directions in one launch per step. The
// launcher loops over the steps itself, so a named dim of steps or batch is one literal of
// the params. Float32 at every precision (the input projection before it is a gemm op and
// follows the precision).
#include "../sequence_ops.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_recurrent(const EmitContext& e, const ir::Op& op, size_t) {
  // The params of the first direction (forward); the second runs reversed.
  const std::string second = op.i("directions") == 2 ? "{" + recurrent_operands(e, op, 1) + "}" : "{}";
  return {"", kernel_call(op, recurrent_params_code(op, false).str(),
                          "aotc::rt::cuda::recurrent_f32(ex, p, {" + recurrent_operands(e, op, 0) + "}, " +
                              second + ", " + e.scratch(op) + ");")};
}

}  // namespace

void register_recurrent_cuda(CudaRegistry& r) {
  // The LSTM's cell state c of each direction (batch x hidden floats each); the GRU needs none.
  r.add(ir::kind::recurrent, emit_recurrent, [](const ir::Op& op) -> int64_t {
    if (op.i("cell") != static_cast<int64_t>(rt::RecurrentCell::Lstm)) return 0;
    return op.i("directions") * op.i("batch") * op.i("hidden") * static_cast<int64_t>(sizeof(float));
  });
}

}  // namespace aotc::ops::cuda
