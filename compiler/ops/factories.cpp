// Factories whose shape is static but that reach the lowering because an argument is a
// run-time tensor: zeros_like / ones_like / full_like / empty_like, new_zeros / new_ones /
// new_full / new_empty, and the in-place zero_ / fill_ (what RemoveTensorMutation leaves).
// Each is an IR "assemble" with only a fill (empty_like and new_empty are zeros: defined
// values cost one memset). With all arguments known at compile time (torch.zeros(2, 3),
// torch.arange(n), ...) the frontend evaluates the factory with LibTorch instead.
#include "assemble.h"

namespace aotc::ops {
namespace {

ir::DType dtype_arg(const LowerContext& ctx, size_t i, ir::DType fallback) {
  return ctx.is_none(i) ? fallback : dtype_from_scalar_type(ctx, ctx.int_arg(i));
}

void set_filled(LowerContext& ctx, ir::DType dtype, const ir::Shape& shape, const Operand& value) {
  for (int64_t s : shape)
    if (s < 0) ctx.fail("negative dimension in size " + ir::shape_str(shape));
  Assembly a;
  a.dtype = dtype;
  a.shape = shape;
  a.fill = scalar_bytes(ctx, dtype, value);
  ctx.set_tensor_output(0, add_assembly(ctx, a));
}

// zeros_like / ones_like / empty_like(self, dtype=None, layout, device, pin_memory, memory_format)
void like(LowerContext& ctx, int64_t value) {
  set_filled(ctx, dtype_arg(ctx, 1, ctx.value(0).dtype), ctx.value(0).shape, Operand::of_int(value));
}
void lower_zeros_like(LowerContext& ctx) { like(ctx, 0); }
void lower_ones_like(LowerContext& ctx) { like(ctx, 1); }

// full_like(self, fill_value, dtype=None, ...)
void lower_full_like(LowerContext& ctx) {
  set_filled(ctx, dtype_arg(ctx, 2, ctx.value(0).dtype), ctx.value(0).shape, ctx.arg(1));
}

// new_zeros / new_ones / new_empty(self, size, dtype=None, ...)
void new_filled(LowerContext& ctx, int64_t value) {
  set_filled(ctx, dtype_arg(ctx, 2, ctx.value(0).dtype), ctx.ints_arg(1), Operand::of_int(value));
}
void lower_new_zeros(LowerContext& ctx) { new_filled(ctx, 0); }
void lower_new_ones(LowerContext& ctx) { new_filled(ctx, 1); }

// new_full(self, size, fill_value, dtype=None, ...)
void lower_new_full(LowerContext& ctx) {
  set_filled(ctx, dtype_arg(ctx, 3, ctx.value(0).dtype), ctx.ints_arg(1), ctx.arg(2));
}

// zeros / ones / empty(size, dtype=None, ...) and full(size, fill_value, dtype=None, ...),
// should their arguments reach a lowering; torch's default dtype, or the fill value's.
void lower_zeros(LowerContext& ctx) {
  set_filled(ctx, dtype_arg(ctx, 1, ir::DType::Float32), ctx.ints_arg(0), Operand::of_int(0));
}
void lower_ones(LowerContext& ctx) {
  set_filled(ctx, dtype_arg(ctx, 1, ir::DType::Float32), ctx.ints_arg(0), Operand::of_int(1));
}
void lower_full(LowerContext& ctx) {
  const Operand& v = ctx.arg(1);
  const ir::DType inferred = v.kind == Operand::Kind::Bool  ? ir::DType::Bool
                             : v.kind == Operand::Kind::Int ? ir::DType::Int64
                                                            : ir::DType::Float32;
  set_filled(ctx, dtype_arg(ctx, 2, inferred), ctx.ints_arg(0), v);
}

// zero_(self), fill_(self, value): a new tensor of self's shape and dtype (the frontend
// rebinds self to it). fill_ with a tensor value broadcasts that 0-d tensor.
void lower_zero_(LowerContext& ctx) {
  set_filled(ctx, ctx.value(0).dtype, ctx.value(0).shape, Operand::of_int(0));
}
void lower_fill_(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  if (!ctx.arg(1).is_tensor()) return set_filled(ctx, x.dtype, x.shape, ctx.arg(1));
  const ir::Value& v = ctx.value(1);
  if (!v.shape.empty() && ir::numel(v.shape) != 1)
    ctx.fail("fill_ only supports a 0-dimensional value tensor, got shape " + ir::shape_str(v.shape));
  if (v.dtype != x.dtype)
    ctx.fail(std::string("fill_ with a ") + ir::dtype_name(v.dtype) + " value tensor into a " +
             ir::dtype_name(x.dtype) + " tensor is not supported; convert the value first");
  StridedView one = view_of(ctx.graph, ctx.graph.add_alias(ctx.tensor(1), {}));
  Assembly a;
  a.dtype = x.dtype;
  a.shape = x.shape;
  a.pieces.push_back(
      region_piece(expand_view(one, x.shape), x.shape, std::vector<int64_t>(x.shape.size(), 0)));
  ctx.set_tensor_output(0, add_assembly(ctx, a));
}

// copy_(self, src, non_blocking=False): the new content of self is src broadcast to self's
// shape (the frontend rebinds self, and writes it back into a base it is a view of).
void lower_copy_(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  const ir::Value& src = ctx.value(1);
  if (src.dtype != x.dtype)
    ctx.fail(std::string("copy_ of a ") + ir::dtype_name(src.dtype) + " tensor into a " +
             ir::dtype_name(x.dtype) + " tensor is not supported; convert it first (.to(dtype))");
  const ir::Shape shape = broadcast_shapes(ctx, x.shape, src.shape);
  if (shape != x.shape)
    ctx.fail("copy_ source " + ir::shape_str(src.shape) + " cannot be broadcast to " +
             ir::shape_str(x.shape));
  Assembly a;
  a.dtype = x.dtype;
  a.shape = x.shape;
  a.pieces.push_back(region_piece(expand_view(view_of(ctx.graph, ctx.tensor(1)), x.shape), x.shape,
                                  std::vector<int64_t>(x.shape.size(), 0)));
  ctx.set_tensor_output(0, add_assembly(ctx, a));
}

}  // namespace

void register_factories(Registry& r) {
  r.add_lowering("aten::zeros_like", lower_zeros_like);
  r.add_lowering("aten::empty_like", lower_zeros_like);
  r.add_lowering("aten::ones_like", lower_ones_like);
  r.add_lowering("aten::full_like", lower_full_like);
  r.add_lowering("aten::new_zeros", lower_new_zeros);
  r.add_lowering("aten::new_empty", lower_new_zeros);
  r.add_lowering("aten::new_ones", lower_new_ones);
  r.add_lowering("aten::new_full", lower_new_full);
  r.add_lowering("aten::zeros", lower_zeros);
  r.add_lowering("aten::empty", lower_zeros);
  r.add_lowering("aten::ones", lower_ones);
  r.add_lowering("aten::full", lower_full);
  r.add_lowering("aten::zero_", lower_zero_);
  r.add_lowering("aten::fill_", lower_fill_);
  r.add_lowering("aten::copy_", lower_copy_);
}

}  // namespace aotc::ops
