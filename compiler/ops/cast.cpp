// Type conversion -> IR "cast" -> rt::cast: aten::to (dtype, device+dtype, other, and
// the prim forms), type_as, _to_copy. A conversion to the same dtype without copy=True is
// the same tensor (an alias), as in torch.
#include "elementwise.h"

namespace aotc::ops {
namespace {

// The requested dtype of one of aten::to's overloads, or nullopt for "unchanged".
//   to.dtype(self, ScalarType dtype, non_blocking, copy, memory_format)          5 inputs
//   to.device(self, Device, ScalarType dtype, non_blocking, copy, memory_format) 6
//   to.other(self, Tensor other, non_blocking, copy, memory_format)              5
//   to.dtype_layout(self, dtype?, layout?, device?, pin_memory?, non_blocking, copy, memory_format) 8
//   to.prim_Device(self, Device?, int? dtype, non_blocking, copy)                5
//   to.prim_dtype(self, int? dtype, non_blocking, copy)                          4
struct ToRequest {
  std::optional<ir::DType> dtype;
  bool copy = false;
};

ToRequest to_request(const LowerContext& ctx) {
  ToRequest r;
  const Operand& a1 = ctx.arg(1);
  const size_t n = ctx.num_inputs();
  auto dtype_at = [&](size_t i) -> std::optional<ir::DType> {
    if (ctx.is_none(i)) return std::nullopt;
    return dtype_from_torch(ctx, ctx.int_arg(i));
  };
  size_t copy_at = 0;
  if (a1.kind == Operand::Kind::Device || (a1.is_none() && n == 5)) {  // to.device, to.prim_Device
    r.dtype = dtype_at(2);
    copy_at = 4;
  } else if (a1.is_tensor()) {  // to.other
    r.dtype = ctx.value(1).dtype;
    copy_at = 3;
  } else if (n == 8) {  // to.dtype_layout
    r.dtype = dtype_at(1);
    copy_at = 6;
  } else {  // to.dtype, to.prim_dtype
    r.dtype = dtype_at(1);
    copy_at = 3;
  }
  if (copy_at < n && !ctx.is_none(copy_at) && ctx.arg(copy_at).kind == Operand::Kind::Bool)
    r.copy = ctx.bool_arg(copy_at);
  return r;
}

void convert(LowerContext& ctx, std::optional<ir::DType> dtype, bool copy) {
  const ir::Value& x = ctx.value(0);
  const ir::DType t = dtype.value_or(x.dtype);
  if (t != x.dtype) return ctx.set_tensor_output(0, cast_to(ctx, ctx.tensor(0), t));
  if (!copy) return ctx.set_tensor_output(0, ctx.graph.add_alias(ctx.tensor(0), x.shape));
  const int out = ctx.new_value(t, x.shape);
  ctx.add_op(ir::kind::cast, {ctx.tensor(0)}, {out});
  ctx.set_tensor_output(0, out);
}

void lower_to(LowerContext& ctx) {
  const ToRequest r = to_request(ctx);
  convert(ctx, r.dtype, r.copy);
}

void lower_type_as(LowerContext& ctx) { convert(ctx, ctx.value(1).dtype, false); }

// _to_copy(self, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking, memory_format)
void lower_to_copy(LowerContext& ctx) {
  std::optional<ir::DType> t;
  if (!ctx.is_none(1)) t = dtype_from_torch(ctx, ctx.int_arg(1));
  convert(ctx, t, true);
}

std::string emit_cast(const EmitContext& e, const ir::Op& op) {
  const ir::Value& x = e.graph.value(op.inputs[0]);
  const ir::Value& y = e.graph.value(op.outputs[0]);
  return kernel_call(op, "",
                     "aotc::rt::cast(pool, " + elem_type_code(x.dtype) + ", " + elem_type_code(y.dtype) +
                         ", " + std::to_string(ir::numel(y.shape)) + ", " + e.in(op.inputs[0]) + ", " +
                         e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_cast(Registry& r) {
  r.add_lowering("aten::to", lower_to);
  r.add_lowering("aten::type_as", lower_type_as);
  r.add_lowering("aten::_to_copy", lower_to_copy);
  r.add_ir_op(ir::kind::cast, emit_cast);
}

}  // namespace aotc::ops
