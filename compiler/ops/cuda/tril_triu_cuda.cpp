// IR "tril_triu" (tril, triu) on CUDA -> aotc::rt::cuda::tril_triu
// (runtime/cuda/kernels/tril_triu.cu): one thread per element, any dtype.
#include "../indexing.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_tril_triu(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, tril_triu_params_code(e, op).str(),
                          "aotc::rt::cuda::tril_triu(stream, p, " + e.in(op.inputs[0]) + ", " +
                              e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_tril_triu_cuda(CudaRegistry& r) {
  r.add(ir::kind::tril_triu, emit_tril_triu, nullptr, any_dtype);
}

}  // namespace aotc::ops::cuda
