// IR "max_unpool" on CUDA -> aotc::rt::cuda::max_unpool_f32 (runtime/cuda/kernels/max_unpool.cu).
// The kernel keeps the winner of each output in the output itself while an input plane's
// positions fit in 32 bits; larger planes get 8 bytes of scratch per output.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

int64_t max_unpool_scratch(const ir::Op& op) {
  return op.i("in_volume") <= int64_t{0xFFFFFFFF} ? 0 : op.i("planes") * op.i("out_volume") * 8;
}

CudaCode emit_max_unpool(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, "",
                          "aotc::rt::cuda::max_unpool_f32(stream, " + std::to_string(op.i("planes")) + ", " +
                              std::to_string(op.i("in_volume")) + ", " + std::to_string(op.i("out_volume")) +
                              ", " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " +
                              e.out(op.outputs[0]) + ", " + e.scratch(op) + ");")};
}

}  // namespace

void register_max_unpool_cuda(CudaRegistry& r) {
  // input 1, the indices: int64
  r.add(ir::kind::max_unpool, emit_max_unpool, max_unpool_scratch,
        [](const ir::Op&, size_t index, ir::DType t) {
          return t == (index == 1 ? ir::DType::Int64 : ir::DType::Float32);
        });
}

}  // namespace aotc::ops::cuda
