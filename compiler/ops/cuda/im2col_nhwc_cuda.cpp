// IR "im2col_nhwc" on CUDA -> aotc::rt::cuda::im2col_nhwc_f32: a convolution's receptive
// fields unfolded from an NHWC input into the rows of a GEMM operand. Made by
// channels_last_cuda.cpp, with the convolution's attributes.
#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_im2col_nhwc(const EmitContext& e, const ir::Op& op, size_t) {
  ir::Op conv = op;  // conv2d_params_code also reads the clamp, which an unfolding has not
  conv.attrs["clamp_lo"] = -INFINITY;
  conv.attrs["clamp_hi"] = INFINITY;
  conv.inputs = {op.inputs[0], -1, -1};
  return {"", kernel_call(op, conv2d_params_code(conv).str(),
                          "aotc::rt::cuda::im2col_nhwc_f32(stream, p, " + e.in(op.inputs[0]) + ", " +
                              e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_im2col_nhwc_cuda(CudaRegistry& r) { r.add("im2col_nhwc", emit_im2col_nhwc); }

}  // namespace aotc::ops::cuda
