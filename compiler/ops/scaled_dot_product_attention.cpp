// aten::scaled_dot_product_attention -> IR "attention" -> attention_f32, the fused kernel
// (scores, scale, mask, softmax and the product with V in one pass per block of rows).
// The batch dims in front of [L, E] are folded into the kernel's (batch, head) pair; q, k,
// v and the mask broadcast over them through zero strides, so nothing is expanded.
#include <aotc/rt/kernels.h>

#include <cmath>

#include "op_helpers.h"
#include "sequence_ops.h"
#include "strided_view.h"

namespace aotc::ops {

namespace {

// Strides of `shape`'s batch dims (all but its last two) read as broadcast to `batch`.
std::vector<int64_t> batch_strides(const ir::Shape& shape, const ir::Shape& batch) {
  ir::Shape full = batch;
  full.push_back(shape[shape.size() - 2]);
  full.push_back(shape.back());
  std::vector<int64_t> s = broadcast_strides(shape, full);
  s.resize(batch.size());
  return s;
}

// Input `index` read where its elements lie, its batch strides broadcast to `batch`. The kernels take any
// strides over (batch, head, row) with a contiguous last axis, so a materialised view of that form (BERT's
// q.view(b, s, h, d).transpose(1, 2)) is read from its source, and the transposing copy
// goes away when nothing else reads it (eliminate_dead_ops): 36 copies in BERT-base.
// through_views false: the dense value itself (when the views' strides do not fold).
AttentionRead attention_input(LowerContext& ctx, size_t index, const ir::Shape& batch, bool through_views) {
  const int id = ctx.tensor(index);
  const ir::Shape& shape = ctx.value(index).shape;
  const AttentionRead dense{id, 0, batch_strides(shape, batch), shape.back()};
  if (!through_views) return dense;
  const StridedView view = view_of(ctx.graph, id);
  if (view.base == id || view.sizes != shape) return dense;
  std::optional<AttentionRead> in = attention_read(view);
  if (!in) return dense;
  in->batch_strides.insert(in->batch_strides.begin(), batch.size() - in->batch_strides.size(), 0);
  return *in;
}

// scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0., is_causal=False,
// *, scale=None, enable_gqa=False); dropout is ignored (inference).
void lower_sdpa(LowerContext& ctx) {
  ctx.require_float32({0, 1, 2});
  const ir::Shape q = ctx.value(0).shape, k = ctx.value(1).shape, v = ctx.value(2).shape;
  if (q.size() < 2 || k.size() < 2 || v.size() < 2) ctx.fail("query, key and value need at least 2 dims");
  const int64_t L = q[q.size() - 2], E = q.back(), S = k[k.size() - 2], Ev = v.back();
  if (k.back() != E || v[v.size() - 2] != S)
    ctx.fail("query " + ir::shape_str(q) + ", key " + ir::shape_str(k) + " and value " + ir::shape_str(v) +
             " do not fit together");
  const bool causal = ctx.num_inputs() > 5 && ctx.bool_arg(5);
  const bool has_mask = !ctx.is_none(3);
  if (causal && has_mask)
    ctx.fail("an explicit attn_mask cannot be combined with is_causal=True (torch refuses it)");
  if (ctx.num_inputs() > 7 && !ctx.is_none(7) && ctx.bool_arg(7) &&
      (q.size() < 3 || q[q.size() - 3] != k[k.size() - 3]))
    ctx.fail("enable_gqa with fewer key/value heads than query heads is not supported yet");
  const double scale =
      ctx.num_inputs() > 6 && !ctx.is_none(6) ? ctx.double_arg(6) : 1.0 / std::sqrt(double(E));

  const ir::Shape qb(q.begin(), q.end() - 2), kb(k.begin(), k.end() - 2), vb(v.begin(), v.end() - 2);
  ir::Shape batch = broadcast_shapes(ctx, broadcast_shapes(ctx, qb, kb), vb);
  ir::Shape mask_shape;
  rt::AttentionParams p;
  if (has_mask) {
    const ir::Value& m = ctx.value(3);
    if (m.dtype == ir::DType::Bool)
      p.mask_kind = rt::AttentionMask::KeepIfTrue;
    else if (m.dtype == ir::DType::Float32)
      p.mask_kind = rt::AttentionMask::Additive;
    else
      ctx.fail(std::string("attn_mask of dtype ") + ir::dtype_name(m.dtype) +
               " is not supported (bool or float32)");
    mask_shape = m.shape;
    if (mask_shape.empty()) mask_shape = {1};
    if (mask_shape.size() < 2) mask_shape.insert(mask_shape.begin(), 1);
    ir::Shape full = batch;
    full.push_back(L);
    full.push_back(S);
    if (broadcast_shapes(ctx, mask_shape, full) != full)
      ctx.fail("attn_mask " + ir::shape_str(m.shape) + " does not broadcast to the scores' shape " +
               ir::shape_str(full));
  }
  ir::Shape out_shape = batch;
  out_shape.push_back(L);
  out_shape.push_back(Ev);

  // Query, key and value read through their views' strides when the batch dims still fold
  // to (batch, heads) that way, else from their dense copies.
  AttentionRead qi, ki, vi;
  std::vector<int64_t> os, ms;
  ir::Shape folded;
  bool folds = false;
  for (bool through_views : {true, false}) {
    qi = attention_input(ctx, 0, batch, through_views);
    ki = attention_input(ctx, 1, batch, through_views);
    vi = attention_input(ctx, 2, batch, through_views);
    os = batch_strides(out_shape, batch);
    ms = has_mask ? batch_strides(mask_shape, batch) : std::vector<int64_t>(batch.size(), 0);
    folded = batch;
    folds = fold_attention_batch(folded, {&qi.batch_strides, &ki.batch_strides, &vi.batch_strides, &os, &ms});
    if (folds) break;
  }
  if (!folds)
    ctx.fail("the batch dims " + ir::shape_str(batch) +
             " of query, key, value and mask broadcast in a way the "
             "attention kernel cannot fold to (batch, heads)");
  p.batch = folded[0];
  p.heads = folded[1];
  p.q_len = L;
  p.kv_len = S;
  p.head_dim = E;
  p.v_head_dim = Ev;
  p.scale = static_cast<float>(scale);
  p.causal = causal;
  p.mask_strides[0] = ms[0];
  p.mask_strides[1] = ms[1];
  if (has_mask) {
    p.mask_strides[2] = mask_shape[mask_shape.size() - 2] == 1 ? 0 : mask_shape.back();
    p.mask_strides[3] = mask_shape.back() == 1 ? 0 : 1;
  }
  AttentionOperands a;
  place_attention_inputs(p, a, qi, ki, vi, os);
  a.mask = has_mask ? ctx.tensor(3) : -1;
  a.out = ctx.new_value(ir::DType::Float32, out_shape);
  make_attention(ctx, p, a);
  ctx.set_tensor_output(0, a.out);
}

std::string emit_attention(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, attention_params_code(op).str(),
                     "aotc::rt::attention_f32(pool, p, " + attention_operands(e, op) + ");");
}

std::vector<int64_t> to_vector(const int64_t* v, size_t n) { return std::vector<int64_t>(v, v + n); }

}  // namespace

// Folds the batch dims to at most two (the kernel's batch and head). Neighbouring dims
// merge when every operand walks them as one (dense, or broadcast along both).
bool fold_attention_batch(ir::Shape& batch, std::vector<std::vector<int64_t>*> strides) {
  while (batch.size() > 2) {
    bool merged = false;
    for (size_t d = 0; d + 1 < batch.size() && !merged; ++d) {
      bool ok = true;
      for (auto* s : strides)
        ok &= ((*s)[d] == (*s)[d + 1] * batch[d + 1]) || ((*s)[d] == 0 && (*s)[d + 1] == 0);
      if (!ok) continue;
      batch[d] *= batch[d + 1];
      batch.erase(batch.begin() + static_cast<std::ptrdiff_t>(d) + 1);
      for (auto* s : strides) {
        (*s)[d] = (*s)[d + 1];
        s->erase(s->begin() + static_cast<std::ptrdiff_t>(d) + 1);
      }
      merged = true;
    }
    if (!merged) return false;
  }
  while (batch.size() < 2) {  // leading unit dims
    batch.insert(batch.begin(), 1);
    for (auto* s : strides) s->insert(s->begin(), 0);
  }
  return true;
}

std::optional<AttentionRead> attention_read(const StridedView& view) {
  const size_t rank = view.sizes.size();
  if (rank < 2) return std::nullopt;
  for (int64_t stride : view.strides)
    if (stride < 0) return std::nullopt;  // a flipped view
  const int64_t rows = view.sizes[rank - 2], cols = view.sizes[rank - 1];
  if ((cols > 1 && view.strides[rank - 1] != 1) || (rows > 1 && view.strides[rank - 2] < cols))
    return std::nullopt;
  AttentionRead r{view.base, view.offset, {}, rows == 1 ? cols : view.strides[rank - 2]};
  for (size_t d = 0; d + 2 < rank; ++d) r.batch_strides.push_back(view.sizes[d] == 1 ? 0 : view.strides[d]);
  return r;
}

void place_attention_inputs(rt::AttentionParams& p, AttentionOperands& a, const AttentionRead& q,
                            const AttentionRead& k, const AttentionRead& v,
                            const std::vector<int64_t>& out_batch_strides) {
  for (size_t i = 0; i < 2; ++i) {
    p.q_strides[i] = q.batch_strides[i];
    p.k_strides[i] = k.batch_strides[i];
    p.v_strides[i] = v.batch_strides[i];
    p.out_strides[i] = out_batch_strides[i];
  }
  p.q_strides[2] = q.row_stride;
  p.k_strides[2] = k.row_stride;
  p.v_strides[2] = v.row_stride;
  p.out_strides[2] = p.v_head_dim;
  a.q = q.id;
  a.k = k.id;
  a.v = v.id;
  a.q_offset = q.offset;
  a.k_offset = k.offset;
  a.v_offset = v.offset;
}

ir::Op attention_op(const rt::AttentionParams& p, const AttentionOperands& a) {
  ir::Op op;
  op.kind = ir::kind::attention;
  op.inputs = {a.q, a.k, a.v, a.mask};
  op.outputs = {a.out};
  if (p.weights != rt::AttentionWeights::None) op.outputs.push_back(a.probs);
  op.attrs = {{"batch", p.batch},
              {"heads", p.heads},
              {"q_len", p.q_len},
              {"kv_len", p.kv_len},
              {"head_dim", p.head_dim},
              {"v_head_dim", p.v_head_dim},
              {"scale", static_cast<double>(p.scale)},
              {"causal", p.causal},
              {"q_strides", to_vector(p.q_strides, 3)},
              {"k_strides", to_vector(p.k_strides, 3)},
              {"v_strides", to_vector(p.v_strides, 3)},
              {ir::attr::out_strides, to_vector(p.out_strides, 3)},
              {"mask_kind", static_cast<int64_t>(p.mask_kind)},
              {"mask_strides", to_vector(p.mask_strides, 4)},
              {"mask_batch_period", p.mask_batch_period},
              {"weights", static_cast<int64_t>(p.weights)},
              {"q_offset", a.q_offset},
              {"k_offset", a.k_offset},
              {"v_offset", a.v_offset}};
  op.thread_scratch_bytes = rt::attention_thread_scratch_bytes(p);
  return op;
}

ir::Op& make_attention(LowerContext& ctx, const rt::AttentionParams& p, const AttentionOperands& a) {
  ir::Op built = attention_op(p, a);
  ir::Op& op = ctx.add_op(built.kind, built.inputs, built.outputs);
  op.attrs = std::move(built.attrs);
  op.thread_scratch_bytes = built.thread_scratch_bytes;
  return op;
}

rt::AttentionParams attention_params_of(const ir::Op& op) {
  rt::AttentionParams p;
  p.batch = op.i("batch");
  p.heads = op.i("heads");
  p.q_len = op.i("q_len");
  p.kv_len = op.i("kv_len");
  p.head_dim = op.i("head_dim");
  p.v_head_dim = op.i("v_head_dim");
  return p;
}

ParamsCode attention_params_code(const ir::Op& op) {
  ParamsCode p("aotc::rt::AttentionParams");
  p.set("batch", op.i("batch"))
      .set("heads", op.i("heads"))
      .set("q_len", op.i("q_len"))
      .set("kv_len", op.i("kv_len"))
      .set("head_dim", op.i("head_dim"))
      .set("v_head_dim", op.i("v_head_dim"))
      .set_f32("scale", op.f("scale"))
      .set_bool("causal", op.b("causal"))
      .set_array("q_strides", op.ints("q_strides"))
      .set_array("k_strides", op.ints("k_strides"))
      .set_array("v_strides", op.ints("v_strides"))
      .set_array("out_strides", op.ints(ir::attr::out_strides))
      .raw("mask_kind", "static_cast<aotc::rt::AttentionMask>(" + std::to_string(op.i("mask_kind")) + ")")
      .set_array("mask_strides", op.ints("mask_strides"))
      .set("mask_batch_period", op.has("mask_batch_period") ? op.i("mask_batch_period") : 0)
      .raw("weights", "static_cast<aotc::rt::AttentionWeights>(" + std::to_string(op.i("weights")) + ")");
  return p;
}

std::string attention_operands(const EmitContext& e, const ir::Op& op) {
  // q, k and v may start inside their values (the in-projection's output holds all three).
  auto pointer = [&e](int id, int64_t offset) -> std::string {
    if (id < 0) return "nullptr";
    return offset ? "(" + e.in(id) + " + " + std::to_string(offset) + ")" : e.in(id);
  };
  return pointer(op.inputs[0], op.i("q_offset")) + ", " + pointer(op.inputs[1], op.i("k_offset")) + ", " +
         pointer(op.inputs[2], op.i("v_offset")) + ", " + pointer(op.inputs[3], 0) + ", " +
         e.out(op.outputs[0]) + ", " +
         (op.outputs.size() > 1 ? e.out(op.outputs[1]) : std::string("nullptr"));
}

void register_scaled_dot_product_attention(Registry& r) {
  r.add_lowering("aten::scaled_dot_product_attention", lower_sdpa);
  r.add_ir_op(ir::kind::attention, emit_attention);
}

}  // namespace aotc::ops
