// IR "im2col_nhwc" on CUDA -> aotc::rt::cuda::im2col_nhwc_f32 (im2col_nhwc_16bit for the
// 16-bit columns of --precision fp16 / bf16, im2col_nhwc_16bit_input from an input kept in
// that type): a convolution's receptive fields unfolded from an NHWC input into the rows
// of a GEMM operand. Made by convert_to_channels_last.cpp, with the convolution's
// attributes, "row_stride", "precision" and "nchw_input" (an input read in NCHW as it is).
#include <aotc/rt/cuda/conv2d_plan.h>

#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_im2col_nhwc(const EmitContext& e, const ir::Op& op, size_t) {
  ir::Op conv = op;  // conv2d_params_code also reads the clamp, which an unfolding has not
  conv.attrs[ir::attr::clamp_lo] = -INFINITY;
  conv.attrs[ir::attr::clamp_hi] = INFINITY;
  conv.inputs = {op.inputs[0], -1, -1};
  const auto precision = static_cast<rt::cuda::Precision>(op.i(ir::attr::precision));
  const ParamsCode p = conv2d_params_code(conv);
  // An input kept in the 16-bit type (store_activations_16bit.cpp): NHWC, copied as it is.
  if (e.graph.value(op.inputs[0]).dtype != ir::DType::Float32)
    return {"", kernel_call(op, p.str(),
                            std::string("aotc::rt::cuda::im2col_nhwc_16bit_input(stream, p, "
                                        "aotc::rt::cuda::Precision::") +
                                (precision == rt::cuda::Precision::Fp16 ? "Fp16" : "Bf16") + ", " +
                                std::to_string(op.i("row_stride")) + ", " + e.in(op.inputs[0]) + ", " +
                                e.out(op.outputs[0]) + ");")};
  const std::string call =
      precision == rt::cuda::Precision::Fp16 || precision == rt::cuda::Precision::Bf16
          ? std::string("aotc::rt::cuda::im2col_nhwc_16bit(stream, p, aotc::rt::cuda::Precision::") +
                (precision == rt::cuda::Precision::Fp16 ? "Fp16" : "Bf16") + ", "
          : std::string("aotc::rt::cuda::im2col_nhwc_f32(stream, p, ");
  return {"", kernel_call(op, p.str(),
                          call + (op.b(ir::attr::nchw_input) ? "true, " : "false, ") +
                              std::to_string(op.i("row_stride")) + ", " + e.in(op.inputs[0]) + ", " +
                              e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_im2col_nhwc_cuda(CudaRegistry& r) { r.add(ir::kind::im2col_nhwc, emit_im2col_nhwc); }

}  // namespace aotc::ops::cuda
