// aten::_native_multi_head_attention, the fast path nn.MultiheadAttention takes in eval mode
// (batch_first, no grad): QKV projection GEMM(s), the fused attention kernel reading q, k
// and v in place from the projection (no split, no head transposes), and the output
// projection GEMM. Its mask follows torch's _masked_softmax: true (or, for a float mask,
// non-zero) means masked; a fully masked row gives zeros.
#include <aotc/rt/kernels.h>

#include <cmath>

#include "op_helpers.h"
#include "sequence_ops.h"

namespace aotc::ops {

namespace {

// A [rows, cols] view of rows [row0, row0 + rows) of a dense 2-d (or 1-d, cols = 1) tensor.
int row_slice(LowerContext& ctx, int id, int64_t row0, int64_t rows, int64_t cols) {
  const ir::Shape shape = cols == 1 ? ir::Shape{rows} : ir::Shape{rows, cols};
  return ctx.graph.add_alias(id, shape, row0 * cols * ir::dtype_size(ctx.graph.value(id).dtype));
}

// x [B, T, D] times rows [row0, row0 + n) of the projection weight (+ the same bias rows).
int project(LowerContext& ctx, int x, int weight, int bias, int64_t row0, int64_t n, int64_t d) {
  const ir::Shape xs = ctx.graph.value(x).shape;
  GemmShape g;
  g.m = ir::numel(xs) / d;
  g.n = n;
  g.k = d;
  g.trans_b = true;
  g.bias_kind = bias >= 0 ? rt::BiasKind::PerColumn : rt::BiasKind::None;
  const int w =
      row0 == 0 && n == ctx.graph.value(weight).shape[0] ? weight : row_slice(ctx, weight, row0, n, d);
  const int b = bias < 0 ? -1
                         : (row0 == 0 && n == ir::numel(ctx.graph.value(bias).shape)
                                ? bias
                                : row_slice(ctx, bias, row0, n, 1));
  const int y = ctx.new_value(ir::DType::Float32, {xs[0], xs[1], n});
  make_gemm(ctx, g, x, w, b, y);
  return y;
}

// _native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
// proj_weight, proj_bias, mask=None, need_weights=True, average_attn_weights=True, mask_type=None)
void lower_native_mha(LowerContext& ctx) {
  MultiHeadAttentionArgs a;
  a.query = ctx.tensor(0);
  a.key = ctx.tensor(1);
  a.value = ctx.tensor(2);
  a.embed_dim = ctx.int_arg(3);
  a.heads = ctx.int_arg(4);
  a.qkv_weight = ctx.tensor(5);
  a.qkv_bias = ctx.tensor(6);
  a.proj_weight = ctx.tensor(7);
  a.proj_bias = ctx.tensor(8);
  a.mask = ctx.is_none(9) ? -1 : ctx.tensor(9);
  a.need_weights = ctx.num_inputs() > 10 ? ctx.bool_arg(10) : true;
  a.average_weights = ctx.num_inputs() > 11 ? ctx.bool_arg(11) : true;
  a.mask_type = ctx.is_none(12) ? -1 : ctx.int_arg(12);
  const MultiHeadAttentionResult r = lower_multi_head_attention(ctx, a);
  ctx.set_tensor_output(0, r.out);
  // Without need_weights torch returns an undefined tensor here.
  ctx.set_output(1, r.weights >= 0 ? Operand::of_tensor(r.weights) : Operand::none());
}

}  // namespace

MultiHeadAttentionResult lower_multi_head_attention(LowerContext& ctx, const MultiHeadAttentionArgs& a) {
  for (int id : {a.query, a.key, a.value, a.qkv_weight, a.qkv_bias, a.proj_weight, a.proj_bias})
    if (ctx.graph.value(id).dtype != ir::DType::Float32)
      ctx.fail("multi-head attention supports float32 tensors only");
  const ir::Shape q = ctx.graph.value(a.query).shape, k = ctx.graph.value(a.key).shape;
  const int64_t D = a.embed_dim, H = a.heads;
  if (q.size() != 3 || k.size() != 3 || ctx.graph.value(a.value).shape != k || q[0] != k[0] || q[2] != D ||
      k[2] != D)
    ctx.fail("query " + ir::shape_str(q) + ", key " + ir::shape_str(k) + " and value " +
             ir::shape_str(ctx.graph.value(a.value).shape) + " must be [B, T, " + std::to_string(D) + "]");
  if (H <= 0 || D % H)
    ctx.fail("embed_dim " + std::to_string(D) + " does not split into " + std::to_string(H) + " heads");
  if (ctx.graph.value(a.qkv_weight).shape != ir::Shape{3 * D, D} ||
      ir::numel(ctx.graph.value(a.qkv_bias).shape) != 3 * D ||
      ctx.graph.value(a.proj_weight).shape != ir::Shape{D, D} ||
      ir::numel(ctx.graph.value(a.proj_bias).shape) != D)
    ctx.fail("projection weights do not have the shapes [3D, D], [3D], [D, D], [D] for D = " +
             std::to_string(D));
  const int64_t B = q[0], T = q[1], S = k[1], dh = D / H;

  // Projections: one GEMM for self-attention, q and a packed kv for key == value.
  AttentionOperands op;
  int64_t ldq, ldk, ldv;
  if (a.query == a.key && a.key == a.value) {
    const int qkv = project(ctx, a.query, a.qkv_weight, a.qkv_bias, 0, 3 * D, D);
    op.q = op.k = op.v = qkv;
    op.k_offset = D;
    op.v_offset = 2 * D;
    ldq = ldk = ldv = 3 * D;
  } else if (a.key == a.value) {
    op.q = project(ctx, a.query, a.qkv_weight, a.qkv_bias, 0, D, D);
    op.k = op.v = project(ctx, a.key, a.qkv_weight, a.qkv_bias, D, 2 * D, D);
    op.v_offset = D;
    ldq = D;
    ldk = ldv = 2 * D;
  } else {
    op.q = project(ctx, a.query, a.qkv_weight, a.qkv_bias, 0, D, D);
    op.k = project(ctx, a.key, a.qkv_weight, a.qkv_bias, D, D, D);
    op.v = project(ctx, a.value, a.qkv_weight, a.qkv_bias, 2 * D, D, D);
    ldq = ldk = ldv = D;
  }

  rt::AttentionParams p;
  p.batch = B;
  p.heads = H;
  p.q_len = T;
  p.kv_len = S;
  p.head_dim = dh;
  p.v_head_dim = dh;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dh)));
  const int64_t qs[3] = {T * ldq, dh, ldq}, ks[3] = {S * ldk, dh, ldk}, vs[3] = {S * ldv, dh, ldv};
  const int64_t os[3] = {T * D, dh, D};  // [B, T, H, dh]: the output projection's input as is
  std::copy(qs, qs + 3, p.q_strides);
  std::copy(ks, ks + 3, p.k_strides);
  std::copy(vs, vs + 3, p.v_strides);
  std::copy(os, os + 3, p.out_strides);

  if (a.mask >= 0) {
    const ir::Value& m = ctx.graph.value(a.mask);
    if (m.dtype == ir::DType::Bool)
      p.mask_kind = rt::AttentionMask::DropIfTrue;
    else if (m.dtype == ir::DType::Float32)
      p.mask_kind = rt::AttentionMask::DropIfNonzero;
    else
      ctx.fail(std::string("a mask of dtype ") + ir::dtype_name(m.dtype) +
               " is not supported (bool or float32)");
    const ir::Shape& ms = m.shape;
    if (a.mask_type == 0) {  // [T, S]
      if (ms != ir::Shape{T, S})
        ctx.fail("an attention mask (mask_type 0) must be [T, S], got " + ir::shape_str(ms));
      const int64_t s[4] = {0, 0, S, 1};
      std::copy(s, s + 4, p.mask_strides);
    } else if (a.mask_type == 1) {  // [B, S]: key padding
      if (ms != ir::Shape{B, S})
        ctx.fail("a key padding mask (mask_type 1) must be [B, S], got " + ir::shape_str(ms));
      const int64_t s[4] = {S, 0, 0, 1};
      std::copy(s, s + 4, p.mask_strides);
    } else {  // anything that broadcasts to [B, H, T, S]
      const ir::Shape full = {B, H, T, S};
      if (ms.size() > 4 || broadcast_shapes(ctx, ms, full) != full)
        ctx.fail("mask " + ir::shape_str(ms) + " does not broadcast to " + ir::shape_str(full));
      const std::vector<int64_t> s = broadcast_strides(ms, full);
      std::copy(s.begin(), s.end(), p.mask_strides);
    }
    op.mask = a.mask;
  }

  MultiHeadAttentionResult result;
  if (a.need_weights) {
    p.weights = a.average_weights ? rt::AttentionWeights::HeadMean : rt::AttentionWeights::PerHead;
    op.probs =
        ctx.new_value(ir::DType::Float32, a.average_weights ? ir::Shape{B, T, S} : ir::Shape{B, H, T, S});
    result.weights = op.probs;
  }
  op.out = ctx.new_value(ir::DType::Float32, {B, T, D});
  make_attention(ctx, p, op);

  GemmShape g;  // out = attention @ proj_weight^T + proj_bias (+ residual)
  g.m = B * T;
  g.n = D;
  g.k = D;
  g.trans_b = true;
  g.bias_kind = rt::BiasKind::PerColumn;
  if (a.residual >= 0 && ctx.graph.value(a.residual).shape != q)
    ctx.fail("internal: the residual must have the query's shape");
  result.out = ctx.new_value(ir::DType::Float32, q);
  make_gemm(ctx, g, op.out, a.proj_weight, a.proj_bias, result.out, a.residual);
  return result;
}

void register_native_multi_head_attention(Registry& r) {
  r.add_lowering("aten::_native_multi_head_attention", lower_native_mha);
}

}  // namespace aotc::ops
