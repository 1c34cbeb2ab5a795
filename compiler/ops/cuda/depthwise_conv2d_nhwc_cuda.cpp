// IR "depthwise_conv2d_nhwc" on CUDA -> aotc::rt::cuda::depthwise_conv2d_nhwc_f32: a
// depthwise convolution of an NHWC tensor, made by convert_to_channels_last.cpp with the
// convolution's attributes (sizes in NCHW terms) and inputs (x in NHWC, the weights as
// (kernel_h, kernel_w, c), the bias); its clamp is fused. With "input_clamp_lo" the
// epilogue of the GEMM that wrote x is applied to each value read (fold_depthwise_input.cpp):
// its bias is the 4th input (-1: none).
#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_depthwise_conv2d_nhwc(const EmitContext& e, const ir::Op& op, size_t) {
  const std::string call = "aotc::rt::cuda::depthwise_conv2d_nhwc_f32(stream, p, " + e.in(op.inputs[0]) +
                           ", " + e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " +
                           e.out(op.outputs[0]);
  if (!op.has(ir::attr::input_clamp_lo))
    return {"", kernel_call(op, conv2d_params_code(op).str(), call + ");")};
  ParamsCode in("aotc::rt::cuda::DepthwiseInputEpilogue", "in");
  in.raw("in_bias", op.inputs.size() > 3 && op.inputs[3] >= 0 ? e.in(op.inputs[3]) : "nullptr")
      .set_f32("in_lo", op.f(ir::attr::input_clamp_lo))
      .set_f32("in_hi", op.f(ir::attr::input_clamp_hi));
  return {"", kernel_call(op, conv2d_params_code(op).str() + in.str(), call + ", &in);")};
}

}  // namespace

void register_depthwise_conv2d_nhwc_cuda(CudaRegistry& r) {
  r.add(ir::kind::depthwise_conv2d_nhwc, emit_depthwise_conv2d_nhwc);
}

}  // namespace aotc::ops::cuda
