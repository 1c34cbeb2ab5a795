// The products that are einsums with a fixed equation (einsum.h): dot, vdot, outer, ger,
// mv, inner, tensordot, trace, bilinear (nn.Bilinear), chain_matmul and
// linalg_multi_dot. Each checks torch's own shape rules first, so that a mismatch names
// the op and both shapes rather than an equation the user never wrote.
#include "einsum.h"
#include "elementwise.h"
#include "strided_view.h"

namespace aotc::ops {
namespace {

// The i-th label of an equation built here: a-z, then A-Z (einsum's 52).
char label(size_t i) { return static_cast<char>(i < 26 ? 'a' + i : 'A' + (i - 26)); }

std::string labels(size_t from, size_t count) {
  std::string s;
  for (size_t i = 0; i < count; ++i) s += label(from + i);
  return s;
}

size_t rank_of(const LowerContext& ctx, size_t i) { return ctx.value(i).shape.size(); }

// dot(self, tensor) and vdot (the same for real tensors): two 1-d tensors of one size.
void lower_dot(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  const ir::Shape a = ctx.value(0).shape, b = ctx.value(1).shape;
  if (a.size() != 1 || b.size() != 1 || a[0] != b[0])
    ctx.fail("needs two 1-d tensors of the same size, got " + ir::shape_str(a) + " and " + ir::shape_str(b));
  ctx.set_tensor_output(0, einsum_of(ctx, "i,i->", {ctx.tensor(0), ctx.tensor(1)}));
}

// outer(self, vec2) and ger: two 1-d tensors.
void lower_outer(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  if (rank_of(ctx, 0) != 1 || rank_of(ctx, 1) != 1)
    ctx.fail("needs two 1-d tensors, got " + ir::shape_str(ctx.value(0).shape) + " and " +
             ir::shape_str(ctx.value(1).shape));
  ctx.set_tensor_output(0, einsum_of(ctx, "i,j->ij", {ctx.tensor(0), ctx.tensor(1)}));
}

// mv(self, vec): a matrix and a vector of its column count.
void lower_mv(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  const ir::Shape a = ctx.value(0).shape, b = ctx.value(1).shape;
  if (a.size() != 2 || b.size() != 1 || a[1] != b[0])
    ctx.fail("needs a 2-d tensor and a 1-d tensor of its column count, got " + ir::shape_str(a) + " and " +
             ir::shape_str(b));
  ctx.set_tensor_output(0, einsum_of(ctx, "ij,j->i", {ctx.tensor(0), ctx.tensor(1)}));
}

// inner(self, other): the sum over both last dims (of one size); a 0-d operand multiplies.
void lower_inner(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  const ir::Shape a = ctx.value(0).shape, b = ctx.value(1).shape;
  if (a.empty() || b.empty()) {
    ctx.set_tensor_output(0, add_binary_op(ctx, rt::BinaryOp::Mul, ctx.tensor(0), ctx.tensor(1)));
    return;
  }
  if (a.back() != b.back())
    ctx.fail("the last dims of " + ir::shape_str(a) + " and " + ir::shape_str(b) + " differ");
  const std::string sa = labels(0, a.size() - 1), sb = labels(a.size(), b.size() - 1);
  ctx.set_tensor_output(0, einsum_of(ctx, sa + "Z," + sb + "Z->" + sa + sb, {ctx.tensor(0), ctx.tensor(1)}));
}

// tensordot(self, other, int[] dims_self, int[] dims_other): pairs of dims of one size
// summed; the result has self's other dims, then other's.
void lower_tensordot(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  const ir::Shape a = ctx.value(0).shape, b = ctx.value(1).shape;
  const std::vector<int64_t> da = ctx.ints_arg(2), db = ctx.ints_arg(3);
  if (da.size() != db.size())
    ctx.fail("dims_self " + ir::shape_str(da) + " and dims_other " + ir::shape_str(db) + " differ in length");
  if (a.size() + b.size() > 52) ctx.fail("more than 52 dims in all");
  std::string sa = labels(0, a.size()), sb = labels(a.size(), b.size());
  std::vector<bool> summed_a(a.size(), false), summed_b(b.size(), false);
  for (size_t i = 0; i < da.size(); ++i) {
    const size_t x = static_cast<size_t>(normalize_dim(ctx, da[i], static_cast<int64_t>(a.size())));
    const size_t y = static_cast<size_t>(normalize_dim(ctx, db[i], static_cast<int64_t>(b.size())));
    if (summed_a[x] || summed_b[y])
      ctx.fail("a dim is listed twice in " + ir::shape_str(da) + " / " + ir::shape_str(db));
    if (a[x] != b[y])
      ctx.fail("dim " + std::to_string(x) + " of " + ir::shape_str(a) + " and dim " + std::to_string(y) +
               " of " + ir::shape_str(b) + " differ in size");
    summed_a[x] = summed_b[y] = true;
    sb[y] = sa[x];
  }
  std::string out;
  for (size_t i = 0; i < a.size(); ++i)
    if (!summed_a[i]) out += sa[i];
  for (size_t i = 0; i < b.size(); ++i)
    if (!summed_b[i]) out += sb[i];
  ctx.set_tensor_output(0, einsum_of(ctx, sa + "," + sb + "->" + out, {ctx.tensor(0), ctx.tensor(1)}));
}

// trace(self): the sum of a matrix's diagonal (rectangular too: the shorter side's).
void lower_trace(LowerContext& ctx) {
  ctx.require_float32({0});
  const ir::Shape a = ctx.value(0).shape;
  if (a.size() != 2) ctx.fail("needs a 2-d tensor, got " + ir::shape_str(a));
  int x = ctx.tensor(0);
  if (a[0] != a[1]) {  // einsum's "ii" needs a square: the leading square block
    const int64_t n = std::min(a[0], a[1]);
    x = materialize(ctx, slice_view(slice_view(view_of(ctx.graph, x), 0, 0, n, 1), 1, 0, n, 1), -1);
  }
  ctx.set_tensor_output(0, einsum_of(ctx, "ii->", {x}));
}

// bilinear(input1, input2, weight, bias=None) (nn.Bilinear): y[..., o] = sum over n, m of
// input1[..., n] weight[o, n, m] input2[..., m], plus bias[o].
void lower_bilinear(LowerContext& ctx) {
  ctx.require_float32({0, 1, 2});
  const ir::Shape x1 = ctx.value(0).shape, x2 = ctx.value(1).shape, w = ctx.value(2).shape;
  if (w.size() != 3 || x1.empty() || x2.empty() || x1.back() != w[1] || x2.back() != w[2])
    ctx.fail("input1 " + ir::shape_str(x1) + ", input2 " + ir::shape_str(x2) + " and weight " +
             ir::shape_str(w) + " do not match (weight [out, in1, in2], inputs [..., in1] and [..., in2])");
  if (ir::Shape(x1.begin(), x1.end() - 1) != ir::Shape(x2.begin(), x2.end() - 1))
    ctx.fail("input1 " + ir::shape_str(x1) + " and input2 " + ir::shape_str(x2) +
             " differ in their leading dims");
  int y = einsum_of(ctx, "...n,onm,...m->...o", {ctx.tensor(0), ctx.tensor(2), ctx.tensor(1)});
  if (!ctx.is_none(3)) {
    ctx.require_float32({3});
    if (ctx.value(3).shape != ir::Shape{w[0]})
      ctx.fail("bias " + ir::shape_str(ctx.value(3).shape) + " is not [" + std::to_string(w[0]) + "]");
    y = add_binary_op(ctx, rt::BinaryOp::Add, y, ctx.tensor(3));
  }
  ctx.set_tensor_output(0, y);
}

// chain_matmul(Tensor[] matrices) and linalg_multi_dot(Tensor[] tensors): a product of
// matrices (multi_dot: the first may be 1-d, a row, and the last 1-d, a column).
void lower_multi_dot(LowerContext& ctx) {
  const Operand& list = ctx.arg(0);
  if (list.kind != Operand::Kind::TensorList || list.tensors.empty())
    ctx.fail("needs a non-empty list of tensors, got " + list.describe());
  const bool multi_dot = ctx.op_name == "aten::linalg_multi_dot";
  const size_t n = list.tensors.size();
  if (n > 50) ctx.fail("more than 50 matrices");
  // Tensor i spans labels i (rows) and i + 1 (columns); a 1-d first has only its columns,
  // a 1-d last only its rows.
  std::string eq, result;
  for (size_t i = 0; i < n; ++i) {
    const ir::Shape& s = ctx.graph.value(list.tensors[i]).shape;
    const bool vector_ok = multi_dot && n > 1 && (i == 0 || i + 1 == n);
    if (s.size() != 2 && !(vector_ok && s.size() == 1))
      ctx.fail("tensor " + std::to_string(i) + " is " + ir::shape_str(s) + "; needs 2-d matrices" +
               (multi_dot ? " (the first and last may be 1-d)" : ""));
    if (i > 0) eq += ",";
    if (s.size() == 2 || i > 0) eq += label(i);
    if (s.size() == 2 || i == 0) eq += label(i + 1);
    if (s.size() == 2 && i == 0) result += label(0);
    if (s.size() == 2 && i + 1 == n) result += label(n);
  }
  ctx.set_tensor_output(0, einsum_of(ctx, eq + "->" + result, list.tensors));
}

}  // namespace

void register_tensor_products(Registry& r) {
  r.add_lowering("aten::dot", lower_dot);
  r.add_lowering("aten::vdot", lower_dot);
  r.add_lowering("aten::outer", lower_outer);
  r.add_lowering("aten::ger", lower_outer);
  r.add_lowering("aten::mv", lower_mv);
  r.add_lowering("aten::inner", lower_inner);
  r.add_lowering("aten::tensordot", lower_tensordot);
  r.add_lowering("aten::trace", lower_trace);
  r.add_lowering("aten::bilinear", lower_bilinear);
  r.add_lowering("aten::chain_matmul", lower_multi_dot);
  r.add_lowering("aten::linalg_multi_dot", lower_multi_dot);
}

}  // namespace aotc::ops
