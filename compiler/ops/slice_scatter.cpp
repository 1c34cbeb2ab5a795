// slice_scatter and select_scatter: self with one slice (any step) or one index along a dim
// replaced by src -> IR "assemble" (assemble.h): self copied whole, then src copied into the
// strided region. The frontend writes in-place updates of views back into their bases
// (x[:, ::2] += 1, x[0] = y) with these.
#include "assemble.h"

namespace aotc::ops {
namespace {

// src (shape `region.sizes`) written over `region` (a strided view of the output).
void scatter_region(LowerContext& ctx, const StridedView& region) {
  const ir::Value& x = ctx.value(0);
  const ir::Value& src = ctx.value(1);
  if (src.dtype != x.dtype)
    ctx.fail(std::string("src has dtype ") + ir::dtype_name(src.dtype) + ", self " + ir::dtype_name(x.dtype));
  if (src.shape != region.sizes)
    ctx.fail("src " + ir::shape_str(src.shape) + " must have the region's shape " +
             ir::shape_str(region.sizes));
  Assembly a;
  a.dtype = x.dtype;
  a.shape = x.shape;
  a.pieces.push_back(
      region_piece(view_of(ctx.graph, ctx.tensor(0)), x.shape, std::vector<int64_t>(x.shape.size(), 0)));
  a.pieces.push_back({view_of(ctx.graph, ctx.tensor(1)), region.offset, region.strides});
  ctx.set_tensor_output(0, add_assembly(ctx, a));
}

StridedView output_view(const ir::Shape& shape) { return {kOutput, 0, shape, dense_strides(shape)}; }

// slice_scatter(self, src, dim=0, start=None, end=None, step=1)
void lower_slice_scatter(LowerContext& ctx) {
  const ir::Shape shape = ctx.value(0).shape;
  if (shape.empty()) ctx.fail("slice_scatter needs a tensor with at least 1 dimension");
  const int64_t dim =
      normalize_dim(ctx, ctx.num_inputs() > 2 ? ctx.int_arg(2) : 0, static_cast<int64_t>(shape.size()));
  const int64_t step = ctx.num_inputs() > 5 ? ctx.int_arg(5) : 1;
  if (step <= 0) ctx.fail("slice step must be positive, got " + std::to_string(step));
  int64_t start = ctx.is_none(3) ? 0 : ctx.int_arg(3);
  const int64_t end = ctx.is_none(4) ? INT64_MAX : ctx.int_arg(4);
  const int64_t count = clamp_slice(shape[static_cast<size_t>(dim)], start, end, step);
  scatter_region(ctx, slice_view(output_view(shape), dim, start, count, step));
}

// select_scatter(self, src, dim, index)
void lower_select_scatter(LowerContext& ctx) {
  const ir::Shape shape = ctx.value(0).shape;
  if (shape.empty()) ctx.fail("select_scatter needs a tensor with at least 1 dimension");
  const int64_t dim = normalize_dim(ctx, ctx.int_arg(2), static_cast<int64_t>(shape.size()));
  const int64_t size = shape[static_cast<size_t>(dim)];
  int64_t index = ctx.int_arg(3);
  if (index < -size || index >= size)
    ctx.fail("index " + std::to_string(index) + " is out of bounds for dimension " + std::to_string(dim) +
             " with size " + std::to_string(size));
  if (index < 0) index += size;
  scatter_region(ctx, select_view(output_view(shape), dim, index));
}

}  // namespace

void register_slice_scatter(Registry& r) {
  r.add_lowering("aten::slice_scatter", lower_slice_scatter);
  r.add_lowering("aten::select_scatter", lower_select_scatter);
}

}  // namespace aotc::ops
