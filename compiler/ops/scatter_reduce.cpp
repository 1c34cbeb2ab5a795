// scatter_reduce.cpp: aten::scatter_reduce(self, dim, index, src, reduce, *, include_self=True)
// (reduce "sum", "prod", "mean", "amax" or "amin"), aten::scatter_add(self, dim, index, src)
// and scatter(self, dim, index, src or value, *, reduce="add" | "multiply"), in place too
// -> IR "scatter_reduce" -> aotc::rt::scatter_reduce: self copied to the output, then each
// element that an index reaches folds its contributions in index order (the same result
// every run, and on the CPU and CUDA alike). index_add, index_reduce (index_put.cpp) and
// x.index_put_(indices, v, accumulate=True) come here through add_scatter_reduce.
// Indices out of range are clamped, where torch raises.
#include "assemble.h"
#include "elementwise.h"
#include "indexing.h"

namespace aotc::ops {
namespace {

using rt::ScatterReduceOp;

ScatterReduceOp reduce_of(LowerContext& ctx, size_t arg, bool legacy) {
  const Operand& a = ctx.arg(arg);
  if (a.kind != Operand::Kind::String) ctx.fail("reduce must be a string, got " + a.describe());
  if (legacy) {  // scatter(..., reduce=)
    if (a.s == "add") return ScatterReduceOp::Sum;
    if (a.s == "multiply") return ScatterReduceOp::Prod;
    ctx.fail("reduce must be \"add\" or \"multiply\", got \"" + a.s + "\"");
  }
  if (a.s == "sum") return ScatterReduceOp::Sum;
  if (a.s == "prod") return ScatterReduceOp::Prod;
  if (a.s == "mean") return ScatterReduceOp::Mean;
  if (a.s == "amax") return ScatterReduceOp::Amax;
  if (a.s == "amin") return ScatterReduceOp::Amin;
  ctx.fail("reduce must be \"sum\", \"prod\", \"mean\", \"amax\" or \"amin\", got \"" + a.s + "\"");
}

bool include_self_arg(LowerContext& ctx, size_t arg) { return ctx.is_none(arg) || ctx.bool_arg(arg); }

// scatter_reduce(self, dim, index, src, reduce, *, include_self=True)
void lower_scatter_reduce(LowerContext& ctx) {
  ctx.set_tensor_output(
      0, add_scatter_reduce(ctx, ctx.tensor(0), ctx.int_arg(1), view_of(ctx.graph, ctx.tensor(2)),
                            ctx.tensor(3), reduce_of(ctx, 4, false), include_self_arg(ctx, 5)));
}

// scatter_add(self, dim, index, src)
void lower_scatter_add(LowerContext& ctx) {
  ctx.set_tensor_output(
      0, add_scatter_reduce(ctx, ctx.tensor(0), ctx.int_arg(1), view_of(ctx.graph, ctx.tensor(2)),
                            ctx.tensor(3), ScatterReduceOp::Sum, true));
}

std::string emit_scatter_reduce(const EmitContext& e, const ir::Op& op) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  const std::string copy = "std::memcpy(" + e.out(op.outputs[0]) + ", " + e.in(op.inputs[0]) + ", " +
                           std::to_string(y.bytes()) + "); ";
  return kernel_call(op, scatter_reduce_params_code(e, op),
                     copy + "aotc::rt::scatter_reduce(pool, r, " + e.in(op.inputs[2]) + ", " +
                         scatter_reduce_index(e, op) + ", " + e.out(op.outputs[0]) + ", " + e.scratch(op) +
                         ");");
}

}  // namespace

// scatter(self, dim, index, src or value, *, reduce): the value expanded to the index's shape.
void lower_scatter_with_reduce(LowerContext& ctx) {
  const ScatterReduceOp op = reduce_of(ctx, 4, true);
  const ir::Value& x = ctx.value(0);
  int src = -1;
  if (ctx.arg(3).is_tensor()) {
    src = ctx.tensor(3);
  } else {
    const int v = as_dtype(ctx, elem_arg(ctx, 3), x.dtype);
    src =
        materialize(ctx, expand_view(view_of(ctx.graph, ctx.graph.add_alias(v, {})), ctx.value(2).shape), -1);
  }
  ctx.set_tensor_output(0, add_scatter_reduce(ctx, ctx.tensor(0), ctx.int_arg(1),
                                              view_of(ctx.graph, ctx.tensor(2)), src, op, true));
}

int add_scatter_reduce(LowerContext& ctx, int self, int64_t dim_arg, const StridedView& index, int src,
                       ScatterReduceOp reduce, bool include_self) {
  const ir::Value& x = ctx.graph.value(self);
  if (x.dtype != ir::DType::Float32 && x.dtype != ir::DType::Int64 && x.dtype != ir::DType::Int32)
    ctx.fail(std::string("a scatter with a reduction takes float32, int64 or int32 tensors, got ") +
             ir::dtype_name(x.dtype));
  const ir::Value& s = ctx.graph.value(src);
  if (s.dtype != x.dtype)
    ctx.fail(std::string("src has dtype ") + ir::dtype_name(s.dtype) + ", self " + ir::dtype_name(x.dtype) +
             " (they must match)");
  const int64_t dim = check_scatter_operands(ctx, self, dim_arg, index.base, index.sizes, src);
  const int out = ctx.new_value(x.dtype, x.shape);
  // The index read in place (an expand, a slice or a transpose of another tensor is not
  // copied first): its base, offset and strides (0 along broadcast dims).
  ir::Op& op = ctx.add_op(ir::kind::scatter_reduce, {self, index.base, src}, {out});
  op.attrs["dim"] = dim;
  op.attrs["reduce"] = static_cast<int64_t>(reduce);
  op.attrs["include_self"] = static_cast<int64_t>(include_self);
  op.attrs["index_shape"] = index.sizes;
  op.attrs["index_strides"] = index.strides;
  op.attrs["index_offset"] = index.offset;
  op.attrs["y_dim_size"] = x.shape[static_cast<size_t>(dim)];
  rt::ScatterReduceParams p;
  p.op = reduce;
  p.y_numel = ir::numel(x.shape);
  op.scratch_bytes = rt::scatter_reduce_scratch_bytes(p);
  return out;
}

std::string scatter_reduce_index(const EmitContext& e, const ir::Op& op) {
  const int64_t offset = op.i("index_offset") * ir::dtype_size(e.graph.value(op.inputs[1]).dtype);
  const std::string base = e.in(op.inputs[1]);
  return offset ? "reinterpret_cast<const unsigned char*>(" + base + ") + " + std::to_string(offset) : base;
}

std::string scatter_reduce_params_code(const EmitContext& e, const ir::Op& op) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  ParamsCode r("aotc::rt::ScatterReduceParams", "r");
  r.raw("geometry", "p")
      .raw("op", "static_cast<aotc::rt::ScatterReduceOp>(" + std::to_string(op.i("reduce")) + ")")
      .raw("type", elem_type_code(y.dtype))
      .set_bool("include_self", op.i("include_self") != 0)
      .set("y_numel", ir::numel(y.shape))
      .set_array("index_strides", op.ints("index_strides"));
  return scatter_params_code(e, op) + " " + r.str();
}

void register_scatter_reduce(Registry& r) {
  r.add_lowering("aten::scatter_reduce", lower_scatter_reduce);
  r.add_lowering("aten::scatter_reduce_", lower_scatter_reduce);
  r.add_lowering("aten::scatter_add", lower_scatter_add);
  r.add_lowering("aten::scatter_add_", lower_scatter_add);
  r.add_ir_op(ir::kind::scatter_reduce, emit_scatter_reduce);
}

}  // namespace aotc::ops
