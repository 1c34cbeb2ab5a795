// IR "depthwise_conv2d_nhwc" on CUDA -> aotc::rt::cuda::depthwise_conv2d_nhwc: a depthwise
// convolution of an NHWC tensor, made by convert_to_channels_last.cpp with the convolution's
// attributes (sizes in NCHW terms) and inputs (x in NHWC, the weights as (kernel_h,
// kernel_w, c), the bias); its clamp is fused, and a SiLU after the bias where
// fuse_epilogue_silu.cpp gave it one ("activation"). x and y are both float32, both in the
// 16-bit type store_activations_16bit.cpp keeps them in, or x float32 and y 16-bit. With
// "input_clamp_lo" the epilogue of the GEMM that wrote x is applied to each value read
// (fold_depthwise_input.cpp): its bias is the 4th input (-1: none); "input_activation" (a
// SiLU) comes with no bias or clamp. A second output is the mean of the first over each
// image's plane, per channel, float32 (fuse_depthwise_pool.cpp), written with the op's
// scratch.
#include <aotc/rt/cuda/conv2d_plan.h>

#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_depthwise_conv2d_nhwc(const EmitContext& e, const ir::Op& op, size_t) {
  const ir::DType x_type = e.graph.value(op.inputs[0]).dtype, y_type = e.graph.value(op.outputs[0]).dtype;
  const bool float_input = x_type == ir::DType::Float32 && y_type != x_type;
  if (x_type != y_type && (!float_input || op.has(ir::attr::input_clamp_lo)))
    throw CompileError("internal: a depthwise convolution's input and output differ in dtype");
  ParamsCode io("aotc::rt::cuda::DepthwiseNhwcIo", "io");
  io.raw("storage", storage_code(y_type));
  if (float_input) io.raw("float_input", "true");
  if (op.has(ir::attr::activation))
    io.raw("activation",
           "static_cast<aotc::rt::GemmActivation>(" + std::to_string(op.i(ir::attr::activation)) + ")");
  if (op.outputs.size() > 1) {
    if (e.graph.value(op.outputs[1]).dtype != ir::DType::Float32)
      throw CompileError("internal: a depthwise convolution's pooled output is not float32");
    io.raw("pool", e.out(op.outputs[1])).raw("pool_scratch", e.scratch(op));
  }
  const std::string call = "aotc::rt::cuda::depthwise_conv2d_nhwc(stream, p, io, " + e.in(op.inputs[0]) +
                           ", " + e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " +
                           e.out(op.outputs[0]);
  const std::string params = conv2d_params_code(op).str() + " " + io.str();
  if (!op.has(ir::attr::input_clamp_lo)) return {"", kernel_call(op, params, call + ");")};
  ParamsCode in("aotc::rt::cuda::DepthwiseInputEpilogue", "in");
  in.raw("in_bias", op.inputs.size() > 3 && op.inputs[3] >= 0 ? e.in(op.inputs[3]) : "nullptr")
      .set_f32("in_lo", op.f(ir::attr::input_clamp_lo))
      .set_f32("in_hi", op.f(ir::attr::input_clamp_hi));
  if (op.has(ir::attr::input_activation))
    in.raw("in_activation",
           "static_cast<aotc::rt::GemmActivation>(" + std::to_string(op.i(ir::attr::input_activation)) + ")");
  return {"", kernel_call(op, params + " " + in.str(), call + ", &in);")};
}

int64_t depthwise_conv2d_nhwc_scratch(const ir::Op& op) {
  return op.outputs.size() > 1 ? rt::cuda::depthwise_pool_scratch_bytes(conv2d_params_of(op)) : 0;
}

}  // namespace

void register_depthwise_conv2d_nhwc_cuda(CudaRegistry& r) {
  r.add(ir::kind::depthwise_conv2d_nhwc, emit_depthwise_conv2d_nhwc, depthwise_conv2d_nhwc_scratch);
}

}  // namespace aotc::ops::cuda
