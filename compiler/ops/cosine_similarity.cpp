// aten::cosine_similarity(x1, x2, dim=1, eps=1e-8) as torch computes it: each operand (the
// two broadcast to one shape) divided by its 2-norm along dim clamped to at least eps,
// then the products summed along dim. Composed of IR ops; no kernel of its own.
#include <cmath>

#include "elementwise.h"
#include "strided_view.h"

namespace aotc::ops {
namespace {

// x / max(||x||_2 along dim, eps), the norm kept as a size-1 dim.
int normalized(LowerContext& ctx, int x, int64_t dim, double eps) {
  const ir::Shape shape = ctx.graph.value(x).shape;
  const int squares = add_unary_op(ctx, rt::UnaryOp::Square, x);
  const int sum = add_reduce_op(ctx, rt::ReduceOp::Sum, squares, reduce_shape(ctx, shape, {dim}, true));
  const int norm =
      add_unary_op(ctx, rt::UnaryOp::Clamp, add_unary_op(ctx, rt::UnaryOp::Sqrt, sum), eps, INFINITY);
  return add_binary_op(ctx, rt::BinaryOp::Div, x, norm);
}

// x broadcast to shape (a strided copy), or x itself when it has that shape already.
int broadcast_to(LowerContext& ctx, int x, const ir::Shape& shape) {
  if (ctx.graph.value(x).shape == shape) return x;
  return materialize(ctx, expand_view(view_of(ctx.graph, x), shape), -1);
}

void lower_cosine_similarity(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  const ir::Shape shape = broadcast_shapes(ctx, ctx.value(0).shape, ctx.value(1).shape);
  if (shape.empty()) ctx.fail("needs tensors with at least one dimension");
  const int64_t dim =
      normalize_dim(ctx, ctx.num_inputs() > 2 ? ctx.int_arg(2) : 1, static_cast<int64_t>(shape.size()));
  const double eps = ctx.num_inputs() > 3 ? ctx.double_arg(3) : 1e-8;
  const int a = normalized(ctx, broadcast_to(ctx, ctx.tensor(0), shape), dim, eps);
  const int b = normalized(ctx, broadcast_to(ctx, ctx.tensor(1), shape), dim, eps);
  const int product = add_binary_op(ctx, rt::BinaryOp::Mul, a, b);
  ctx.set_tensor_output(
      0, add_reduce_op(ctx, rt::ReduceOp::Sum, product, reduce_shape(ctx, shape, {dim}, false)));
}

}  // namespace

void register_cosine_similarity(Registry& r) {
  r.add_lowering("aten::cosine_similarity", lower_cosine_similarity);
}

}  // namespace aotc::ops
