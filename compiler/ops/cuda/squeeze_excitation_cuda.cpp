// IR "squeeze_excitation" on CUDA -> aotc::rt::cuda::squeeze_excitation_gate: a
// squeeze-and-excitation block's gate from its pooled input, made by
// passes/cuda/fuse_squeeze_excitation.cpp from the block's two 1x1 convolutions (GEMMs in
// NHWC) and its gate. Inputs: the pooled input (n x c), w1 (r x c), its bias (-1: none), w2
// transposed (r x c), its bias (-1: none); output s (n x c); attributes n, c, r,
// "activation" (a GemmActivation, after the first bias), clamp_lo / clamp_hi (after it) and
// "gate" (a UnaryOp). All float32.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_squeeze_excitation(const EmitContext& e, const ir::Op& op, size_t) {
  ParamsCode p("aotc::rt::cuda::SqueezeExcitationParams", "p");
  p.set("n", op.i("n")).set("c", op.i("c")).set("r", op.i("r"));
  p.raw("act", "static_cast<aotc::rt::GemmActivation>(" + std::to_string(op.i(ir::attr::activation)) + ")")
      .set_f32("lo", op.f(ir::attr::clamp_lo))
      .set_f32("hi", op.f(ir::attr::clamp_hi))
      .raw("gate", "static_cast<aotc::rt::UnaryOp>(" + std::to_string(op.i("gate")) + ")");
  const auto optional = [&](size_t i) {
    return op.inputs[i] >= 0 ? e.in(op.inputs[i]) : std::string("nullptr");
  };
  const std::string call = "aotc::rt::cuda::squeeze_excitation_gate(stream, p, " + e.in(op.inputs[0]) + ", " +
                           e.in(op.inputs[1]) + ", " + optional(2) + ", " + e.in(op.inputs[3]) + ", " +
                           optional(4) + ", " + e.out(op.outputs[0]) + ");";
  return {"", kernel_call(op, p.str(), call)};
}

}  // namespace

void register_squeeze_excitation_cuda(CudaRegistry& r) {
  r.add(ir::kind::squeeze_excitation, emit_squeeze_excitation);
}

}  // namespace aotc::ops::cuda
