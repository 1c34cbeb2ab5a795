// IR "gemm" and "batched_gemm" on CUDA -> aotc::rt::cuda::gemm_f32 / batched_gemm_f32
// (runtime/cuda/kernels/gemm_cublas.cu): cuBLAS, then the bias, residual and clamp
// epilogue; gemm_16bit where choose_gemm_operands.cpp made a weight operand 16-bit, and
// gemm_16bit_output where store_activations_16bit.cpp keeps the output in that type;
// conv_gemm_nhwc_f32 for a convolution whose GEMM gathers its input (convert_to_channels_last.cpp).
#include <aotc/rt/cuda/gemm_plan.h>

#include <iterator>

#include "../gemm.h"
#include "../spatial.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_gathered_conv(const EmitContext& e, const ir::Op& op, const ParamsCode& p) {
  const ParamsCode conv = conv2d_params_code(gathered_conv_of(op), "conv");
  return {"", kernel_call(op, p.str() + "\n    " + conv.str(),
                          "aotc::rt::cuda::conv_gemm_nhwc_f32(ex, p, conv, " + gemm_operands(e, op) + ", " +
                              e.scratch(op) + ");")};
}

// "c_16bit" (store_activations_16bit.cpp): the output, the bias and the residual in the
// 16-bit type, the residual passed beside the parameters.
CudaCode emit_gemm_16bit_output(const EmitContext& e, const ir::Op& op) {
  ir::Op product = op;
  product.inputs.resize(3);
  ParamsCode p = gemm_params_code(e, product);
  const int residual = op.inputs.size() > 3 ? op.inputs[3] : -1;
  if (residual >= 0) p.set("ldr", op.i("n"));
  return {"",
          kernel_call(op, p.str(),
                      "aotc::rt::cuda::gemm_16bit_output(ex, p, " + e.in(op.inputs[0]) + ", " +
                          (op.b(ir::attr::a_16bit) ? "true" : "false") + ", " + e.in(op.inputs[1]) + ", " +
                          (op.b(ir::attr::b_16bit) ? "true" : "false") + ", " + e.in(op.inputs[2]) + ", " +
                          e.in(residual) + ", " + e.out(op.outputs[0]) + ", " + e.scratch(op) + ");")};
}

CudaCode emit_gemm(const EmitContext& e, const ir::Op& op, size_t) {
  if (op.has(ir::attr::c_16bit) && op.b(ir::attr::c_16bit)) return emit_gemm_16bit_output(e, op);
  const ParamsCode p = gemm_params_code(e, op);
  if (op.has(ir::attr::conv_geometry)) return emit_gathered_conv(e, op, p);
  if (has_16bit_operand(op))
    return {"",
            kernel_call(op, p.str(),
                        "aotc::rt::cuda::gemm_16bit(ex, p, " + e.in(op.inputs[0]) + ", " +
                            (op.b(ir::attr::a_16bit) ? "true" : "false") + ", " + e.in(op.inputs[1]) + ", " +
                            (op.b(ir::attr::b_16bit) ? "true" : "false") + ", " + e.in(op.inputs[2]) + ", " +
                            e.out(op.outputs[0]) + ", " + e.scratch(op) + ");")};
  // "b_weight" (choose_gemm_operands.cpp): B is a weight, which the runtime may split once.
  const char* kernel =
      op.has(ir::attr::b_weight) && op.b(ir::attr::b_weight) ? "gemm_weight_f32" : "gemm_f32";
  return {"",
          kernel_call(op, p.str(),
                      std::string("aotc::rt::cuda::") + kernel + "(ex, p, " + gemm_operands(e, op) + ");")};
}

CudaCode emit_batched_gemm(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, batched_gemm_params_code(op).str(),
                          "aotc::rt::cuda::batched_gemm_f32(ex, p, " + gemm_operands(e, op) + ");")};
}

}  // namespace

bool has_16bit_operand(const ir::Op& op) {
  return op.has(ir::attr::a_16bit) && (op.b(ir::attr::a_16bit) || op.b(ir::attr::b_16bit));
}

// "conv_geometry": n, c_in, h_in, w_in, c_out, h_out, w_out, then kernel, stride, padding
// and dilation, each as h and w. The op's input is the NHWC tensor itself, its scratch the
// unfolded columns for the im2col + GEMM path.
std::vector<int64_t> conv_geometry_attr(const rt::Conv2dParams& c) {
  return {c.n,        c.c_in,     c.h_in,     c.w_in,  c.c_out, c.h_out,      c.w_out,     c.kernel_h,
          c.kernel_w, c.stride_h, c.stride_w, c.pad_h, c.pad_w, c.dilation_h, c.dilation_w};
}

rt::Conv2dParams gathered_conv_of(const ir::Op& op) {
  const std::vector<int64_t>& g = op.ints(ir::attr::conv_geometry);
  rt::Conv2dParams c;
  int64_t* const fields[] = {&c.n,        &c.c_in,  &c.h_in,     &c.w_in,       &c.c_out,
                             &c.h_out,    &c.w_out, &c.kernel_h, &c.kernel_w,   &c.stride_h,
                             &c.stride_w, &c.pad_h, &c.pad_w,    &c.dilation_h, &c.dilation_w};
  for (size_t i = 0; i < std::size(fields); ++i) *fields[i] = g.at(i);
  return c;
}

void register_gemm_cuda(CudaRegistry& r) {
  r.add(ir::kind::gemm, emit_gemm, [](const ir::Op& op) -> int64_t {
    if (op.has(ir::attr::conv_geometry)) {  // the unfolded columns, m x k floats
      const rt::GemmParams p = gemm_params_of(op);
      return p.m * p.k * static_cast<int64_t>(sizeof(float));
    }
    return has_16bit_operand(op) ? rt::cuda::gemm_16bit_scratch_bytes(
                                       gemm_params_of(op), op.b(ir::attr::a_16bit), op.b(ir::attr::b_16bit))
                                 : 0;
  });
  r.add(ir::kind::batched_gemm, emit_batched_gemm);
}

}  // namespace aotc::ops::cuda
