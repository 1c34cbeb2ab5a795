// fuse_attention: scaled dot-product attention written out as its pieces becomes one
// "attention" op (the fused kernels of both targets):
//   s = q @ k.transpose(-2, -1)     batched_gemm (q, or s, scaled by scalar constants)
//   s = s + m1 (+ m2 ...)           adds of float32 constants, through reshapes
//   p = softmax(s, -1)
//   o = p @ v                       batched_gemm
// A Swin transformer's window attention is this (relative position bias, and in shifted
// windows the shift mask). Per block it saves the scores' round trips through memory, the
// passes of the masks and the softmax, and the copies of q, k^T and v: the op reads them
// where the qkv projection wrote them, through strides (as aten::scaled_dot_product_attention
// does), and eliminate_dead_ops drops the copies.
//
// The constants become one additive mask over [period, heads, L, S]. Swin's shift mask is
// one per window of an image, the same for every image: over the batch of windows it repeats
// with a period of the windows per image (AttentionParams::mask_batch_period), so the mask
// keeps its size at any batch. A mask computed at run time (a padding mask, as traced Hugging
// Face encoders add one) is read as it is, broadcast through zero strides; it cannot join
// constant ones, and no scale may follow it.
//
// Applies only where every intermediate has one reader and is no graph output, the products
// are plain (dense operands, no bias, no epilogue), the softmax runs over the keys, and q, k
// and v are dense or views with a contiguous last axis.
#include <aotc/rt/kernels.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "../ops/op_helpers.h"
#include "../ops/sequence_ops.h"
#include "../ops/strided_view.h"
#include "passes.h"

namespace aotc::passes {
namespace {

// The one op that reads value id's storage (through any alias), or -1.
int sole_reader(const ir::Graph& g, int id) {
  const std::vector<int> readers = readers_of_storage(g, id);
  return readers.size() == 1 ? readers[0] : -1;
}

bool no_epilogue(const ir::Op& op) {
  return !op.has(ir::attr::activation) &&
         (!op.has(ir::attr::clamp_lo) || op.f(ir::attr::clamp_lo) == -INFINITY) &&
         (!op.has(ir::attr::clamp_hi) || op.f(ir::attr::clamp_hi) == INFINITY);
}

// A batched_gemm of dense float32 operands, no bias, residual or epilogue, and A not
// transposed.
bool plain_batched_gemm(const ir::Graph& g, const ir::Op& op) {
  if (op.kind != ir::kind::batched_gemm || op.inputs.size() < 2 || op.outputs.size() != 1 || !no_epilogue(op))
    return false;
  for (size_t i = 2; i < op.inputs.size(); ++i)
    if (op.inputs[i] >= 0) return false;
  const int64_t m = op.i("m"), n = op.i("n"), k = op.i("k"), batch = op.i("batch");
  const bool tb = op.b("trans_b");
  if (op.b("trans_a") || op.i("lda") != k || op.i("ldb") != (tb ? k : n) || op.i("ldc") != n ||
      op.i("stride_a") != m * k || op.i("stride_b") != k * n || op.i("stride_c") != m * n)
    return false;
  for (int id : {op.inputs[0], op.inputs[1], op.outputs[0]})
    if (g.value(id).dtype != ir::DType::Float32) return false;
  return ir::numel(g.value(op.inputs[0]).shape) == batch * m * k &&
         ir::numel(g.value(op.inputs[1]).shape) == batch * k * n &&
         ir::numel(g.value(op.outputs[0]).shape) == batch * m * n;
}

// The single float of a scalar constant, if id is one.
std::optional<double> scalar_constant(const ir::Graph& g, int id) {
  if (ir::numel(g.value(id).shape) != 1) return std::nullopt;
  const float* f = constant_floats(g, id, 1);
  if (!f || !std::isfinite(*f)) return std::nullopt;
  return *f;
}

// The scalar factor of a binary op that multiplies `x` by a constant (x * c, c * x, x / c),
// with x read whole; `x` is set to the scaled operand.
std::optional<double> scale_factor(const ir::Graph& g, const ir::Op& op, int& x) {
  if (op.kind != ir::kind::binary || op.inputs.size() != 2 || !no_epilogue(op)) return std::nullopt;
  const auto kind = static_cast<rt::BinaryOp>(op.i("op"));
  const int64_t count = ir::numel(g.value(op.outputs[0]).shape);
  for (int side = 0; side < 2; ++side) {
    const int a = op.inputs[static_cast<size_t>(side)], c = op.inputs[static_cast<size_t>(1 - side)];
    if (ir::numel(g.value(a).shape) != count) continue;
    const std::optional<double> value = scalar_constant(g, c);
    if (!value) continue;
    if (kind == rt::BinaryOp::Mul) {
      x = a;
      return *value;
    }
    if (kind == rt::BinaryOp::Div && side == 0 && *value != 0.0) {
      x = a;
      return 1.0 / *value;
    }
  }
  return std::nullopt;
}

// Operand `id` as attention reads it: through the view it materialised where that view's
// strides allow, else densely. transposed: id holds the operand transposed ([..., cols,
// rows], as k^T); then only a view that transposes back fits.
std::optional<ops::AttentionRead> operand_read(const ir::Graph& g, int id, bool transposed) {
  const ir::Shape& shape = g.value(id).shape;
  const size_t rank = shape.size();
  if (rank < 2) return std::nullopt;
  for (ops::StridedView v :
       {ops::view_of(g, id), ops::StridedView{id, 0, shape, ops::dense_strides(shape)}}) {
    if (v.sizes != shape) continue;
    if (transposed) {
      std::swap(v.sizes[rank - 1], v.sizes[rank - 2]);
      std::swap(v.strides[rank - 1], v.strides[rank - 2]);
    }
    if (std::optional<ops::AttentionRead> r = ops::attention_read(v)) return r;
  }
  return std::nullopt;
}

// An additive constant of the scores: its value id and shape, the shape of the add's output
// (a reshape of the scores: the same elements in the same order) and the product of the
// scales applied after it.
struct MaskTerm {
  int constant = -1;
  ir::Shape shape, at;
  double factor = 1.0;
};

// The element of a constant of shape c that position e of `at` (row-major) reads, with
// right-aligned broadcasting.
int64_t broadcast_index(const ir::Shape& at, const ir::Shape& c, int64_t e) {
  int64_t index = 0, c_stride = 1;
  for (size_t back = 0; back < at.size(); ++back) {
    const int64_t i = e % at[at.size() - 1 - back];
    e /= at[at.size() - 1 - back];
    if (back >= c.size()) continue;
    const int64_t size = c[c.size() - 1 - back];
    if (size != 1) index += i * c_stride;
    c_stride *= size;
  }
  return index;
}

// After how many of the scores' elements the masks' sum repeats: a dim of a constant that
// is not broadcast repeats after its extent (its size times its stride) in the add's output,
// and the sum after the least common multiple of those.
int64_t mask_repeat(const std::vector<MaskTerm>& masks) {
  int64_t repeat = 1;
  for (const MaskTerm& m : masks) {
    int64_t extent = 1;
    for (size_t back = 0; back < m.at.size(); ++back) {
      extent *= m.at[m.at.size() - 1 - back];
      if (back < m.shape.size() && m.shape[m.shape.size() - 1 - back] != 1) repeat = std::lcm(repeat, extent);
    }
  }
  return repeat;
}

constexpr int64_t kMaxMaskBytes = int64_t{64} << 20;

// Fuses the attention whose softmax is op si; false (and the graph unchanged) where the
// pattern does not hold.
bool fuse_at(ir::Graph& g, size_t si) {
  const ir::Op& sm = g.ops[si];
  if (sm.kind != ir::kind::softmax || sm.b("log") || sm.i("inner") != 1) return false;
  const int probs = sm.outputs[0];
  if (g.value(probs).storage != ir::Storage::Arena) return false;
  const int pv_index = sole_reader(g, probs);
  if (pv_index < 0) return false;
  const ir::Op& pv = g.ops[static_cast<size_t>(pv_index)];
  if (!plain_batched_gemm(g, pv) || pv.b("trans_b") || pv.f("alpha") != 1.0 ||
      g.storage_root(pv.inputs[0]) != probs || g.root_byte_offset(pv.inputs[0]) != 0 ||
      g.storage_root(pv.inputs[1]) == probs)
    return false;

  // Back from the softmax's input to the scores' product: adds of constants and scales.
  std::vector<int> gone = {static_cast<int>(si)};
  std::vector<MaskTerm> masks;
  int run_mask = -1;  // a mask computed at run time (a padding mask): the op reads it as it is
  ir::Shape run_mask_at;
  double scale = 1.0;
  int cur = sm.inputs[0], qk_index = -1;
  const int64_t count = ir::numel(g.value(cur).shape);
  if (count <= 0) return false;
  while (qk_index < 0) {
    const int root = g.storage_root(cur);
    const ir::Value& rv = g.value(root);
    if (rv.storage != ir::Storage::Arena || rv.dtype != ir::DType::Float32 || ir::numel(rv.shape) != count ||
        g.root_byte_offset(cur) != 0 || sole_reader(g, root) < 0)
      return false;
    const int p = producer_of(g, root);
    if (p < 0 || g.ops[static_cast<size_t>(p)].outputs.size() != 1 ||
        g.ops[static_cast<size_t>(p)].outputs[0] != root)
      return false;
    const ir::Op& op = g.ops[static_cast<size_t>(p)];
    gone.push_back(p);
    if (op.kind == ir::kind::batched_gemm) {
      qk_index = p;
    } else if (const std::optional<double> f = scale_factor(g, op, cur)) {
      scale *= *f;  // it scales the product and the masks before it, not those met so far
    } else if (op.kind == ir::kind::binary && op.inputs.size() == 2 && no_epilogue(op) &&
               static_cast<rt::BinaryOp>(op.i("op")) == rt::BinaryOp::Add && op.f("alpha") == 1.0) {
      const int a = op.inputs[0], b = op.inputs[1];
      if (!g.is_constant(a) && !g.is_constant(b)) {
        // One mask computed at run time, added last and unscaled (the op adds it as it is),
        // and no constant beside it (they would need an add of their own).
        const int x = ir::numel(g.value(a).shape) == count ? a : b, m = x == a ? b : a;
        if (run_mask >= 0 || !masks.empty() || scale != 1.0 || ir::numel(g.value(x).shape) != count ||
            g.value(m).dtype != ir::DType::Float32)
          return false;
        run_mask = m;
        run_mask_at = rv.shape;
        cur = x;
        continue;
      }
      const int c = g.is_constant(a) ? a : b, x = c == a ? b : a;
      if (run_mask >= 0 || g.is_constant(x) || ir::numel(g.value(x).shape) != count ||
          !constant_floats(g, c, ir::numel(g.value(c).shape)))
        return false;
      masks.push_back({c, g.value(c).shape, rv.shape, scale});
      cur = x;
    } else {
      return false;
    }
  }
  const ir::Op& qk = g.ops[static_cast<size_t>(qk_index)];
  if (!plain_batched_gemm(g, qk) || qk.f("alpha") == 0.0) return false;
  scale *= qk.f("alpha");
  const int64_t L = qk.i("m"), S = qk.i("n"), E = qk.i("k"), Ev = pv.i("n");
  if (sm.i("axis") != S || pv.i("m") != L || pv.i("k") != S || pv.i("batch") != qk.i("batch") || L <= 0 ||
      S <= 0 || E <= 0 || Ev <= 0)
    return false;
  int q = qk.inputs[0];
  {
    const int root = g.storage_root(q);
    const int p = producer_of(g, root);
    int x = q;
    if (p >= 0 && g.value(root).storage == ir::Storage::Arena && sole_reader(g, root) == qk_index &&
        g.root_byte_offset(q) == 0 && ir::numel(g.value(root).shape) == ir::numel(g.value(q).shape))
      if (const std::optional<double> f = scale_factor(g, g.ops[static_cast<size_t>(p)], x)) {
        scale *= *f;
        gone.push_back(p);
        q = x;
      }
  }

  // Batch dims: the scores' leading dims, the same in q, k, v and the output, each of which
  // ends in the matrix the product sees.
  const ir::Shape& scores = g.value(qk.outputs[0]).shape;
  if (scores.size() < 3) return false;
  const ir::Shape batch(scores.begin(), scores.end() - 2);
  const int k_stored = qk.inputs[1], v = pv.inputs[1], out = pv.outputs[0];
  const bool k_rows = qk.b("trans_b");  // k stored as [S, E] rows, else as k^T [E, S]
  const std::pair<int, std::pair<int64_t, int64_t>> matrices[] = {
      {qk.outputs[0], {L, S}},
      {q, {L, E}},
      {k_stored, k_rows ? std::pair{S, E} : std::pair{E, S}},
      {v, {S, Ev}},
      {out, {L, Ev}}};
  for (const auto& [id, rows_cols] : matrices) {
    const ir::Shape& s = g.value(id).shape;
    if (s.size() != scores.size() || !std::equal(batch.begin(), batch.end(), s.begin()) ||
        s[s.size() - 2] != rows_cols.first || s.back() != rows_cols.second)
      return false;
  }
  std::optional<ops::AttentionRead> qr = operand_read(g, q, false);
  std::optional<ops::AttentionRead> kr = operand_read(g, k_stored, !k_rows);
  std::optional<ops::AttentionRead> vr = operand_read(g, v, false);
  if (!qr || !kr || !vr) return false;
  std::vector<int64_t>& qs = qr->batch_strides;
  std::vector<int64_t>& ks = kr->batch_strides;
  std::vector<int64_t>& vs = vr->batch_strides;
  std::vector<int64_t> os = ops::dense_strides(g.value(out).shape);
  os.resize(batch.size());
  // A run-time mask broadcast over the scores (the add's output in the scores' own shape).
  std::vector<int64_t> ms(batch.size(), 0), mask_rows_cols(2, 0);
  if (run_mask >= 0) {
    if (run_mask_at != scores) return false;
    std::vector<int64_t> strides = ops::broadcast_strides(g.value(run_mask).shape, scores);
    mask_rows_cols = {strides[strides.size() - 2], strides.back()};
    strides.resize(batch.size());
    ms = strides;
  }
  ir::Shape folded = batch;
  if (batch.size() == 1) {
    // One batch dim (bmm-style [windows * heads, L, S]): the op's batch, so that a mask that
    // repeats over it keeps its period rather than becoming one mask over all of it. The one
    // head's stride is never stepped; it is the batch's, so that CUDA's three-launch path
    // still sees (batch, head) as one run of matrices (one strided-batched GEMM, not one a
    // batch).
    folded.push_back(1);
    for (std::vector<int64_t>* s : {&qs, &ks, &vs, &os}) s->push_back(s->front());
    ms.push_back(0);
  } else if (!ops::fold_attention_batch(folded, {&qs, &ks, &vs, &os, &ms})) {
    return false;
  }

  rt::AttentionParams p;
  p.batch = folded[0];
  p.heads = folded[1];
  p.q_len = L;
  p.kv_len = S;
  p.head_dim = E;
  p.v_head_dim = Ev;
  p.scale = static_cast<float>(scale);
  ops::AttentionOperands a;
  ops::place_attention_inputs(p, a, *qr, *kr, *vr, os);
  a.out = out;
  if (run_mask >= 0) {
    a.mask = run_mask;
    p.mask_kind = rt::AttentionMask::Additive;
    p.mask_strides[0] = ms[0];
    p.mask_strides[1] = ms[1];
    p.mask_strides[2] = mask_rows_cols[0];
    p.mask_strides[3] = mask_rows_cols[1];
  }
  if (!masks.empty()) {
    // The masks' sum over [period, heads, L, S], period the batches after which it repeats
    // (it divides the batch: the repeat divides the scores' size). It stays the period even
    // where it is the whole batch, so that a --dim build, whose integer attributes follow
    // the sizes, sees the same period at every batch.
    const int64_t per_batch = p.heads * L * S;
    const int64_t repeat = mask_repeat(masks);
    const int64_t period = repeat / std::gcd(repeat, per_batch);
    if (period * per_batch * static_cast<int64_t>(sizeof(float)) > kMaxMaskBytes) return false;
    std::vector<int> sources;
    std::string recipe = "attention mask period=" + std::to_string(period) + " of " + ir::shape_str(scores);
    for (const MaskTerm& m : masks) {
      sources.push_back(m.constant);
      char factor[32];
      std::snprintf(factor, sizeof factor, "%.17g", m.factor);
      recipe += std::string(" + ") + factor + " * " + ir::shape_str(m.shape) + " at " + ir::shape_str(m.at);
    }
    a.mask = add_derived_f32_constant(g, recipe, sources, {period, p.heads, L, S}, [&] {
      std::vector<float> sum(static_cast<size_t>(period * per_batch), 0.0f);
      for (const MaskTerm& m : masks) {
        const float* c = constant_floats(g, m.constant, ir::numel(m.shape));
        for (int64_t e = 0; e < period * per_batch; ++e)
          sum[static_cast<size_t>(e)] += static_cast<float>(m.factor) * c[broadcast_index(m.at, m.shape, e)];
      }
      return sum;
    });
    p.mask_kind = rt::AttentionMask::Additive;
    p.mask_strides[0] = period == 1 ? 0 : per_batch;
    p.mask_strides[1] = L * S;
    p.mask_strides[2] = S;
    p.mask_strides[3] = 1;
    p.mask_batch_period = period > 1 ? period : 0;
  }

  ir::Op fused = ops::attention_op(p, a);
  fused.loc = g.ops[static_cast<size_t>(pv_index)].loc;
  g.ops[static_cast<size_t>(pv_index)] = std::move(fused);
  std::sort(gone.begin(), gone.end());
  for (size_t i = gone.size(); i-- > 0;) g.ops.erase(g.ops.begin() + gone[i]);
  return true;
}

}  // namespace

void fuse_attention(ir::Graph& graph) {
  for (size_t i = 0; i < graph.ops.size();) i = fuse_at(graph, i) ? 0 : i + 1;
}

}  // namespace aotc::passes
