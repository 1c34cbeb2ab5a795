// order_statistics.cpp: aten::median and aten::nanmedian (of every value, or along a dim
// with their indices), aten::kthvalue, aten::quantile and aten::nanquantile (q a number or
// a tensor of at most one dim; interpolation linear, lower, higher, midpoint or nearest):
// values picked at a position per line from the lines sorted along the dim (sort.cpp: NaN
// after every number, equal values in index order), composed of the sort, reduce, pointwise
// and gather ops. As torch: median gives the lower of the two middle values, NaN and the
// index of its first NaN for a line holding one; nanmedian the lower median of the other
// values (NaN where there are none); kthvalue the k-th smallest, NaN the largest; quantile
// NaN for a line holding one, nanquantile the quantile of the other values; the position
// q (count - 1) in float32, its two neighbours interpolated by torch's lerp. A q read at
// run time outside [0, 1] gives NaN (torch raises; a number or a constant is checked here).
#include <cmath>

#include "elementwise.h"

namespace aotc::ops {
namespace {

int f32_constant(LowerContext& ctx, double v) { return constant_scalar(ctx.graph, ir::DType::Float32, v); }

// The lines of x along a dim: x itself, or flattened to one line (every value).
struct Lines {
  int x = -1;
  int64_t dim = 0, n = 0;
  ir::Shape kept;  // x's shape with dim of size 1
};

Lines lines_of(LowerContext& ctx, int x, bool every_value, int64_t dim_arg) {
  Lines l;
  const ir::Value& v = ctx.graph.value(x);
  if (every_value || v.shape.empty()) {
    l.x = ctx.graph.add_alias(x, {ir::numel(v.shape)});
    l.dim = 0;
  } else {
    l.x = x;
    l.dim = normalize_dim(ctx, dim_arg, static_cast<int64_t>(v.shape.size()));
  }
  l.kept = ctx.graph.value(l.x).shape;
  l.n = l.kept[static_cast<size_t>(l.dim)];
  l.kept[static_cast<size_t>(l.dim)] = 1;
  if (l.n == 0) ctx.fail("the dim it reduces is empty (" + ir::shape_str(v.shape) + ")");
  return l;
}

// The values, and the int64 indices, of the lines sorted ascending.
std::vector<int> sorted(LowerContext& ctx, const Lines& l) {
  return lower_as_all(ctx, "aten::sort",
                      {Operand::of_tensor(l.x), Operand::of_int(l.dim), Operand::of_bool(false)}, 2);
}

// How many values of each line are not NaN, as float32 in the shape l.kept.
int count_numbers(LowerContext& ctx, const Lines& l) {
  const int nan = add_binary_op(ctx, rt::BinaryOp::Ne, l.x, l.x);
  const int present = add_where_op(ctx, nan, f32_constant(ctx, 0.0), f32_constant(ctx, 1.0));
  return add_reduce_op(ctx, rt::ReduceOp::Sum, present,
                       reduce_shape(ctx, ctx.graph.value(l.x).shape, {l.dim}, true));
}

// src's values at the float32 positions `at` along dim (integral, in range), broadcast as
// take_along_dim does.
int pick(LowerContext& ctx, int src, int at, int64_t dim) {
  return lower_as(ctx, "aten::take_along_dim",
                  {Operand::of_tensor(src), Operand::of_tensor(cast_to(ctx, at, ir::DType::Int64)),
                   Operand::of_int(dim)});
}

// v (of shape l.kept, one value a line) with the dim dropped unless keepdim; of every value,
// or of a 0-d x: 0-d.
int finish(LowerContext& ctx, int v, const Lines& l, bool every_value, bool keepdim) {
  if (every_value || ctx.value(0).shape.empty()) return ctx.graph.add_alias(v, {});
  if (keepdim) return v;
  ir::Shape out = l.kept;
  out.erase(out.begin() + l.dim);
  return ctx.graph.add_alias(v, out);
}

// Outputs 0 and 1 (not of every value): the sorted values and their indices at the same
// position `at` of every line.
void set_at(LowerContext& ctx, const std::vector<int>& s, const Lines& l, int64_t at, bool every_value,
            bool keepdim) {
  for (size_t i = 0; i < (every_value ? 1u : 2u); ++i) {
    const int v = lower_as(ctx, "aten::select",
                           {Operand::of_tensor(s[i]), Operand::of_int(l.dim), Operand::of_int(at)});
    ctx.set_tensor_output(i, finish(ctx, ctx.graph.add_alias(v, l.kept), l, every_value, keepdim));
  }
}

// median / nanmedian: (self) or (self, dim, keepdim=False) with the indices.
LowerFn median_of(bool ignore_nan) {
  return [ignore_nan](LowerContext& ctx) {
    const bool every_value = ctx.num_inputs() < 2;
    const Lines l = lines_of(ctx, ctx.tensor(0), every_value, every_value ? 0 : ctx.int_arg(1));
    const bool keepdim = !every_value && ctx.num_inputs() > 2 && ctx.bool_arg(2);
    const std::vector<int> s = sorted(ctx, l);
    const int64_t middle = (l.n - 1) / 2;
    if (!is_float(ctx.value(0).dtype)) return set_at(ctx, s, l, middle, every_value, keepdim);  // no NaN
    const int count = count_numbers(ctx, l);
    int at;
    if (ignore_nan) {  // the lower middle of the numbers; 0 where there are none
      const int less = add_binary_op(ctx, rt::BinaryOp::Sub, count, f32_constant(ctx, 1.0));
      const int half = add_unary_op(ctx, rt::UnaryOp::Floor,
                                    add_binary_op(ctx, rt::BinaryOp::Mul, less, f32_constant(ctx, 0.5)));
      at = add_binary_op(ctx, rt::BinaryOp::Maximum, half, f32_constant(ctx, 0.0));
    } else {  // the first NaN (after the numbers) where the line has one
      const int has_nan =
          add_binary_op(ctx, rt::BinaryOp::Lt, count, f32_constant(ctx, static_cast<double>(l.n)));
      at = add_where_op(ctx, has_nan, count, f32_constant(ctx, static_cast<double>(middle)));
    }
    ctx.set_tensor_output(0, finish(ctx, pick(ctx, s[0], at, l.dim), l, every_value, keepdim));
    if (!every_value) ctx.set_tensor_output(1, finish(ctx, pick(ctx, s[1], at, l.dim), l, false, keepdim));
  };
}

// kthvalue(self, k, dim=-1, keepdim=False): the k-th smallest (1-based) and its index.
void lower_kthvalue(LowerContext& ctx) {
  const int64_t k = ctx.int_arg(1);
  const Lines l = lines_of(ctx, ctx.tensor(0), false, ctx.num_inputs() > 2 ? ctx.int_arg(2) : -1);
  if (k < 1 || k > l.n)
    ctx.fail("k = " + std::to_string(k) + " is out of range: the dim has " + std::to_string(l.n) + " values");
  set_at(ctx, sorted(ctx, l), l, k - 1, false, ctx.num_inputs() > 3 && ctx.bool_arg(3));
}

enum class Interpolation { Linear, Lower, Higher, Midpoint, Nearest };

Interpolation interpolation_arg(const LowerContext& ctx, size_t i) {
  if (ctx.is_none(i)) return Interpolation::Linear;
  const std::string& s = ctx.arg(i).s;
  if (s == "linear") return Interpolation::Linear;
  if (s == "lower") return Interpolation::Lower;
  if (s == "higher") return Interpolation::Higher;
  if (s == "midpoint") return Interpolation::Midpoint;
  if (s == "nearest") return Interpolation::Nearest;
  ctx.fail("interpolation must be linear, lower, higher, midpoint or nearest, got \"" + s + "\"");
}

void check_q(const LowerContext& ctx, double q) {
  if (!(q >= 0.0 && q <= 1.0)) ctx.fail("q must be in [0, 1], got " + std::to_string(q));
}

// torch's lerp: a + w (b - a) for |w| < 0.5, b - (b - a) (1 - w) otherwise.
int lerp(LowerContext& ctx, int a, int b, int w) {
  const int diff = add_binary_op(ctx, rt::BinaryOp::Sub, b, a);
  const int from_a = add_binary_op(ctx, rt::BinaryOp::Add, a, add_binary_op(ctx, rt::BinaryOp::Mul, w, diff));
  const int from_b =
      add_binary_op(ctx, rt::BinaryOp::Sub, b,
                    add_binary_op(ctx, rt::BinaryOp::Mul, diff,
                                  add_binary_op(ctx, rt::BinaryOp::Sub, f32_constant(ctx, 1.0), w)));
  const int near_a =
      add_binary_op(ctx, rt::BinaryOp::Lt, add_unary_op(ctx, rt::UnaryOp::Abs, w), f32_constant(ctx, 0.5));
  return add_where_op(ctx, near_a, from_a, from_b);
}

// quantile / nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear")
LowerFn quantile_of(bool ignore_nan) {
  return [ignore_nan](LowerContext& ctx) {
    const ir::Value& x = ctx.value(0);
    if (x.dtype != ir::DType::Float32)
      ctx.fail(std::string("needs a float32 input, got ") + ir::dtype_name(x.dtype));
    // q: a number, or a float32 tensor of at most one dim (a leading dim of the result).
    int q;
    bool leading = false;
    int64_t count_q = 1;
    bool checked = true;  // every q known when compiling, and checked there
    if (ctx.arg(1).is_number()) {
      check_q(ctx, ctx.double_arg(1));
      q = f32_constant(ctx, ctx.double_arg(1));
    } else {
      const ir::Value& qv = ctx.value(1);
      if (qv.dtype != ir::DType::Float32 || qv.shape.size() > 1)
        ctx.fail("q must be a number or a float32 tensor of at most one dim, got " +
                 std::string(ir::dtype_name(qv.dtype)) + ir::shape_str(qv.shape));
      checked = qv.storage == ir::Storage::Constant && ctx.graph.storage_root(qv.id) == qv.id;
      if (checked)
        for (int64_t i = 0; i < ir::numel(qv.shape); ++i) check_q(ctx, ctx.graph.constant_of(qv.id).f32()[i]);
      leading = qv.shape.size() == 1;
      count_q = ir::numel(qv.shape);
      q = ctx.tensor(1);
    }
    const bool every_value = ctx.is_none(2);
    const bool keepdim = ctx.num_inputs() > 3 && ctx.bool_arg(3);
    const Interpolation mode = interpolation_arg(ctx, 4);
    const Lines l = lines_of(ctx, ctx.tensor(0), every_value, every_value ? 0 : ctx.int_arg(2));
    int values = sorted(ctx, l)[0];
    int64_t dim = l.dim;
    const int count = count_numbers(ctx, l);
    // Positions: q [count_q, 1, ...] against the lines [1, *kept] where q has a dim.
    ir::Shape q_shape(l.kept.size(), 1), kept = l.kept;
    if (leading) {
      q_shape.insert(q_shape.begin(), count_q);
      kept.insert(kept.begin(), 1);
      values = ctx.graph.add_alias(values, [&] {
        ir::Shape s = ctx.graph.value(values).shape;
        s.insert(s.begin(), 1);
        return s;
      }());
      dim += 1;
    }
    q = ctx.graph.add_alias(q, q_shape);
    // A tensor of q read at run time may hold values outside [0, 1] (or NaN), which torch
    // refuses: their positions are taken at q = 0 and their results are NaN.
    int q_valid = -1;
    if (!checked) {
      q_valid = add_binary_op(ctx, rt::BinaryOp::LogicalAnd,
                              add_binary_op(ctx, rt::BinaryOp::Ge, q, f32_constant(ctx, 0.0)),
                              add_binary_op(ctx, rt::BinaryOp::Le, q, f32_constant(ctx, 1.0)));
      q = add_where_op(ctx, q_valid, q, f32_constant(ctx, 0.0));
    }
    const int lines_count = ctx.graph.add_alias(count, kept);
    int rank;
    if (ignore_nan) {  // q (count - 1), at least 0
      rank = add_binary_op(ctx, rt::BinaryOp::Mul, q,
                           add_binary_op(ctx, rt::BinaryOp::Sub, lines_count, f32_constant(ctx, 1.0)));
      rank = add_binary_op(ctx, rt::BinaryOp::Maximum, rank, f32_constant(ctx, 0.0));
    } else {  // q (n - 1), the last (a NaN) where the line has one
      const double last = static_cast<double>(l.n - 1);
      const int has_nan =
          add_binary_op(ctx, rt::BinaryOp::Lt, lines_count, f32_constant(ctx, static_cast<double>(l.n)));
      rank = add_where_op(ctx, has_nan, f32_constant(ctx, last),
                          add_binary_op(ctx, rt::BinaryOp::Mul, q, f32_constant(ctx, last)));
    }
    // lower / higher / nearest pick one value at an integral rank; linear and midpoint
    // interpolate between the values below and above it.
    const bool between = mode == Interpolation::Linear || mode == Interpolation::Midpoint;
    if (mode == Interpolation::Lower) rank = add_unary_op(ctx, rt::UnaryOp::Floor, rank);
    if (mode == Interpolation::Higher) rank = add_unary_op(ctx, rt::UnaryOp::Ceil, rank);
    if (mode == Interpolation::Nearest) rank = add_unary_op(ctx, rt::UnaryOp::Round, rank);
    const int below = between ? add_unary_op(ctx, rt::UnaryOp::Floor, rank) : rank;
    int result = pick(ctx, values, below, dim);
    if (between) {
      const int above = pick(ctx, values, add_unary_op(ctx, rt::UnaryOp::Ceil, rank), dim);
      const int weight = mode == Interpolation::Midpoint ? f32_constant(ctx, 0.5)
                                                         : add_binary_op(ctx, rt::BinaryOp::Sub, rank, below);
      result = lerp(ctx, result, above, weight);
    }
    if (!checked) result = add_where_op(ctx, q_valid, result, f32_constant(ctx, NAN));
    // The result's shape: [count_q]? then the lines' (dim kept or dropped; every value: none,
    // or x's rank of ones with keepdim).
    ir::Shape out;
    if (leading) out.push_back(count_q);
    if (every_value) {
      if (keepdim) out.insert(out.end(), x.shape.size(), 1);
    } else {
      for (size_t d = 0; d < l.kept.size(); ++d)
        if (static_cast<int64_t>(d) != l.dim || keepdim) out.push_back(l.kept[d]);
    }
    ctx.set_tensor_output(0, ctx.graph.add_alias(result, out));
  };
}

}  // namespace

void register_order_statistics(Registry& r) {
  r.add_lowering("aten::median", median_of(false));
  r.add_lowering("aten::nanmedian", median_of(true));
  r.add_lowering("aten::kthvalue", lower_kthvalue);
  r.add_lowering("aten::quantile", quantile_of(false));
  r.add_lowering("aten::nanquantile", quantile_of(true));
}

}  // namespace aotc::ops
