// conv2d_expand_depthwise: a 1x1 expansion and the depthwise convolution that alone reads
// it (and a silu between them: attribute expand_silu), made one op by
// passes/fuse_expand_depthwise.cpp (CPU) -> conv2d_expand_depthwise_f32.
// No lowering of its own: no TorchScript op maps to it.
#include <aotc/rt/kernels.h>

#include "op_helpers.h"
#include "spatial.h"

namespace aotc::ops {

void expand_depthwise_params_of(const ir::Op& op, rt::Conv2dParams& pw, rt::Conv2dParams& dw) {
  dw = conv2d_params_of(op);  // the depthwise convolution's own attributes
  dw.has_bias = op.inputs[4] >= 0;
  pw = rt::Conv2dParams{};
  pw.n = dw.n;
  pw.c_in = op.i(ir::attr::expand_c_in);
  pw.c_out = dw.c_in;
  pw.h_in = pw.h_out = dw.h_in;
  pw.w_in = pw.w_out = dw.w_in;
  pw.has_bias = op.inputs[2] >= 0;
  pw.clamp_lo = static_cast<float>(op.f(ir::attr::expand_clamp_lo));
  pw.clamp_hi = static_cast<float>(op.f(ir::attr::expand_clamp_hi));
}

namespace {

std::string emit_conv2d_expand_depthwise(const EmitContext& e, const ir::Op& op) {
  rt::Conv2dParams pw, dw;
  expand_depthwise_params_of(op, pw, dw);
  return kernel_call(op, conv2d_params_code(pw, "pw").str() + " " + conv2d_params_code(dw, "dw").str(),
                     "aotc::rt::conv2d_expand_depthwise_f32(pool, pw, dw, " + e.in(op.inputs[0]) + ", " +
                         e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " + e.in(op.inputs[3]) + ", " +
                         e.in(op.inputs[4]) + ", " + e.out(op.outputs[0]) +
                         (op.has(ir::attr::expand_silu) ? ", true" : "") + ");");
}

}  // namespace

void register_conv2d_expand_depthwise(Registry& r) {
  r.add_ir_op(ir::kind::conv2d_expand_depthwise, emit_conv2d_expand_depthwise);
}

}  // namespace aotc::ops
