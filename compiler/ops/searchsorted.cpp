// searchsorted.cpp: aten::searchsorted(sorted_sequence, self, *, out_int32, right, side,
// sorter) (Tensor and Scalar values) and aten::bucketize(self, boundaries, *, out_int32,
// right) -> IR "searchsorted" -> aotc::rt::searchsorted: each value's position among the
// sorted boundaries (the first >= it, or > it with right / side="right"), int64 or int32.
// A 1-d sequence serves every value; an n-d one has a row of boundaries per line of values
// (the leading dims equal, torch's rule). With sorter, the boundaries are gathered into
// sorted order first (gather.cpp). Float boundaries or values compare in float32, integers
// in int64.
#include <algorithm>

#include "elementwise.h"

namespace aotc::ops {
namespace {

// Positions of `values` (an argument: tensor or number) among `sorted` (a tensor).
int add_searchsorted(LowerContext& ctx, int sorted, size_t values_arg, bool right, bool out_int32) {
  const ElemArg values = elem_arg(ctx, values_arg);
  const ir::Value& seq = ctx.graph.value(sorted);
  if (seq.shape.empty()) ctx.fail("the boundaries must have at least one dimension, got a 0-d tensor");
  const ir::DType t = is_float(seq.dtype) || is_float(values.dtype) ? ir::DType::Float32 : ir::DType::Int64;
  const int v = as_dtype(ctx, values, t);
  const ir::Shape shape = ctx.graph.value(v).shape;
  const int64_t length = seq.shape.back();
  const bool shared = seq.shape.size() == 1;
  int64_t lines = 1, count = ir::numel(shape);
  if (!shared) {
    const ir::Shape leading(seq.shape.begin(), seq.shape.end() - 1);
    if (shape.size() != seq.shape.size() || !std::equal(leading.begin(), leading.end(), shape.begin()))
      ctx.fail("the boundaries " + ir::shape_str(seq.shape) + " and the values " + ir::shape_str(shape) +
               " must have the same dims but the last (or the boundaries one dim)");
    count = shape.back();
    lines = count ? ir::numel(shape) / count : 0;
  }
  const int out = ctx.new_value(ir::DType::Int64, shape);
  ir::Op& op = ctx.add_op(ir::kind::searchsorted, {cast_to(ctx, sorted, t), v}, {out});
  op.attrs = {{"right", right}, {"lines", lines}, {"length", length}, {"count", count}, {"shared", shared}};
  return out_int32 ? cast_to(ctx, out, ir::DType::Int32) : out;
}

// searchsorted(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None)
void lower_searchsorted(LowerContext& ctx) {
  bool right = ctx.num_inputs() > 3 && !ctx.is_none(3) && ctx.bool_arg(3);
  if (ctx.num_inputs() > 4 && !ctx.is_none(4)) {
    const std::string& side = ctx.arg(4).s;
    if (side != "left" && side != "right")
      ctx.fail("side must be \"left\" or \"right\", got \"" + side + "\"");
    if (right && side == "left") ctx.fail("side=\"left\" and right=True contradict each other");
    right = side == "right";
  }
  int sorted = ctx.tensor(0);
  if (ctx.num_inputs() > 5 && !ctx.is_none(5)) {
    const ir::Value& sorter = ctx.value(5);
    if (sorter.dtype != ir::DType::Int64 || sorter.shape != ctx.value(0).shape)
      ctx.fail("sorter must be an int64 tensor of the boundaries' shape " +
               ir::shape_str(ctx.value(0).shape) + ", got " + ir::dtype_name(sorter.dtype) +
               ir::shape_str(sorter.shape));
    sorted = lower_as(ctx, "aten::gather",
                      {Operand::of_tensor(sorted), Operand::of_int(-1), Operand::of_tensor(ctx.tensor(5))});
  }
  const bool out_int32 = ctx.num_inputs() > 2 && !ctx.is_none(2) && ctx.bool_arg(2);
  ctx.set_tensor_output(0, add_searchsorted(ctx, sorted, 1, right, out_int32));
}

// bucketize(self, boundaries, *, out_int32=False, right=False): boundaries 1-d.
void lower_bucketize(LowerContext& ctx) {
  if (ctx.value(1).shape.size() != 1)
    ctx.fail("boundaries must be 1-d, got " + ir::shape_str(ctx.value(1).shape));
  const bool out_int32 = ctx.num_inputs() > 2 && ctx.bool_arg(2);
  const bool right = ctx.num_inputs() > 3 && ctx.bool_arg(3);
  ctx.set_tensor_output(0, add_searchsorted(ctx, ctx.tensor(1), 0, right, out_int32));
}

std::string emit_searchsorted(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, "", "aotc::rt::searchsorted(pool, " + searchsorted_arguments(e, op) + ");");
}

}  // namespace

std::string searchsorted_arguments(const EmitContext& e, const ir::Op& op) {
  return elem_type_code(e.graph.value(op.inputs[0]).dtype) + ", " + (op.b("right") ? "true" : "false") +
         ", " + std::to_string(op.i("lines")) + ", " + std::to_string(op.i("length")) + ", " +
         std::to_string(op.i("count")) + ", " + (op.b("shared") ? "true" : "false") + ", " +
         e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " + e.out(op.outputs[0]);
}

void register_searchsorted(Registry& r) {
  r.add_lowering("aten::searchsorted", lower_searchsorted);
  r.add_lowering("aten::bucketize", lower_bucketize);
  r.add_ir_op(ir::kind::searchsorted, emit_searchsorted);
}

}  // namespace aotc::ops
