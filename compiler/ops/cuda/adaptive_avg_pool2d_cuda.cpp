// IR "adaptive_avg_pool2d" on CUDA -> aotc::rt::cuda::adaptive_avg_pool2d_f32 (_nhwc_f32
// for NHWC tensors).
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_adaptive_avg_pool2d(const EmitContext& e, const ir::Op& op, size_t) {
  // NHWC tensors: convert_to_channels_last.cpp.
  const std::string nhwc = op.has(ir::attr::channels_last) && op.b(ir::attr::channels_last) ? "_nhwc" : "";
  std::string args;
  for (const char* key : {"n", "c", "h_in", "w_in", "h_out", "w_out"})
    args += std::to_string(op.i(key)) + ", ";
  return {"", kernel_call(op, "",
                          "aotc::rt::cuda::adaptive_avg_pool2d" + nhwc + "_f32(stream, " + args +
                              e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_adaptive_avg_pool2d_cuda(CudaRegistry& r) {
  r.add(ir::kind::adaptive_avg_pool2d, emit_adaptive_avg_pool2d);
}

}  // namespace aotc::ops::cuda
