// IR "conv2d" on CUDA, on the path choose_conv2d_paths.cpp chose for it ("cuda_path"):
// the implicit-GEMM tensor-core kernel (aotc::rt::cuda::implicit_gemm_conv2d;
// AOTC_CUDA_IMPLICIT_GEMM=1), conv2d_16bit (16-bit weights and operands, --precision fp16 /
// bf16), or aotc::rt::cuda::conv2d_f32 (runtime/cuda/kernels/conv2d.cu): a cuBLASLt GEMM
// (on the input for 1x1 convolutions, on its im2col unfolding otherwise), or a direct kernel
// for depthwise and grouped convolutions (a depthwise one may also apply the epilogue of the
// convolution that wrote its input: fold_depthwise_input.cpp). The GEMM paths take the
// bias, a residual (a 4th input, passes/fuse_conv_residual.cpp) and the clamp as their
// epilogue.
#include <aotc/rt/cuda/conv2d_plan.h>

#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

rt::cuda::Conv2dPath path_of(const ir::Op& op) {
  return op.has(ir::attr::cuda_path) ? static_cast<rt::cuda::Conv2dPath>(op.i(ir::attr::cuda_path))
                                     : rt::cuda::conv2d_path(conv2d_params_of(op));
}

const char* precision_name(int64_t precision) {
  switch (static_cast<rt::cuda::Precision>(precision)) {
    case rt::cuda::Precision::Tf32:
      return "Tf32";
    case rt::cuda::Precision::Fp16:
      return "Fp16";
    case rt::cuda::Precision::Bf16:
      return "Bf16";
    default:
      return "Fp32";
  }
}

CudaCode emit_conv2d(const EmitContext& e, const ir::Op& op, size_t) {
  const ParamsCode p = conv2d_params_code(op);
  const std::string x = e.in(op.inputs[0]), w = e.in(op.inputs[1]), bias = e.in(op.inputs[2]);
  const std::string y = e.out(op.outputs[0]), scratch = e.scratch(op);
  // A depthwise one that applies its writer's epilogue (fold_depthwise_input.cpp).
  if (op.has(ir::attr::input_clamp_lo)) {
    ParamsCode in("aotc::rt::cuda::DepthwiseInputEpilogue", "in");
    in.raw("in_bias", op.inputs[3] >= 0 ? e.in(op.inputs[3]) : "nullptr")
        .set_f32("in_lo", op.f(ir::attr::input_clamp_lo))
        .set_f32("in_hi", op.f(ir::attr::input_clamp_hi));
    return {"", kernel_call(op, p.str() + in.str(),
                            "aotc::rt::cuda::depthwise_conv2d_f32(ex.stream, p, " + x + ", " + w + ", " +
                                bias + ", " + y + ", &in);")};
  }
  // The optional 4th input: a residual of y's shape (passes/fuse_conv_residual.cpp).
  const std::string residual = op.inputs.size() > 3 ? e.in(op.inputs[3]) : "nullptr";
  if (path_of(op) == rt::cuda::Conv2dPath::ImplicitGemm)
    return {"", kernel_call(
                    op, p.str(),
                    std::string("aotc::rt::cuda::implicit_gemm_conv2d(ex, p, aotc::rt::cuda::Precision::") +
                        precision_name(op.i(ir::attr::precision)) + ", " + x + ", " + w + ", " + bias + ", " +
                        residual + ", " + y + ", " + scratch + ");")};
  if (op.has(ir::attr::weights_16bit) && op.b(ir::attr::weights_16bit))
    return {"", kernel_call(op, p.str(),
                            "aotc::rt::cuda::conv2d_16bit(ex, p, " + x + ", " + w + ", " + bias + ", " +
                                residual + ", " + y + ", " + scratch + ");")};
  return {"", kernel_call(op, p.str(),
                          "aotc::rt::cuda::conv2d_f32(ex, p, " + x + ", " + w + ", " + bias + ", " +
                              residual + ", " + y + ", " + scratch + ");")};
}

}  // namespace

void register_conv2d_cuda(CudaRegistry& r) {
  r.add(ir::kind::conv2d, emit_conv2d, [](const ir::Op& op) {
    return rt::cuda::conv2d_scratch_bytes(conv2d_params_of(op), path_of(op),
                                          op.has(ir::attr::weights_16bit) && op.b(ir::attr::weights_16bit));
  });
}

}  // namespace aotc::ops::cuda
