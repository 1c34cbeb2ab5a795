// aten::matmul, aten::mm, aten::bmm, aten::baddbmm -> gemm / batched_gemm, with torch.matmul's rules:
// 1-d operands gain and then lose a dimension, batch dims broadcast (materialised with a
// strided copy only when neither side can simply be reused with stride 0).
#include "gemm.h"
#include "op_helpers.h"

namespace aotc::ops {
namespace {

// Materialises value `id` (shape `from`) broadcast to `to` as a dense new value.
int expand_to(LowerContext& ctx, int id, const ir::Shape& from, const ir::Shape& to) {
  const int out = ctx.new_value(ir::DType::Float32, to);
  ir::Op& op = ctx.add_op(ir::kind::copy, {id}, {out});
  op.attrs = {{"dims", to},
              {"src_strides", broadcast_strides(from, to)},
              {"dst_strides", dense_strides(to)},
              {"elem_size", int64_t{4}}};
  return out;
}

void lower_product(LowerContext& ctx, int a_id, int b_id) {
  ir::Shape a = ctx.graph.value(a_id).shape, b = ctx.graph.value(b_id).shape;
  if (a.empty() || b.empty()) ctx.fail("both arguments need at least one dimension");
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  if (b[b.size() - 2] != k)
    ctx.fail("shapes " + ir::shape_str(ctx.graph.value(a_id).shape) + " and " +
             ir::shape_str(ctx.graph.value(b_id).shape) + " cannot be multiplied");
  const ir::Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  const ir::Shape batch = broadcast_shapes(ctx, a_batch, b_batch);
  ir::Shape y = batch;
  if (!a_vector) y.push_back(m);
  if (!b_vector) y.push_back(n);
  const int out = ctx.new_value(ir::DType::Float32, y);
  GemmShape g;
  g.m = m;
  g.n = n;
  g.k = k;
  const int64_t batch_count = ir::numel(batch);
  if (ir::numel(b_batch) == 1) {
    // b is one matrix: fold all of a's batch into M.
    g.m = m * ir::numel(a_batch);
    if (ir::numel(a_batch) != batch_count)
      a_id = expand_to(ctx, a_id, a, [&] {
        ir::Shape s = batch;
        s.push_back(m);
        s.push_back(k);
        return s;
      }());
    make_gemm(ctx, g, a_id, b_id, -1, out);
  } else {
    g.batch = batch_count;
    g.stride_a = ir::numel(a_batch) == 1 ? 0 : m * k;
    g.stride_b = n * k;
    if (ir::numel(a_batch) != 1 && a_batch != batch) {
      ir::Shape to = batch;
      to.push_back(m);
      to.push_back(k);
      a_id = expand_to(ctx, a_id, a, to);
    }
    if (b_batch != batch) {
      ir::Shape to = batch;
      to.push_back(k);
      to.push_back(n);
      b_id = expand_to(ctx, b_id, b, to);
    }
    make_gemm(ctx, g, a_id, b_id, -1, out);
  }
  ctx.set_tensor_output(0, out);
}

void lower_matmul(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  lower_product(ctx, ctx.tensor(0), ctx.tensor(1));
}

void lower_mm(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  if (ctx.value(0).shape.size() != 2 || ctx.value(1).shape.size() != 2) ctx.fail("mm needs two 2-d tensors");
  lower_product(ctx, ctx.tensor(0), ctx.tensor(1));
}

void lower_bmm(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  const ir::Shape a = ctx.value(0).shape, b = ctx.value(1).shape;
  if (a.size() != 3 || b.size() != 3 || a[0] != b[0])
    ctx.fail("bmm needs two 3-d tensors with the same batch");
  lower_product(ctx, ctx.tensor(0), ctx.tensor(1));
}

// baddbmm(self, batch1, batch2, *, beta=1, alpha=1) = beta * self + alpha * batch1 @ batch2.
// self rides in the batched GEMM's bias: shared by every product when it has no batch dim
// (per-column, per-row or full), one m x n block per product otherwise (expanded first
// when it broadcasts within a product).
void lower_baddbmm(LowerContext& ctx) {
  ctx.require_float32({0, 1, 2});
  const ir::Shape a = ctx.value(1).shape, b = ctx.value(2).shape;
  if (a.size() != 3 || b.size() != 3 || a[0] != b[0] || a[2] != b[1])
    ctx.fail("batch1 " + ir::shape_str(a) + " and batch2 " + ir::shape_str(b) + " cannot be multiplied");
  GemmShape g;
  g.batch = a[0];
  g.m = a[1];
  g.n = b[2];
  g.k = a[2];
  g.stride_a = g.m * g.k;
  g.stride_b = g.k * g.n;
  g.beta = ctx.num_inputs() > 3 ? ctx.double_arg(3) : 1.0;
  g.alpha = ctx.num_inputs() > 4 ? ctx.double_arg(4) : 1.0;
  const ir::Shape out_shape = {g.batch, g.m, g.n};
  ir::Shape s = ctx.value(0).shape;
  if (broadcast_shapes(ctx, s, out_shape) != out_shape)
    ctx.fail("self " + ir::shape_str(s) + " does not broadcast to the product's shape " +
             ir::shape_str(out_shape));
  while (s.size() < 3) s.insert(s.begin(), 1);
  int bias = ctx.tensor(0);
  if (g.beta == 0.0) {
    bias = -1;  // torch ignores self then, NaN included
  } else if (s[0] == 1 && s[1] == 1 && s[2] == g.n && g.n > 1) {
    g.bias_kind = rt::BiasKind::PerColumn;
  } else if (s[0] == 1 && s[1] == g.m && s[2] == 1 && g.m > 1) {
    g.bias_kind = rt::BiasKind::PerRow;
  } else if (s[0] == 1 && s[1] == g.m && s[2] == g.n) {
    g.bias_kind = rt::BiasKind::Full;
  } else {
    if (s != out_shape) bias = expand_to(ctx, bias, s, out_shape);
    g.bias_kind = rt::BiasKind::Full;
    g.stride_bias = g.m * g.n;
  }
  const int out = ctx.new_value(ir::DType::Float32, out_shape);
  make_gemm(ctx, g, ctx.tensor(1), ctx.tensor(2), bias, out);
  ctx.set_tensor_output(0, out);
}

}  // namespace

void register_matmul(Registry& r) {
  r.add_lowering("aten::baddbmm", lower_baddbmm);
  r.add_lowering("aten::matmul", lower_matmul);
  r.add_lowering("aten::mm", lower_mm);
  r.add_lowering("aten::bmm", lower_bmm);
}

}  // namespace aotc::ops
