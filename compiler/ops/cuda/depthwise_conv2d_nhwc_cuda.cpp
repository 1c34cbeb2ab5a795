// IR "depthwise_conv2d_nhwc" on CUDA -> aotc::rt::cuda::depthwise_conv2d_nhwc_f32: a
// depthwise convolution of an NHWC tensor, made by convert_to_channels_last.cpp with the
// convolution's attributes (sizes in NCHW terms) and inputs (x in NHWC, the weights as
// (kernel_h, kernel_w, c), the bias); its clamp is fused.
#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_depthwise_conv2d_nhwc(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, conv2d_params_code(op).str(),
                          "aotc::rt::cuda::depthwise_conv2d_nhwc_f32(stream, p, " + e.in(op.inputs[0]) +
                              ", " + e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " +
                              e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_depthwise_conv2d_nhwc_cuda(CudaRegistry& r) {
  r.add(ir::kind::depthwise_conv2d_nhwc, emit_depthwise_conv2d_nhwc);
}

}  // namespace aotc::ops::cuda
