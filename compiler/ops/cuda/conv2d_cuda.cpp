// IR "conv2d" on CUDA -> aotc::rt::cuda::conv2d_f32 (runtime/cuda/kernels/conv2d.cu): a
// cuBLAS GEMM (on the input for 1x1 convolutions, on its im2col unfolding otherwise) with
// the bias and clamp epilogue, or a direct kernel for depthwise and grouped convolutions.
#include <aotc/rt/cuda/conv2d_plan.h>

#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

rt::Conv2dParams params_of(const ir::Op& op) {
  rt::Conv2dParams p;
  p.n = op.i("n");
  p.c_in = op.i("c_in");
  p.h_in = op.i("h_in");
  p.w_in = op.i("w_in");
  p.c_out = op.i("c_out");
  p.h_out = op.i("h_out");
  p.w_out = op.i("w_out");
  p.kernel_h = op.ints("kernel")[0];
  p.kernel_w = op.ints("kernel")[1];
  p.stride_h = op.ints("stride")[0];
  p.stride_w = op.ints("stride")[1];
  p.pad_h = op.ints("padding")[0];
  p.pad_w = op.ints("padding")[1];
  p.dilation_h = op.ints("dilation")[0];
  p.dilation_w = op.ints("dilation")[1];
  p.groups = op.i("groups");
  p.has_bias = op.inputs[2] >= 0;
  return p;
}

CudaCode emit_conv2d(const EmitContext& e, const ir::Op& op, size_t) {
  const rt::Conv2dParams c = params_of(op);
  ParamsCode p("aotc::rt::Conv2dParams");
  p.set("n", c.n)
      .set("c_in", c.c_in)
      .set("h_in", c.h_in)
      .set("w_in", c.w_in)
      .set("c_out", c.c_out)
      .set("h_out", c.h_out)
      .set("w_out", c.w_out)
      .set("kernel_h", c.kernel_h)
      .set("kernel_w", c.kernel_w)
      .set("stride_h", c.stride_h)
      .set("stride_w", c.stride_w)
      .set("pad_h", c.pad_h)
      .set("pad_w", c.pad_w)
      .set("dilation_h", c.dilation_h)
      .set("dilation_w", c.dilation_w)
      .set("groups", c.groups)
      .set_bool("has_bias", c.has_bias)
      .set_f32("clamp_lo", op.f("clamp_lo"))
      .set_f32("clamp_hi", op.f("clamp_hi"));
  return {"", kernel_call(op, p.str(),
                          "aotc::rt::cuda::conv2d_f32(ex, p, " + e.in(op.inputs[0]) + ", " +
                              e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " + e.out(op.outputs[0]) +
                              ", " + e.scratch(op) + ");")};
}

}  // namespace

void register_conv2d_cuda(CudaRegistry& r) {
  r.add("conv2d", emit_conv2d,
        [](const ir::Op& op) { return rt::cuda::conv2d_scratch_bytes(params_of(op)); });
}

}  // namespace aotc::ops::cuda
