// trapezoid.cpp: aten::trapezoid and aten::trapz (y with sample points x, or a spacing dx)
// and aten::cumulative_trapezoid: the trapezoidal rule along a dim, composed as torch
// composes it (slices, differences, sums or cumulative sums): with x, sum(dx (y_left +
// y_right)) / 2, dx the differences of x (a 1-d x lies along the dim, a shorter one is
// padded with leading dims, then both broadcast); with a spacing, (sum(y) - (y_first +
// y_last) / 2) dx, and the cumulative form (dx / 2 (y_left + y_right)) summed in order. An
// empty dim integrates to zeros, as in torch.
#include "elementwise.h"

namespace aotc::ops {
namespace {

Operand T(int id) { return Operand::of_tensor(id); }
Operand I(int64_t v) { return Operand::of_int(v); }

int slice(LowerContext& ctx, int x, int64_t dim, int64_t start, int64_t end) {
  return lower_as(ctx, "aten::slice", {T(x), I(dim), I(start), I(end), I(1)});
}

int binary(LowerContext& ctx, const char* name, Operand a, Operand b) {
  return lower_as(ctx, name, {std::move(a), std::move(b)});
}

// The differences of the sample points x along dim, shaped to broadcast against y's.
int spacing(LowerContext& ctx, int x, int64_t dim, int64_t rank, int64_t samples) {
  const ir::Value& xv = ctx.graph.value(x);
  ir::Shape shape = xv.shape;
  if (shape.size() == 1) {
    if (shape[0] != samples)
      ctx.fail("there must be one x for each sample: x has " + std::to_string(shape[0]) + ", the dim " +
               std::to_string(samples));
    shape.assign(static_cast<size_t>(rank), 1);
    shape[static_cast<size_t>(dim)] = samples;
  } else if (static_cast<int64_t>(shape.size()) < rank) {
    shape.insert(shape.begin(), static_cast<size_t>(rank) - shape.size(), 1);
  }
  const int viewed = lower_as(ctx, "aten::reshape", {T(x), Operand::of_ints(shape)});
  const int64_t n = shape[static_cast<size_t>(dim)];
  return binary(ctx, "aten::sub", T(slice(ctx, viewed, dim, 1, n)), T(slice(ctx, viewed, dim, 0, n - 1)));
}

// trapezoid / trapz / cumulative_trapezoid: .x(y, x, *, dim=-1) or .dx(y, *, dx=1, dim=-1).
LowerFn trapezoid_of(bool cumulative) {
  return [cumulative](LowerContext& ctx) {
    const ir::Value& y = ctx.value(0);
    if (y.dtype == ir::DType::Bool) ctx.fail("y must not be a bool tensor (torch refuses it too)");
    const int64_t rank = static_cast<int64_t>(y.shape.size());
    if (rank == 0) ctx.fail("y must have at least one dim");
    const int64_t dim = normalize_dim(ctx, ctx.num_inputs() > 2 ? ctx.int_arg(2) : -1, rank);
    const int64_t n = y.shape[static_cast<size_t>(dim)];
    const bool with_x = ctx.arg(1).is_tensor();
    if (n == 0) {  // nothing to integrate
      ir::Shape out = y.shape;
      if (!cumulative) out.erase(out.begin() + dim);
      ctx.set_tensor_output(0, ctx.graph.add_f32_constant(out, std::vector<float>(ir::numel(out), 0.0f)));
      return;
    }
    const int yid = ctx.tensor(0);
    const int left = slice(ctx, yid, dim, 0, n - 1), right = slice(ctx, yid, dim, 1, n);
    int result;
    if (with_x) {
      const int dx = spacing(ctx, ctx.tensor(1), dim, rank, n);
      const int terms = binary(ctx, "aten::mul", T(dx), T(binary(ctx, "aten::add", T(left), T(right))));
      const int summed =
          cumulative
              ? lower_as(ctx, "aten::cumsum", {T(terms), I(dim), Operand::none()})
              : lower_as(ctx, "aten::sum",
                         {T(terms), Operand::of_ints({dim}), Operand::of_bool(false), Operand::none()});
      result = binary(ctx, "aten::div", T(summed), Operand::of_double(2.0));
    } else {
      const double dx = ctx.is_none(1) ? 1.0 : ctx.double_arg(1);
      if (cumulative) {
        const int terms = binary(ctx, "aten::mul", T(binary(ctx, "aten::add", T(left), T(right))),
                                 Operand::of_double(dx / 2.0));
        result = lower_as(ctx, "aten::cumsum", {T(terms), I(dim), Operand::none()});
      } else {
        const int sum = lower_as(ctx, "aten::sum",
                                 {T(yid), Operand::of_ints({dim}), Operand::of_bool(false), Operand::none()});
        const int ends = binary(ctx, "aten::add", T(lower_as(ctx, "aten::select", {T(yid), I(dim), I(0)})),
                                T(lower_as(ctx, "aten::select", {T(yid), I(dim), I(n - 1)})));
        const int inner =
            binary(ctx, "aten::sub", T(sum), T(binary(ctx, "aten::mul", T(ends), Operand::of_double(0.5))));
        result = binary(ctx, "aten::mul", T(inner), Operand::of_double(dx));
      }
    }
    ctx.set_tensor_output(0, result);
  };
}

}  // namespace

void register_trapezoid(Registry& r) {
  r.add_lowering("aten::trapezoid", trapezoid_of(false));
  r.add_lowering("aten::trapz", trapezoid_of(false));
  r.add_lowering("aten::cumulative_trapezoid", trapezoid_of(true));
}

}  // namespace aotc::ops
