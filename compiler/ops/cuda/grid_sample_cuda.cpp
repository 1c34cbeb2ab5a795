// IR "grid_sample" (F.grid_sample, 2-d: bilinear or nearest, zeros / border / reflection
// padding) on CUDA -> aotc::rt::cuda::grid_sample_f32 (runtime/cuda/kernels/grid_sample.cu).
#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_grid_sample(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, grid_sample_params_code(op).str(),
                          "aotc::rt::cuda::grid_sample_f32(stream, p, " + e.in(op.inputs[0]) + ", " +
                              e.in(op.inputs[1]) + ", " + e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_grid_sample_cuda(CudaRegistry& r) { r.add(ir::kind::grid_sample, emit_grid_sample); }

}  // namespace aotc::ops::cuda
