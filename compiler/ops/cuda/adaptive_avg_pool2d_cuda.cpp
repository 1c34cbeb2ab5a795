// IR "adaptive_avg_pool2d" on CUDA -> aotc::rt::cuda::adaptive_avg_pool2d_f32
// (adaptive_avg_pool2d_nhwc for NHWC tensors, float32 or kept 16-bit by
// store_activations_16bit.cpp, with its scratch for global pooling of large planes).
#include <aotc/rt/cuda/pool2d_plan.h>

#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

// NHWC tensors: convert_to_channels_last.cpp.
bool nhwc(const ir::Op& op) { return op.has(ir::attr::channels_last) && op.b(ir::attr::channels_last); }

CudaCode emit_adaptive_avg_pool2d(const EmitContext& e, const ir::Op& op, size_t) {
  std::string args;
  for (const char* key : {"n", "c", "h_in", "w_in", "h_out", "w_out"})
    args += std::to_string(op.i(key)) + ", ";
  const std::string call = nhwc(op) ? "aotc::rt::cuda::adaptive_avg_pool2d_nhwc(stream, " +
                                          storage_code(e.graph.value(op.inputs[0]).dtype) + ", " + args +
                                          e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ", " +
                                          e.scratch(op) + ");"
                                    : "aotc::rt::cuda::adaptive_avg_pool2d_f32(stream, " + args +
                                          e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");";
  return {"", kernel_call(op, "", call)};
}

int64_t adaptive_avg_pool2d_scratch(const ir::Op& op) {
  if (!nhwc(op)) return 0;
  return rt::cuda::adaptive_avg_pool2d_nhwc_scratch_bytes(op.i("n"), op.i("c"), op.i("h_in"), op.i("w_in"),
                                                          op.i("h_out"), op.i("w_out"));
}

}  // namespace

void register_adaptive_avg_pool2d_cuda(CudaRegistry& r) {
  r.add(ir::kind::adaptive_avg_pool2d, emit_adaptive_avg_pool2d, adaptive_avg_pool2d_scratch);
}

}  // namespace aotc::ops::cuda
