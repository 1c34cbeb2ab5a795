// IR "embedding" on CUDA -> aotc::rt::cuda::embedding_f32 (runtime/cuda/kernels/embedding.cu):
// a gather of table rows by int64 or int32 ids.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_embedding(const EmitContext& e, const ir::Op& op, size_t) {
  ParamsCode p("aotc::rt::EmbeddingParams");
  p.set("count", op.i("count"))
      .set("dim", op.i("dim"))
      .set("vocab", op.i("vocab"))
      .set_bool("ids_int32", op.b("ids_int32"));
  return {"", kernel_call(op, p.str(),
                          "aotc::rt::cuda::embedding_f32(stream, p, " + e.in(op.inputs[1]) + ", " +
                              e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_embedding_cuda(CudaRegistry& r) { r.add(ir::kind::embedding, emit_embedding); }

}  // namespace aotc::ops::cuda
