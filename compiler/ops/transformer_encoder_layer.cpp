// aten::_transformer_encoder_layer_fwd, the fast path of nn.TransformerEncoderLayer in eval
// mode: one whole layer as torch's fused op computes it,
//   post-norm: x = LN1(src + MHA(src));    out = LN2(x + FFN(x))
//   pre-norm:  x = src + MHA(LN1(src));    out = x + FFN(LN2(x))
// with FFN(x) = W2 act(W1 x + b1) + b2 (act: relu, or erf GELU when use_gelu). Residual adds
// ride in the GEMM epilogues, relu in the first FFN GEMM's clamp.
#include <aotc/rt/kernels.h>

#include <cmath>

#include "op_helpers.h"
#include "sequence_ops.h"

namespace aotc::ops {
namespace {

// Linear layer on the last dim of x: x W^T + b (+ residual), optionally relu'd.
int linear(LowerContext& ctx, int x, int weight, int bias, int residual, bool relu) {
  const ir::Shape xs = ctx.graph.value(x).shape;
  const ir::Shape ws = ctx.graph.value(weight).shape;
  if (ws.size() != 2 || ws[1] != xs.back())
    ctx.fail("feed-forward weight " + ir::shape_str(ws) + " does not fit its input " + ir::shape_str(xs));
  GemmShape g;
  g.m = ir::numel(xs) / xs.back();
  g.n = ws[0];
  g.k = ws[1];
  g.trans_b = true;
  g.bias_kind = rt::BiasKind::PerColumn;
  ir::Shape ys = xs;
  ys.back() = ws[0];
  const int y = ctx.new_value(ir::DType::Float32, ys);
  ir::Op& op = make_gemm(ctx, g, x, weight, bias, y, residual);
  if (relu) op.attrs[ir::attr::clamp_lo] = 0.0;
  return y;
}

int gelu(LowerContext& ctx, int x) {
  const int y = ctx.new_value(ir::DType::Float32, ctx.graph.value(x).shape);
  ir::Op& op = ctx.add_op(ir::kind::unary, {x}, {y});
  op.attrs = {{"op", static_cast<int64_t>(rt::UnaryOp::GeluErf)}, {"a", 0.0}, {"b", 0.0}};
  return y;
}

// _transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
// proj_bias, use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2,
// ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None, mask_type=None)
void lower_encoder_layer(LowerContext& ctx) {
  ctx.require_float32({0, 3, 4, 5, 6, 10, 11, 12, 13, 14, 15, 16, 17});
  const int src = ctx.tensor(0);
  const int64_t D = ctx.int_arg(1);
  const bool use_gelu = ctx.bool_arg(7), norm_first = ctx.bool_arg(8);
  const double eps = ctx.double_arg(9);
  if (ctx.value(0).shape.size() != 3)
    ctx.fail("src must be [B, T, D], got " + ir::shape_str(ctx.value(0).shape));

  MultiHeadAttentionArgs a;
  a.embed_dim = D;
  a.heads = ctx.int_arg(2);
  a.qkv_weight = ctx.tensor(3);
  a.qkv_bias = ctx.tensor(4);
  a.proj_weight = ctx.tensor(5);
  a.proj_bias = ctx.tensor(6);
  a.mask = ctx.is_none(18) ? -1 : ctx.tensor(18);
  a.mask_type = ctx.is_none(19) ? -1 : ctx.int_arg(19);
  a.need_weights = false;
  a.residual = src;
  const int n1w = ctx.tensor(10), n1b = ctx.tensor(11), n2w = ctx.tensor(12), n2b = ctx.tensor(13);

  auto ffn = [&](int x, int residual) {
    int h = linear(ctx, x, ctx.tensor(14), ctx.tensor(15), -1, !use_gelu);
    if (use_gelu) h = gelu(ctx, h);
    return linear(ctx, h, ctx.tensor(16), ctx.tensor(17), residual, false);
  };
  int out;
  if (norm_first) {
    const int h = make_layer_norm(ctx, src, D, n1w, n1b, eps);
    a.query = a.key = a.value = h;
    const int x = lower_multi_head_attention(ctx, a).out;  // src + attention(LN1(src))
    out = ffn(make_layer_norm(ctx, x, D, n2w, n2b, eps), x);
  } else {
    a.query = a.key = a.value = src;
    const int x = make_layer_norm(ctx, lower_multi_head_attention(ctx, a).out, D, n1w, n1b, eps);
    out = make_layer_norm(ctx, ffn(x, x), D, n2w, n2b, eps);
  }
  ctx.set_tensor_output(0, out);
}

}  // namespace

void register_transformer_encoder_layer(Registry& r) {
  r.add_lowering("aten::_transformer_encoder_layer_fwd", lower_encoder_layer);
}

}  // namespace aotc::ops
