// slice (x[a:b:s] on one dim), narrow and select (x[i]): strided views (strided_view.h).
// A slice of a list of tensors (xs[1:]) slices the list.
#include "strided_view.h"

namespace aotc::ops {
namespace {

// An optional int argument (None gives `absent`).
int64_t optional_int(const LowerContext& ctx, size_t i, int64_t absent) {
  return ctx.is_none(i) ? absent : ctx.int_arg(i);
}

// aten::slice.Tensor(self, dim=0, start=None, end=None, step=1); aten::slice.t(list, start,
// end, step) when the list holds run-time tensors.
void lower_slice(LowerContext& ctx) {
  constexpr int64_t kMax = INT64_MAX;
  if (ctx.arg(0).kind == Operand::Kind::TensorList) {
    const std::vector<int>& items = ctx.arg(0).tensors;
    const int64_t step = ctx.num_inputs() > 3 ? ctx.int_arg(3) : 1;
    if (step == 0) ctx.fail("slice step cannot be zero");
    const int64_t n = static_cast<int64_t>(items.size());
    std::vector<int> out;
    if (step > 0) {
      int64_t start = optional_int(ctx, 1, 0);
      const int64_t count = clamp_slice(n, start, optional_int(ctx, 2, kMax), step);
      for (int64_t i = 0; i < count; ++i) out.push_back(items[static_cast<size_t>(start + i * step)]);
    } else {  // Python's rules for a negative step
      int64_t start = optional_int(ctx, 1, n - 1), end = optional_int(ctx, 2, -n - 1);
      if (start < 0) start += n;
      if (end < 0) end += n;
      start = std::min(start, n - 1);
      for (int64_t i = start; i > end && i >= 0; i += step) out.push_back(items[static_cast<size_t>(i)]);
    }
    return ctx.set_output(0, Operand::of_tensors(out));
  }
  const StridedView x = view_of(ctx.graph, ctx.tensor(0));
  const int64_t dim = normalize_dim(ctx, ctx.num_inputs() > 1 ? ctx.int_arg(1) : 0, x.rank());
  const int64_t step = ctx.num_inputs() > 4 ? ctx.int_arg(4) : 1;
  if (step <= 0) ctx.fail("slice step must be positive, got " + std::to_string(step));
  if (x.rank() == 0) ctx.fail("slice() cannot be applied to a 0-dim tensor");
  int64_t start = optional_int(ctx, 2, 0);
  const int64_t count =
      clamp_slice(x.sizes[static_cast<size_t>(dim)], start, optional_int(ctx, 3, kMax), step);
  set_view_output(ctx, slice_view(x, dim, start, count, step));
}

// narrow(self, dim, start, length): start may be negative; the range must fit.
void lower_narrow(LowerContext& ctx) {
  const StridedView x = view_of(ctx.graph, ctx.tensor(0));
  if (x.rank() == 0) ctx.fail("narrow() cannot be applied to a 0-dim tensor");
  const int64_t dim = normalize_dim(ctx, ctx.int_arg(1), x.rank());
  const int64_t size = x.sizes[static_cast<size_t>(dim)];
  if (!ctx.arg(2).is_number())
    ctx.fail("narrow's start must be known at compile time, got " + ctx.arg(2).describe());
  int64_t start = ctx.int_arg(2);
  const int64_t length = ctx.int_arg(3);
  if (start < -size || start > size)
    ctx.fail("start " + std::to_string(start) + " out of range for dimension of size " +
             std::to_string(size));
  if (start < 0) start += size;
  if (length < 0 || start + length > size)
    ctx.fail("start (" + std::to_string(start) + ") + length (" + std::to_string(length) +
             ") exceeds dimension size (" + std::to_string(size) + ")");
  set_view_output(ctx, slice_view(x, dim, start, length, 1));
}

// select(self, dim, index): index may be negative.
void lower_select(LowerContext& ctx) {
  if (ctx.arg(0).kind == Operand::Kind::TensorList) {  // select.t: xs[i] on a list
    const std::vector<int>& items = ctx.arg(0).tensors;
    int64_t i = ctx.int_arg(1);
    const int64_t n = static_cast<int64_t>(items.size());
    if (i < -n || i >= n)
      ctx.fail("list index " + std::to_string(i) + " out of range for length " + std::to_string(n));
    return ctx.set_tensor_output(0, items[static_cast<size_t>(i < 0 ? i + n : i)]);
  }
  const StridedView x = view_of(ctx.graph, ctx.tensor(0));
  if (x.rank() == 0) ctx.fail("select() cannot be applied to a 0-dim tensor");
  const int64_t dim = normalize_dim(ctx, ctx.int_arg(1), x.rank());
  const int64_t size = x.sizes[static_cast<size_t>(dim)];
  int64_t index = ctx.int_arg(2);
  if (index < -size || index >= size)
    ctx.fail("index " + std::to_string(index) + " is out of bounds for dimension " + std::to_string(dim) +
             " with size " + std::to_string(size));
  if (index < 0) index += size;
  set_view_output(ctx, select_view(x, dim, index));
}

}  // namespace

void register_slice(Registry& r) {
  r.add_lowering("aten::slice", lower_slice);
  r.add_lowering("aten::narrow", lower_narrow);
  r.add_lowering("aten::select", lower_select);
  r.add_lowering("aten::slice_copy", lower_slice);
  r.add_lowering("aten::narrow_copy", lower_narrow);
  r.add_lowering("aten::select_copy", lower_select);
}

}  // namespace aotc::ops
