// IR "depthwise_conv2d_nhwc" on CUDA -> aotc::rt::cuda::depthwise_conv2d_nhwc_f32: a
// depthwise convolution of an NHWC tensor, made by convert_to_channels_last.cpp with the
// convolution's attributes (sizes in NCHW terms) and inputs (x in NHWC, the weights as
// (kernel_h, kernel_w, c), the bias); its clamp is fused, and the activations that
// fuse_depthwise_activations.cpp moved into it ("input_activation", "output_activation":
// {UnaryOp, a, b}).
#include <string>
#include <variant>
#include <vector>

#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

// "aotc::rt::UnaryOp(8), a, b" for an activation attribute; Identity when absent.
std::string activation_code(const ir::Op& op, const char* key) {
  const std::vector<double> act =
      op.has(key) ? std::get<std::vector<double>>(op.attrs.at(key)) : std::vector<double>{0.0, 0.0, 0.0};
  return "static_cast<aotc::rt::UnaryOp>(" + std::to_string(static_cast<int>(act.at(0))) + "), " +
         EmitContext::f32(act.at(1)) + ", " + EmitContext::f32(act.at(2));
}

CudaCode emit_depthwise_conv2d_nhwc(const EmitContext& e, const ir::Op& op, size_t) {
  const std::string activations = "aotc::rt::cuda::DepthwiseActivations{" +
                                  activation_code(op, ir::attr::input_activation) + ", " +
                                  activation_code(op, ir::attr::output_activation) + "}";
  return {"", kernel_call(op, conv2d_params_code(op).str(),
                          "aotc::rt::cuda::depthwise_conv2d_nhwc_f32(stream, p, " + e.in(op.inputs[0]) +
                              ", " + e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " +
                              e.out(op.outputs[0]) + ", " + activations + ");")};
}

}  // namespace

void register_depthwise_conv2d_nhwc_cuda(CudaRegistry& r) {
  r.add(ir::kind::depthwise_conv2d_nhwc, emit_depthwise_conv2d_nhwc);
}

}  // namespace aotc::ops::cuda
