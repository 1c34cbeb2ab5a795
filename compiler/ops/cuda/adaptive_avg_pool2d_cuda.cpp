// IR "adaptive_avg_pool2d" on CUDA -> aotc::rt::cuda::adaptive_avg_pool2d_f32.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_adaptive_avg_pool2d(const EmitContext& e, const ir::Op& op, size_t) {
  std::string args;
  for (const char* key : {"n", "c", "h_in", "w_in", "h_out", "w_out"})
    args += std::to_string(op.i(key)) + ", ";
  return {"", kernel_call(op, "",
                          "aotc::rt::cuda::adaptive_avg_pool2d_f32(stream, " + args + e.in(op.inputs[0]) +
                              ", " + e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_adaptive_avg_pool2d_cuda(CudaRegistry& r) {
  r.add("adaptive_avg_pool2d", emit_adaptive_avg_pool2d);
}

}  // namespace aotc::ops::cuda
