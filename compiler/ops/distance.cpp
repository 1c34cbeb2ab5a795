// distance.cpp: aten::cdist(x1, x2, p, compute_mode), aten::_pdist_forward / aten::pdist(input,
// p), aten::pairwise_distance(x1, x2, p, eps, keepdim) and aten::dist(self, other, p), composed
// of existing ops as torch computes them: p-norms of differences (statistics.cpp's vector
// norm over a broadcast difference), and for cdist with p = 2 where torch uses a matrix
// product (more than 25 rows on either side, or compute_mode 1) the same product:
// [-2 x1, |x1|^2, 1] [x2, 1, |x2|^2]^T, clamped at 0, square-rooted. The differences take
// P x R x M values (pdist N x N x M): memory the product form does not need.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "elementwise.h"

namespace aotc::ops {
namespace {

int norm_over(LowerContext& ctx, int x, double p, std::vector<int64_t> dims, bool keepdim) {
  // (No dims: every element, which torch writes as dim=None.)
  return lower_as(ctx, "aten::linalg_vector_norm",
                  {Operand::of_tensor(x), Operand::of_double(p),
                   dims.empty() ? Operand::none() : Operand::of_ints(std::move(dims)),
                   Operand::of_bool(keepdim), Operand::none()});
}

int unsqueeze(LowerContext& ctx, int x, int64_t dim) {
  return lower_as(ctx, "aten::unsqueeze", {Operand::of_tensor(x), Operand::of_int(dim)});
}

double p_arg(LowerContext& ctx, size_t i) {
  const double p = ctx.num_inputs() > i && !ctx.is_none(i) ? ctx.double_arg(i) : 2.0;
  if (!(p > 0)) ctx.fail("p must be positive (or inf), got " + std::to_string(p));
  return p;
}

// cdist's matrix-product form for p = 2 (torch's _euclidean_dist).
int euclidean_by_product(LowerContext& ctx, int x1, int x2) {
  const auto squares = [&](int x) {
    return add_reduce_op(ctx, rt::ReduceOp::Sum, add_binary_op(ctx, rt::BinaryOp::Mul, x, x),
                         reduce_shape(ctx, ctx.graph.value(x).shape, {-1}, true));
  };
  const auto ones = [&](int like) { return lower_as(ctx, "aten::ones_like", {Operand::of_tensor(like)}); };
  const int n1 = squares(x1), n2 = squares(x2);
  const int scaled =
      add_binary_op(ctx, rt::BinaryOp::Mul, x1, constant_scalar(ctx.graph, ir::DType::Float32, -2.0));
  const auto cat = [&](std::vector<int> parts) {
    return lower_as(ctx, "aten::cat", {Operand::of_tensors(std::move(parts)), Operand::of_int(-1)});
  };
  const int a = cat({scaled, n1, ones(n1)}), b = cat({x2, ones(n2), n2});
  const int bt =
      lower_as(ctx, "aten::transpose", {Operand::of_tensor(b), Operand::of_int(-2), Operand::of_int(-1)});
  const int product = lower_as(ctx, "aten::matmul", {Operand::of_tensor(a), Operand::of_tensor(bt)});
  return add_unary_op(ctx, rt::UnaryOp::Sqrt, add_unary_op(ctx, rt::UnaryOp::Clamp, product, 0.0, INFINITY));
}

// cdist(x1 [.., P, M], x2 [.., R, M], p=2., compute_mode=None) -> [.., P, R]
void lower_cdist(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  const ir::Shape& a = ctx.value(0).shape;
  const ir::Shape& b = ctx.value(1).shape;
  if (a.size() < 2 || b.size() < 2)
    ctx.fail("x1 and x2 must have at least 2 dims, got " + ir::shape_str(a) + " and " + ir::shape_str(b));
  if (a.back() != b.back())
    ctx.fail("x1 and x2 must have the same last dim (the vectors' size), got " + ir::shape_str(a) + " and " +
             ir::shape_str(b));
  const double p = p_arg(ctx, 2);
  const int64_t mode = ctx.num_inputs() > 3 && !ctx.is_none(3) ? ctx.int_arg(3) : 0;
  if (mode < 0 || mode > 2) ctx.fail("compute_mode must be 0, 1 or 2, got " + std::to_string(mode));
  const int64_t rows1 = a[a.size() - 2], rows2 = b[b.size() - 2];
  const bool product = p == 2.0 && (mode == 1 || (mode == 0 && (rows1 > 25 || rows2 > 25)));
  if (product) {
    ctx.set_tensor_output(0, euclidean_by_product(ctx, ctx.tensor(0), ctx.tensor(1)));
    return;
  }
  const int diff = add_binary_op(ctx, rt::BinaryOp::Sub, unsqueeze(ctx, ctx.tensor(0), -2),
                                 unsqueeze(ctx, ctx.tensor(1), -3));
  ctx.set_tensor_output(0, norm_over(ctx, diff, p, {-1}, false));
}

// pdist(input [N, M], p=2) -> the N (N - 1) / 2 distances of rows i < j, in row-major order.
void lower_pdist(LowerContext& ctx) {
  ctx.require_float32({0});
  const ir::Shape& x = ctx.value(0).shape;
  if (x.size() != 2) ctx.fail("pdist takes a 2-d tensor (N x M), got " + ir::shape_str(x));
  const double p = p_arg(ctx, 1);
  const int64_t n = x[0];
  const int diff = add_binary_op(ctx, rt::BinaryOp::Sub, unsqueeze(ctx, ctx.tensor(0), 1),
                                 unsqueeze(ctx, ctx.tensor(0), 0));
  const int all =
      lower_as(ctx, "aten::reshape",
               {Operand::of_tensor(norm_over(ctx, diff, p, {-1}, false)), Operand::of_ints({n * n})});
  std::vector<int64_t> pairs;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) pairs.push_back(i * n + j);
  std::vector<uint8_t> bytes(pairs.size() * sizeof(int64_t));
  std::memcpy(bytes.data(), pairs.data(), bytes.size());
  const int index = ctx.graph.add_constant(ir::DType::Int64, {static_cast<int64_t>(pairs.size())},
                                           std::move(bytes), "pdist_pairs");
  ctx.set_tensor_output(0,
                        lower_as(ctx, "aten::index_select",
                                 {Operand::of_tensor(all), Operand::of_int(0), Operand::of_tensor(index)}));
}

// pairwise_distance(x1, x2, p=2., eps=1e-6, keepdim=False): the p-norm of x1 - x2 + eps over
// the last dim of the broadcast shape.
void lower_pairwise_distance(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  const double p = p_arg(ctx, 2);
  const double eps = ctx.num_inputs() > 3 && !ctx.is_none(3) ? ctx.double_arg(3) : 1e-6;
  const bool keepdim = ctx.num_inputs() > 4 && ctx.bool_arg(4);
  const int64_t rank = static_cast<int64_t>(std::max(ctx.value(0).shape.size(), ctx.value(1).shape.size()));
  const int diff = add_binary_op(ctx, rt::BinaryOp::Add,
                                 add_binary_op(ctx, rt::BinaryOp::Sub, ctx.tensor(0), ctx.tensor(1)),
                                 constant_scalar(ctx.graph, ir::DType::Float32, eps));
  ctx.set_tensor_output(0, norm_over(ctx, diff, p, {rank ? rank - 1 : 0}, keepdim));
}

// dist(self, other, p=2): the p-norm of the broadcast difference, over every element.
void lower_dist(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  const double p = p_arg(ctx, 2);
  ctx.set_tensor_output(
      0, norm_over(ctx, add_binary_op(ctx, rt::BinaryOp::Sub, ctx.tensor(0), ctx.tensor(1)), p, {}, false));
}

}  // namespace

void register_distance(Registry& r) {
  r.add_lowering("aten::cdist", lower_cdist);
  r.add_lowering("aten::_cdist_forward", lower_cdist);
  r.add_lowering("aten::pdist", lower_pdist);
  r.add_lowering("aten::_pdist_forward", lower_pdist);
  r.add_lowering("aten::pairwise_distance", lower_pairwise_distance);
  r.add_lowering("aten::dist", lower_dist);
}

}  // namespace aotc::ops
