// max / min in all their forms, argmax, argmin:
//   max(self)                    full reduction            -> IR "reduce"
//   max.dim(self, dim, keepdim)  (values, int64 indices)   -> IR "arg_reduce" -> arg_reduce
//   max.other(self, other)       elementwise maximum       -> IR "binary"
//   argmax(self, dim=None, keepdim=False)                  -> IR "arg_reduce" (no values)
#include "elementwise.h"

namespace aotc::ops {
namespace {

// Reduces x along dim (or, with no dim, the flattened tensor) keeping the first winner.
void arg_reduce(LowerContext& ctx, bool is_max, bool want_values, std::optional<int64_t> dim, bool keepdim) {
  const ir::Value& x = ctx.value(0);
  elem_type(ctx, x.dtype);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t outer = 1, axis = ir::numel(x.shape), inner = 1;
  ir::Shape out;
  if (dim) {
    const int64_t d = normalize_dim(ctx, *dim, rank);
    axis = rank ? x.shape[static_cast<size_t>(d)] : 1;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t n = x.shape[static_cast<size_t>(i)];
      if (i < d) outer *= n;
      if (i > d) inner *= n;
      if (i != d) {
        out.push_back(n);
      } else if (keepdim) {
        out.push_back(1);
      }
    }
  } else if (keepdim) {
    out.assign(x.shape.size(), 1);
  }
  if (axis == 0) ctx.fail("max/min/argmax/argmin of an empty dimension is an error in torch");
  std::vector<int> outputs;
  if (want_values) outputs.push_back(ctx.new_value(x.dtype, out));
  outputs.push_back(ctx.new_value(ir::DType::Int64, out));
  ir::Op& op = ctx.add_op(ir::kind::arg_reduce, {ctx.tensor(0)}, outputs);
  op.attrs = {
      {"outer", outer}, {"axis", axis}, {"inner", inner}, {"is_max", is_max}, {"values", want_values}};
  for (size_t i = 0; i < outputs.size(); ++i) ctx.set_tensor_output(i, outputs[i]);
}

LowerFn max_or_min(bool is_max) {
  return [is_max](LowerContext& ctx) {
    if (ctx.num_inputs() == 1)
      return ctx.set_tensor_output(
          0, add_extremum(ctx, is_max, ctx.tensor(0), reduce_shape(ctx, ctx.value(0).shape, {}, false)));
    if (ctx.arg(1).is_tensor()) {  // max.other
      const ElemArg a = elem_arg(ctx, 0), b = elem_arg(ctx, 1);
      const ir::DType t = result_type({a, b});
      return ctx.set_tensor_output(
          0, add_binary_op(ctx, is_max ? rt::BinaryOp::Maximum : rt::BinaryOp::Minimum, as_dtype(ctx, a, t),
                           as_dtype(ctx, b, t)));
    }
    arg_reduce(ctx, is_max, true, ctx.int_arg(1), ctx.num_inputs() > 2 && ctx.bool_arg(2));
  };
}

LowerFn argmax_or_argmin(bool is_max) {
  return [is_max](LowerContext& ctx) {
    std::optional<int64_t> dim;
    if (ctx.num_inputs() > 1 && !ctx.is_none(1)) dim = ctx.int_arg(1);
    arg_reduce(ctx, is_max, false, dim, ctx.num_inputs() > 2 && ctx.bool_arg(2));
  };
}

std::string emit_arg_reduce(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, "", "aotc::rt::arg_reduce(pool, " + arg_reduce_arguments(e, op) + ");");
}

}  // namespace

std::string arg_reduce_arguments(const EmitContext& e, const ir::Op& op) {
  const bool values = op.b("values");
  const ir::Value& x = e.graph.value(op.inputs[0]);
  return elem_type_code(x.dtype) + ", " + (op.b("is_max") ? "true" : "false") + ", " +
         std::to_string(op.i("outer")) + ", " + std::to_string(op.i("axis")) + ", " +
         std::to_string(op.i("inner")) + ", " + e.in(op.inputs[0]) + ", " +
         (values ? e.out(op.outputs[0]) : std::string("nullptr")) + ", " + e.out(op.outputs[values ? 1 : 0]);
}

void register_max_min(Registry& r) {
  r.add_lowering("aten::max", max_or_min(true));
  r.add_lowering("aten::min", max_or_min(false));
  r.add_lowering("aten::argmax", argmax_or_argmin(true));
  r.add_lowering("aten::argmin", argmax_or_argmin(false));
  r.add_ir_op(ir::kind::arg_reduce, emit_arg_reduce);
}

}  // namespace aotc::ops
