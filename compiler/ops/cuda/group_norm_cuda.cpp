// IR "group_norm" (group_norm, instance_norm with input statistics) on CUDA ->
// aotc::rt::cuda::group_norm_f32 (runtime/cuda/kernels/group_norm.cu): float32 two-pass
// statistics per image and group; groups larger than one block's chunk are split over blocks,
// their partial statistics in arena scratch (group_norm_plan.h).
#include <aotc/rt/cuda/group_norm_plan.h>

#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_group_norm(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, group_norm_params_code(op).str(),
                          "aotc::rt::cuda::group_norm_f32(stream, p, " + e.in(op.inputs[0]) + ", " +
                              e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " + e.out(op.outputs[0]) +
                              ", " + e.scratch(op) + ");")};
}

}  // namespace

void register_group_norm_cuda(CudaRegistry& r) {
  r.add(ir::kind::group_norm, emit_group_norm,
        [](const ir::Op& op) { return rt::cuda::group_norm_scratch_bytes(group_norm_params_of(op)); });
}

}  // namespace aotc::ops::cuda
