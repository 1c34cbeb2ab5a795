// Reductions over any set of dims (negative dims, keepdim, dim=None / []) -> IR "reduce"
// -> reduce_f32 / reduce_i64: sum and prod (dtype argument; integer and bool tensors sum
// into int64 as torch does), mean, amax, amin, all, any, count_nonzero.
#include "elementwise.h"

namespace aotc::ops {

ReduceShape reduce_shape(const LowerContext& ctx, const ir::Shape& x, const std::vector<int64_t>& dims,
                         bool keepdim) {
  ReduceShape rs;
  const int64_t rank = static_cast<int64_t>(x.size());
  rs.mask.assign(x.size(), dims.empty() ? 1 : 0);
  for (int64_t d : dims) {
    const int64_t nd = normalize_dim(ctx, d, rank);
    if (rank > 0) rs.mask[static_cast<size_t>(nd)] = 1;
  }
  for (size_t d = 0; d < x.size(); ++d) {
    if (rs.mask[d]) {
      rs.count *= x[d];
      rs.kept.push_back(1);
      if (keepdim) rs.out.push_back(1);
    } else {
      rs.kept.push_back(x[d]);
      rs.out.push_back(x[d]);
    }
  }
  return rs;
}

std::vector<int64_t> dims_arg(const LowerContext& ctx, size_t i) {
  if (ctx.is_none(i)) return {};
  return ctx.ints_arg(i);
}

int add_reduce_op(LowerContext& ctx, rt::ReduceOp op, int x, const ReduceShape& rs) {
  const ir::DType t = ctx.graph.value(x).dtype;
  if (t != ir::DType::Float32 && t != ir::DType::Int64)
    ctx.fail("internal: reduce of a non-float32/int64 tensor");
  const int out = ctx.new_value(t, rs.out);
  ir::Op& ir_op = ctx.add_op(ir::kind::reduce, {x}, {out});
  ir_op.attrs = {{"op", static_cast<int64_t>(op)}, {"mask", rs.mask}};
  return out;
}

int add_extremum(LowerContext& ctx, bool is_max, int x, const ReduceShape& rs) {
  const ir::DType t = ctx.graph.value(x).dtype;
  const rt::ReduceOp op = is_max ? rt::ReduceOp::Max : rt::ReduceOp::Min;
  if (t == ir::DType::Float32 || t == ir::DType::Int64) return add_reduce_op(ctx, op, x, rs);
  return cast_to(ctx, add_reduce_op(ctx, op, cast_to(ctx, x, ir::DType::Int64), rs), t);
}

namespace {

// The optional dtype argument i, else float32 for float tensors and int64 for the rest.
ir::DType accumulate_dtype(const LowerContext& ctx, size_t i) {
  if (ctx.num_inputs() > i && !ctx.is_none(i)) return dtype_from_torch(ctx, ctx.int_arg(i));
  return is_float(ctx.value(0).dtype) ? ir::DType::Float32 : ir::DType::Int64;
}

// sum/prod/mean(self, dtype=None) and sum/mean.dim_IntList(self, dim, keepdim=False, dtype=None),
// prod.dim_int(self, int dim, keepdim=False, dtype=None).
LowerFn sum_like(rt::ReduceOp op) {
  return [op](LowerContext& ctx) {
    const bool full = ctx.num_inputs() <= 2;
    const ReduceShape rs = full ? reduce_shape(ctx, ctx.value(0).shape, {}, false)
                                : reduce_shape(ctx, ctx.value(0).shape, dims_arg(ctx, 1), ctx.bool_arg(2));
    const ir::DType t = accumulate_dtype(ctx, full ? 1 : 3);
    if (op == rt::ReduceOp::Mean && t != ir::DType::Float32)
      ctx.fail("mean needs a float32 input or dtype=torch.float32");
    if (t != ir::DType::Float32 && t != ir::DType::Int64)
      ctx.fail(std::string("a result dtype of ") + ir::dtype_name(t) +
               " is not supported (float32 and int64 are)");
    ctx.set_tensor_output(0, add_reduce_op(ctx, op, cast_to(ctx, ctx.tensor(0), t), rs));
  };
}

// amax/amin(self, dim=[], keepdim=False): self's dtype.
LowerFn amax_amin(bool is_max) {
  return [is_max](LowerContext& ctx) {
    const bool keepdim = ctx.num_inputs() > 2 && ctx.bool_arg(2);
    const std::vector<int64_t> dims = ctx.num_inputs() > 1 ? dims_arg(ctx, 1) : std::vector<int64_t>{};
    ctx.set_tensor_output(
        0, add_extremum(ctx, is_max, ctx.tensor(0), reduce_shape(ctx, ctx.value(0).shape, dims, keepdim)));
  };
}

// aminmax(self, *, dim=None, keepdim=False) -> (min, max) over the same dims, self's dtype.
void lower_aminmax(LowerContext& ctx) {
  const bool keepdim = ctx.num_inputs() > 2 && ctx.bool_arg(2);
  const std::vector<int64_t> dims = ctx.num_inputs() > 1 ? dims_arg(ctx, 1) : std::vector<int64_t>{};
  const ReduceShape rs = reduce_shape(ctx, ctx.value(0).shape, dims, keepdim);
  ctx.set_tensor_output(0, add_extremum(ctx, false, ctx.tensor(0), rs));
  ctx.set_tensor_output(1, add_extremum(ctx, true, ctx.tensor(0), rs));
}

// all/any(self), all/any.dim(self, int dim, keepdim=False), all/any.dims(self, int[]? dim, keepdim):
// the min (all) or max (any) of self != 0, as bool.
LowerFn all_any(bool is_any) {
  return [is_any](LowerContext& ctx) {
    const bool keepdim = ctx.num_inputs() > 2 && ctx.bool_arg(2);
    const std::vector<int64_t> dims = ctx.num_inputs() > 1 ? dims_arg(ctx, 1) : std::vector<int64_t>{};
    if (ctx.num_inputs() > 1 && !ctx.is_none(1) && dims.empty() && ctx.arg(1).kind == Operand::Kind::IntList)
      return ctx.set_tensor_output(0,
                                   cast_to(ctx, ctx.tensor(0), ir::DType::Bool));  // dim=[]: nothing reduced
    const int b = cast_to(ctx, ctx.tensor(0), ir::DType::Bool);
    const ReduceShape rs = reduce_shape(ctx, ctx.value(0).shape, dims, keepdim);
    ctx.set_tensor_output(0, add_extremum(ctx, is_any, b, rs));
  };
}

// count_nonzero(self, int? dim=None) and count_nonzero.dim_IntList(self, int[] dim): int64.
void lower_count_nonzero(LowerContext& ctx) {
  const std::vector<int64_t> dims = ctx.num_inputs() > 1 ? dims_arg(ctx, 1) : std::vector<int64_t>{};
  const int nonzero = cast_to(ctx, cast_to(ctx, ctx.tensor(0), ir::DType::Bool), ir::DType::Int64);
  ctx.set_tensor_output(
      0, add_reduce_op(ctx, rt::ReduceOp::Sum, nonzero, reduce_shape(ctx, ctx.value(0).shape, dims, false)));
}

std::string emit_reduce(const EmitContext& e, const ir::Op& op) {
  const ir::Value& x = e.graph.value(op.inputs[0]);
  ParamsCode p("aotc::rt::ReduceParams");
  p.raw("op", "static_cast<aotc::rt::ReduceOp>(" + std::to_string(op.i("op")) + ")")
      .set("rank", static_cast<int64_t>(x.shape.size()))
      .set_array("dims", x.shape);
  const auto& mask = op.ints("mask");
  for (size_t d = 0; d < mask.size(); ++d) p.set_bool("reduce_mask[" + std::to_string(d) + "]", mask[d] != 0);
  const std::string fn = x.dtype == ir::DType::Int64 ? "aotc::rt::reduce_i64" : "aotc::rt::reduce_f32";
  return kernel_call(op, p.str(),
                     fn + "(pool, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_reduce(Registry& r) {
  r.add_lowering("aten::mean", sum_like(rt::ReduceOp::Mean));
  r.add_lowering("aten::sum", sum_like(rt::ReduceOp::Sum));
  r.add_lowering("aten::prod", sum_like(rt::ReduceOp::Prod));
  r.add_lowering("aten::amax", amax_amin(true));
  r.add_lowering("aten::amin", amax_amin(false));
  r.add_lowering("aten::aminmax", lower_aminmax);
  r.add_lowering("aten::all", all_any(false));
  r.add_lowering("aten::any", all_any(true));
  r.add_lowering("aten::count_nonzero", lower_count_nonzero);
  r.add_ir_op(ir::kind::reduce, emit_reduce);
}

}  // namespace aotc::ops
