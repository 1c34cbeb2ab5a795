// IR "gemm" and "batched_gemm" -> gemm_f32 / batched_gemm_f32. The lowerings of linear,
// addmm, mm, bmm and matmul (their own files) produce these with make_gemm().
#include <aotc/rt/kernels.h>

#include "gemm.h"
#include "op_helpers.h"

namespace aotc::ops {

std::map<std::string, ir::Attr> gemm_attrs(const GemmShape& g) {
  return {{"m", g.m},
          {"n", g.n},
          {"k", g.k},
          {"trans_a", g.trans_a},
          {"trans_b", g.trans_b},
          {"lda", g.trans_a ? g.m : g.k},
          {"ldb", g.trans_b ? g.k : g.n},
          {"ldc", g.n},
          {"alpha", g.alpha},
          {"beta", g.beta},
          {"bias_kind", static_cast<int64_t>(g.bias_kind)},
          {ir::attr::clamp_lo, -INFINITY},
          {ir::attr::clamp_hi, INFINITY},
          {"batch", g.batch},
          {"stride_a", g.stride_a},
          {"stride_b", g.stride_b},
          {"stride_c", g.m * g.n},
          {"stride_bias", g.stride_bias}};
}

ir::Op& make_gemm(LowerContext& ctx, const GemmShape& g, int a, int b, int bias, int y, int residual) {
  const bool batched = g.batch > 1 || g.stride_a || g.stride_b || g.stride_bias;
  if (batched && residual >= 0) ctx.fail("internal: a batched GEMM cannot take a residual");
  std::vector<int> inputs = {a, b, bias};
  if (residual >= 0) inputs.push_back(residual);
  ir::Op& op = ctx.add_op(batched ? ir::kind::batched_gemm : ir::kind::gemm, inputs, {y});
  op.attrs = gemm_attrs(g);
  rt::GemmParams p;
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.alpha = static_cast<float>(g.alpha);
  op.thread_scratch_bytes = g.batch > 0 ? rt::gemm_thread_scratch_bytes(p) : 0;
  return op;
}

namespace {

ParamsCode gemm_fields(const ir::Op& op, const std::string& type, const std::string& prefix) {
  ParamsCode p(type);
  p.set(prefix + "m", op.i("m"))
      .set(prefix + "n", op.i("n"))
      .set(prefix + "k", op.i("k"))
      .set_bool(prefix + "trans_a", op.b("trans_a"))
      .set_bool(prefix + "trans_b", op.b("trans_b"))
      .set(prefix + "lda", op.i("lda"))
      .set(prefix + "ldb", op.i("ldb"))
      .set(prefix + "ldc", op.i("ldc"))
      .set_f32(prefix + "alpha", op.f("alpha"))
      .set_f32(prefix + "beta", op.f("beta"))
      .raw(prefix + "bias_kind", "static_cast<aotc::rt::BiasKind>(" + std::to_string(op.i("bias_kind")) + ")")
      .set_f32(prefix + "clamp_lo", op.f(ir::attr::clamp_lo))
      .set_f32(prefix + "clamp_hi", op.f(ir::attr::clamp_hi));
  return p;
}

}  // namespace

rt::GemmParams gemm_params_of(const ir::Op& op) {
  rt::GemmParams p;
  p.m = op.i("m");
  p.n = op.i("n");
  p.k = op.i("k");
  p.trans_a = op.b("trans_a");
  p.trans_b = op.b("trans_b");
  p.lda = op.i("lda");
  p.ldb = op.i("ldb");
  p.ldc = op.i("ldc");
  p.alpha = static_cast<float>(op.f("alpha"));
  p.beta = static_cast<float>(op.f("beta"));
  p.bias_kind = static_cast<rt::BiasKind>(op.i("bias_kind"));
  p.clamp_lo = static_cast<float>(op.f(ir::attr::clamp_lo));
  p.clamp_hi = static_cast<float>(op.f(ir::attr::clamp_hi));
  if (op.has(ir::attr::activation))
    p.activation = static_cast<rt::GemmActivation>(op.i(ir::attr::activation));
  return p;
}

ParamsCode gemm_params_code(const EmitContext& e, const ir::Op& op) {
  ParamsCode p = gemm_fields(op, "aotc::rt::GemmParams", "");
  // The residual input (4th, optional) goes into the parameters: the kernel call keeps its
  // four operands.
  if (op.inputs.size() > 3 && op.inputs[3] >= 0) p.raw("residual", e.in(op.inputs[3])).set("ldr", op.i("n"));
  if (op.has(ir::attr::activation))  // passes/fuse_gemm_gelu.cpp
    p.raw("activation",
          "static_cast<aotc::rt::GemmActivation>(" + std::to_string(op.i(ir::attr::activation)) + ")");
  return p;
}

ParamsCode batched_gemm_params_code(const ir::Op& op) {
  ParamsCode p = gemm_fields(op, "aotc::rt::BatchedGemmParams", "gemm.");
  p.set("batch", op.i("batch"))
      .set("stride_a", op.i("stride_a"))
      .set("stride_b", op.i("stride_b"))
      .set("stride_c", op.i("stride_c"))
      .set("stride_bias", op.has("stride_bias") ? op.i("stride_bias") : 0);
  return p;
}

std::string gemm_operands(const EmitContext& e, const ir::Op& op) {
  return e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " + e.in(op.inputs[2]) + ", " +
         e.out(op.outputs[0]);
}

namespace {

std::string emit_gemm(const EmitContext& e, const ir::Op& op) {
  // "prepacked" (the CPU pass prepack_gemm_weights): the weight input is already packed.
  const char* kernel = op.has(ir::attr::prepacked) ? "aotc::rt::gemm_prepacked_f32" : "aotc::rt::gemm_f32";
  return kernel_call(op, gemm_params_code(e, op).str(),
                     std::string(kernel) + "(pool, p, " + gemm_operands(e, op) + ");");
}

std::string emit_batched_gemm(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, batched_gemm_params_code(op).str(),
                     "aotc::rt::batched_gemm_f32(pool, p, " + gemm_operands(e, op) + ");");
}

}  // namespace

void register_gemm(Registry& r) {
  r.add_ir_op(ir::kind::gemm, emit_gemm);
  r.add_ir_op(ir::kind::batched_gemm, emit_batched_gemm);
}

}  // namespace aotc::ops
