// IR "assemble" (cat of views, stack, pad, roll, the *_like factories; see
// compiler/ops/assemble.h) on CUDA -> aotc::rt::cuda::fill, then one
// aotc::rt::cuda::copy_strided per piece, in order on the stream (a piece may read what an
// earlier one wrote into the output).
#include "../assemble.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_assemble(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", assemble_calls(e, op, "aotc::rt::cuda::", "stream")};
}

}  // namespace

void register_assemble_cuda(CudaRegistry& r) { r.add(ir::kind::assemble, emit_assemble, nullptr, any_dtype); }

}  // namespace aotc::ops::cuda
