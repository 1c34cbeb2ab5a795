// diagonal and Tensor.unfold: strided views (strided_view.h) whose new dims step through
// x with combined strides (the diagonal: row + column stride; windows: step * stride).
#include "strided_view.h"

namespace aotc::ops {
namespace {

// diagonal(self, offset=0, dim1=0, dim2=1): dim1 and dim2 go, the diagonal is appended.
void lower_diagonal(LowerContext& ctx) {
  const StridedView x = view_of(ctx.graph, ctx.tensor(0));
  if (x.rank() < 2) ctx.fail("diagonal needs a tensor with at least 2 dimensions");
  const int64_t offset = ctx.num_inputs() > 1 ? ctx.int_arg(1) : 0;
  const int64_t d1 = normalize_dim(ctx, ctx.num_inputs() > 2 ? ctx.int_arg(2) : 0, x.rank());
  const int64_t d2 = normalize_dim(ctx, ctx.num_inputs() > 3 ? ctx.int_arg(3) : 1, x.rank());
  if (d1 == d2) ctx.fail("diagonal dimensions cannot be identical (" + std::to_string(d1) + ")");
  const int64_t s1 = x.sizes[static_cast<size_t>(d1)], s2 = x.sizes[static_cast<size_t>(d2)];
  const int64_t len =
      std::max<int64_t>(0, offset >= 0 ? std::min(s1, s2 - offset) : std::min(s1 + offset, s2));
  StridedView r;
  r.base = x.base;
  r.offset = x.offset;
  if (len > 0)
    r.offset += offset >= 0 ? offset * x.strides[static_cast<size_t>(d2)]
                            : -offset * x.strides[static_cast<size_t>(d1)];
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d == d1 || d == d2) continue;
    r.sizes.push_back(x.sizes[static_cast<size_t>(d)]);
    r.strides.push_back(x.strides[static_cast<size_t>(d)]);
  }
  r.sizes.push_back(len);
  r.strides.push_back(x.strides[static_cast<size_t>(d1)] + x.strides[static_cast<size_t>(d2)]);
  set_view_output(ctx, r);
}

// unfold(self, dimension, size, step): windows of `size` along dimension, every `step`;
// the window becomes a new last dim.
void lower_unfold(LowerContext& ctx) {
  const StridedView x = view_of(ctx.graph, ctx.tensor(0));
  const int64_t size = ctx.int_arg(2), step = ctx.int_arg(3);
  if (step <= 0) ctx.fail("unfold step must be positive, got " + std::to_string(step));
  StridedView r = x;
  if (x.rank() == 0) {  // a 0-d tensor unfolds to [1] with size 1
    if (size != 1) ctx.fail("unfold of a 0-d tensor needs size 1");
    r.sizes = {1};
    r.strides = {1};
    return set_view_output(ctx, r);
  }
  const int64_t d = normalize_dim(ctx, ctx.int_arg(1), x.rank());
  const size_t u = static_cast<size_t>(d);
  if (size < 0 || size > x.sizes[u])
    ctx.fail("unfold size " + std::to_string(size) + " exceeds the dimension's size " +
             std::to_string(x.sizes[u]));
  r.sizes[u] = (x.sizes[u] - size) / step + 1;
  r.strides[u] = x.strides[u] * step;
  r.sizes.push_back(size);
  r.strides.push_back(x.strides[u]);
  set_view_output(ctx, r);
}

}  // namespace

void register_diagonal_unfold(Registry& r) {
  r.add_lowering("aten::diagonal", lower_diagonal);
  r.add_lowering("aten::unfold", lower_unfold);
}

}  // namespace aotc::ops
