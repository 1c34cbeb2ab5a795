// aten::linear(input, weight, bias?) -> gemm: input viewed as [M, K] times weight^T [K, N].
#include "gemm.h"
#include "op_helpers.h"

namespace aotc::ops {
namespace {

void lower_linear(LowerContext& ctx) {
  ctx.require_float32({0, 1, 2});
  const ir::Shape x = ctx.value(0).shape;
  const ir::Shape w = ctx.value(1).shape;
  if (x.empty()) ctx.fail("input must have at least one dimension");
  if (w.size() != 2 && w.size() != 1) ctx.fail("weight must be 1-d or 2-d, got " + ir::shape_str(w));
  const int64_t k = x.back();
  const int64_t n = w.size() == 2 ? w[0] : 1;
  if ((w.size() == 2 ? w[1] : w[0]) != k)
    ctx.fail("input " + ir::shape_str(x) + " and weight " + ir::shape_str(w) +
             " do not match in the last dimension");
  const int bias = ctx.is_none(2) ? -1 : ctx.tensor(2);
  if (bias >= 0 && ir::numel(ctx.graph.value(bias).shape) != n)
    ctx.fail("bias " + ir::shape_str(ctx.graph.value(bias).shape) + " does not match " + std::to_string(n) +
             " outputs");
  ir::Shape y = x;
  y.pop_back();
  if (w.size() == 2) y.push_back(n);
  GemmShape g;
  g.m = ir::numel(x) / k;
  g.n = n;
  g.k = k;
  g.trans_b = true;  // weight is stored [N, K]
  g.bias_kind = bias >= 0 ? rt::BiasKind::PerColumn : rt::BiasKind::None;
  const int out = ctx.new_value(ir::DType::Float32, y);
  make_gemm(ctx, g, ctx.tensor(0), ctx.tensor(1), bias, out);
  ctx.set_tensor_output(0, out);
}

}  // namespace

void register_linear(Registry& r) { r.add_lowering("aten::linear", lower_linear); }

}  // namespace aotc::ops
