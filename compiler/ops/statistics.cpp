// var, std, var_mean, std_mean (unbiased / correction), norm and linalg_vector_norm
// (p = 1, 2, inf, -inf and other p > 0), linalg_matrix_norm and linalg_norm (the matrix norms
// without singular values), logsumexp: compositions of the "reduce", "binary"
// and "unary" IR ops (float32).
//   var = sum((x - mean(x, keepdim))^2) / max(0, N - correction)   (two passes: accurate)
//   logsumexp = log(sum(exp(x - m))) + m, m = amax(x, keepdim) with infinities replaced by 0
#include <cmath>
#include <string>

#include "elementwise.h"

namespace aotc::ops {
namespace {

using rt::BinaryOp;
using rt::ReduceOp;
using rt::UnaryOp;

int float_input(LowerContext& ctx) {
  if (!is_float(ctx.value(0).dtype)) ctx.fail("this reduction needs a float32 tensor");
  return ctx.tensor(0);
}

struct VarArgs {
  std::vector<int64_t> dims;
  double correction = 1.0;
  bool keepdim = false;
};

//   var(self, bool unbiased=True)
//   var.dim(self, int[1]? dim, bool unbiased=True, bool keepdim=False)
//   var.correction(self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False)
VarArgs var_args(const LowerContext& ctx) {
  VarArgs v;
  const size_t n = ctx.num_inputs();
  if (n == 2) {
    v.correction = ctx.bool_arg(1) ? 1.0 : 0.0;
    return v;
  }
  if (n > 1) v.dims = dims_arg(ctx, 1);
  if (n > 2 && !ctx.is_none(2)) {
    v.correction = ctx.arg(2).kind == Operand::Kind::Bool ? (ctx.bool_arg(2) ? 1.0 : 0.0) : ctx.double_arg(2);
  }
  if (n > 3) v.keepdim = ctx.bool_arg(3);
  return v;
}

// Returns {variance (or std), mean} in the requested shape.
std::pair<int, int> variance(LowerContext& ctx, bool take_sqrt) {
  const int x = float_input(ctx);
  const VarArgs v = var_args(ctx);
  const ReduceShape kept = reduce_shape(ctx, ctx.value(0).shape, v.dims, true);
  const ReduceShape rs = reduce_shape(ctx, ctx.value(0).shape, v.dims, v.keepdim);
  const int mean = add_reduce_op(ctx, ReduceOp::Mean, x, kept);
  const int diff = add_binary_op(ctx, BinaryOp::Sub, x, mean);
  const int sum = add_reduce_op(ctx, ReduceOp::Sum, add_binary_op(ctx, BinaryOp::Mul, diff, diff), rs);
  const double denom = std::max(0.0, static_cast<double>(rs.count) - v.correction);
  int out = add_unary_op(ctx, UnaryOp::ScaleShift, sum, denom > 0 ? 1.0 / denom : INFINITY, 0.0);
  if (take_sqrt) out = add_unary_op(ctx, UnaryOp::Sqrt, out);
  return {out, ctx.graph.add_alias(mean, rs.out)};
}

LowerFn var_std(bool take_sqrt, bool with_mean) {
  return [take_sqrt, with_mean](LowerContext& ctx) {
    const auto [out, mean] = variance(ctx, take_sqrt);
    ctx.set_tensor_output(0, out);
    if (with_mean) ctx.set_tensor_output(1, mean);
  };
}

// The p-norm of x over rs.
int p_norm(LowerContext& ctx, int x, double p, const ReduceShape& rs) {
  if (p == 2.0) {
    return add_unary_op(ctx, UnaryOp::Sqrt,
                        add_reduce_op(ctx, ReduceOp::Sum, add_binary_op(ctx, BinaryOp::Mul, x, x), rs));
  }
  const int abs = add_unary_op(ctx, UnaryOp::Abs, x);
  if (p == 1.0) return add_reduce_op(ctx, ReduceOp::Sum, abs, rs);
  if (std::isinf(p)) return add_reduce_op(ctx, p > 0 ? ReduceOp::Max : ReduceOp::Min, abs, rs);
  if (!(p > 0)) ctx.fail("norm with p = " + std::to_string(p) + " is not supported (p > 0 or +-inf are)");
  const int sum = add_reduce_op(ctx, ReduceOp::Sum, add_unary_op(ctx, UnaryOp::PowScalar, abs, p), rs);
  return add_unary_op(ctx, UnaryOp::PowScalar, sum, 1.0 / p);
}

//   norm.Scalar(self, Scalar p=2)
//   norm.ScalarOpt_dim(self, Scalar? p, int[1] dim, bool keepdim=False)
//   norm.ScalarOpt_dim_dtype(self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType dtype)
//   linalg_vector_norm(self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)
//   frobenius_norm.dim(self, int[1] dim, bool keepdim=False)
void lower_norm(LowerContext& ctx) {
  const int x = float_input(ctx);
  const bool frobenius = ctx.op_name == "aten::frobenius_norm";
  const size_t base = frobenius ? 0 : 1;
  const double p = frobenius || ctx.num_inputs() < 2 || ctx.is_none(1) ? 2.0 : ctx.double_arg(1);
  const std::vector<int64_t> dims =
      ctx.num_inputs() > base + 1 ? dims_arg(ctx, base + 1) : std::vector<int64_t>{};
  const bool keepdim = ctx.num_inputs() > base + 2 && ctx.bool_arg(base + 2);
  if (ctx.num_inputs() > base + 3 && !ctx.is_none(base + 3) &&
      dtype_from_torch(ctx, ctx.int_arg(base + 3)) != ir::DType::Float32)
    ctx.fail("norm with a dtype other than float32 is not supported");
  ctx.set_tensor_output(0, p_norm(ctx, x, p, reduce_shape(ctx, ctx.value(0).shape, dims, keepdim)));
}

// The matrix norm of x over dims d0, d1 (rows, columns): "fro" (the 2-norm of the entries),
// 1 / -1 (the largest / smallest column sum of |x|), inf / -inf (row sums). 2, -2 and "nuc"
// need singular values: refused.
int matrix_norm(LowerContext& ctx, int x, const std::string& ord, double p, int64_t d0, int64_t d1,
                bool keepdim) {
  const ir::Shape& shape = ctx.graph.value(x).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 2) ctx.fail("a matrix norm needs at least 2 dims, got " + ir::shape_str(shape));
  d0 = normalize_dim(ctx, d0, rank);
  d1 = normalize_dim(ctx, d1, rank);
  if (d0 == d1) ctx.fail("a matrix norm needs two different dims, got " + std::to_string(d0) + " twice");
  const ReduceShape both = reduce_shape(ctx, shape, {d0, d1}, keepdim);
  if (ord == "fro") return p_norm(ctx, x, 2.0, both);
  if (!ord.empty() || !(std::fabs(p) == 1.0 || std::isinf(p)))
    ctx.fail(
        "matrix norm ord=" + (ord.empty() ? std::to_string(p) : "'" + ord + "'") +
        " needs singular values, which aotc does not compute ('fro', 1, -1, inf and -inf are supported)");
  // 1: sum over the rows (d0), extremum over the columns (d1); inf: the other way round.
  const int64_t summed = std::isinf(p) ? d1 : d0, extreme = std::isinf(p) ? d0 : d1;
  const int sums = add_reduce_op(ctx, ReduceOp::Sum, add_unary_op(ctx, UnaryOp::Abs, x),
                                 reduce_shape(ctx, shape, {summed}, true));
  const int kept = add_reduce_op(ctx, p > 0 ? ReduceOp::Max : ReduceOp::Min, sums,
                                 reduce_shape(ctx, ctx.graph.value(sums).shape, {extreme}, true));
  return ctx.graph.add_alias(kept, both.out);
}

//   linalg_matrix_norm(self, Scalar ord, int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None)
//   linalg_matrix_norm.str_ord(self, str ord='fro', int[] dim=[-2,-1], bool keepdim=False, *, dtype=None)
void lower_matrix_norm(LowerContext& ctx) {
  const int x = float_input(ctx);
  const bool named = ctx.arg(1).kind == Operand::Kind::String;
  const std::vector<int64_t> dims = ctx.num_inputs() > 2 ? ctx.ints_arg(2) : std::vector<int64_t>{-2, -1};
  if (dims.size() != 2) ctx.fail("a matrix norm takes 2 dims, got " + std::to_string(dims.size()));
  const bool keepdim = ctx.num_inputs() > 3 && ctx.bool_arg(3);
  ctx.set_tensor_output(0, matrix_norm(ctx, x, named ? ctx.arg(1).s : "", named ? 0.0 : ctx.double_arg(1),
                                       dims[0], dims[1], keepdim));
}

//   linalg_norm(self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)
//   linalg_norm.ord_str(self, str ord, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)
// A vector norm over one dim (or all of a 1-d tensor, or all with neither ord nor dim), a
// matrix norm over two (or of a 2-d tensor, or with a named ord), as torch.linalg.norm.
void lower_linalg_norm(LowerContext& ctx) {
  const int x = float_input(ctx);
  const ir::Shape& shape = ctx.value(0).shape;
  const bool named = ctx.arg(1).kind == Operand::Kind::String;
  const bool no_ord = ctx.is_none(1);
  std::vector<int64_t> dims = ctx.num_inputs() > 2 ? dims_arg(ctx, 2) : std::vector<int64_t>{};
  const bool keepdim = ctx.num_inputs() > 3 && ctx.bool_arg(3);
  if (dims.empty() && !no_ord) {
    if (shape.size() == 2 || named)
      dims = {-2, -1};
    else if (shape.size() != 1)
      ctx.fail("linalg.norm with an ord and no dim takes a 1-d or 2-d tensor, got " + ir::shape_str(shape));
  }
  if (dims.size() > 2) ctx.fail("linalg.norm takes at most 2 dims, got " + std::to_string(dims.size()));
  if (dims.size() == 2) {
    const std::string ord = named ? ctx.arg(1).s : no_ord ? "fro" : "";
    ctx.set_tensor_output(
        0, matrix_norm(ctx, x, ord, named || no_ord ? 0.0 : ctx.double_arg(1), dims[0], dims[1], keepdim));
    return;
  }
  if (named) ctx.fail("ord='" + ctx.arg(1).s + "' is a matrix norm: it needs 2 dims");
  ctx.set_tensor_output(
      0, p_norm(ctx, x, no_ord ? 2.0 : ctx.double_arg(1), reduce_shape(ctx, shape, dims, keepdim)));
}

// logsumexp(self, int[1] dim, bool keepdim=False)
void lower_logsumexp(LowerContext& ctx) {
  const int x = cast_to(ctx, ctx.tensor(0), ir::DType::Float32);
  const std::vector<int64_t> dims = dims_arg(ctx, 1);
  const bool keepdim = ctx.num_inputs() > 2 && ctx.bool_arg(2);
  const ReduceShape kept = reduce_shape(ctx, ctx.value(0).shape, dims, true);
  const ReduceShape rs = reduce_shape(ctx, ctx.value(0).shape, dims, keepdim);
  const int m = add_unary_op(ctx, UnaryOp::ZeroNonFinite, add_reduce_op(ctx, ReduceOp::Max, x, kept));
  const int e = add_unary_op(ctx, UnaryOp::Exp, add_binary_op(ctx, BinaryOp::Sub, x, m));
  const int log_sum = add_unary_op(ctx, UnaryOp::Log, add_reduce_op(ctx, ReduceOp::Sum, e, rs));
  ctx.set_tensor_output(0, add_binary_op(ctx, BinaryOp::Add, log_sum, ctx.graph.add_alias(m, rs.out)));
}

}  // namespace

void register_statistics(Registry& r) {
  r.add_lowering("aten::var", var_std(false, false));
  r.add_lowering("aten::std", var_std(true, false));
  r.add_lowering("aten::var_mean", var_std(false, true));
  r.add_lowering("aten::std_mean", var_std(true, true));
  r.add_lowering("aten::norm", lower_norm);
  r.add_lowering("aten::linalg_vector_norm", lower_norm);
  r.add_lowering("aten::frobenius_norm", lower_norm);
  r.add_lowering("aten::linalg_matrix_norm", lower_matrix_norm);
  r.add_lowering("aten::linalg_norm", lower_linalg_norm);
  r.add_lowering("aten::logsumexp", lower_logsumexp);
}

}  // namespace aotc::ops
