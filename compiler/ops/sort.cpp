// sort.cpp: aten::topk(self, k, dim, largest, sorted), aten::sort (and sort.stable),
// aten::argsort (and argsort.stable), aten::msort -> IR "sort" -> aotc::rt::sort_lines on an
// [outer, axis, inner] view: the first k values along dim in sorted order and their int64
// indices (a NaN larger than every number; equal values in index order, torch's stable
// sort, whatever `stable` says: topk's ties, and sort's without stable, are unspecified in
// torch). topk with sorted=False gets them sorted too (an order torch allows).
#include "elementwise.h"

namespace aotc::ops {
namespace {

// Sorts x along dim, keeping the first k (-1: all), descending or not; returns the values
// and the indices, or the indices alone.
std::vector<int> add_sort(LowerContext& ctx, int64_t dim_arg, int64_t k, bool descending, bool want_values) {
  const ir::Value& x = ctx.value(0);
  elem_type(ctx, x.dtype);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t dim = normalize_dim(ctx, dim_arg, rank);
  const int64_t axis = rank ? x.shape[static_cast<size_t>(dim)] : 1;
  if (k < 0) k = axis;
  if (k > axis)
    ctx.fail("k = " + std::to_string(k) + " is out of range: dim " + std::to_string(dim_arg) + " has " +
             std::to_string(axis) + " values");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.shape[static_cast<size_t>(d)];
  for (int64_t d = dim + 1; d < rank; ++d) inner *= x.shape[static_cast<size_t>(d)];
  ir::Shape out = x.shape;
  if (rank) out[static_cast<size_t>(dim)] = k;
  std::vector<int> outputs;
  if (want_values) outputs.push_back(ctx.new_value(x.dtype, out));
  outputs.push_back(ctx.new_value(ir::DType::Int64, out));
  ir::Op& op = ctx.add_op(ir::kind::sort, {ctx.tensor(0)}, outputs);
  op.attrs = {{"outer", outer},
              {"axis", axis},
              {"inner", inner},
              {"k", k},
              {"descending", descending},
              {"values", want_values},
              {"elem_size", ir::dtype_size(x.dtype)}};
  return outputs;
}

void set_outputs(LowerContext& ctx, const std::vector<int>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) ctx.set_tensor_output(i, outputs[i]);
}

void lower_topk(LowerContext& ctx) {
  const int64_t k = ctx.int_arg(1);
  if (k < 0) ctx.fail("k must not be negative, got " + std::to_string(k));
  set_outputs(ctx, add_sort(ctx, ctx.int_arg(2), k, ctx.bool_arg(3), true));
}

// sort(self, dim, descending) or sort.stable(self, *, stable, dim, descending): the same
// result (see the top of the file).
LowerFn sort_or_argsort(bool want_values) {
  return [want_values](LowerContext& ctx) {
    const size_t dim = ctx.num_inputs() >= 4 ? 2 : 1;
    set_outputs(ctx, add_sort(ctx, ctx.int_arg(dim), -1, ctx.bool_arg(dim + 1), want_values));
  };
}

void lower_msort(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  if (x.shape.empty()) ctx.fail("msort needs a tensor of at least one dimension");
  ctx.set_tensor_output(0, add_sort(ctx, 0, -1, false, true)[0]);  // the values alone
}

std::string emit_sort(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, "", "aotc::rt::sort_lines(pool, " + sort_arguments(e, op) + ");");
}

}  // namespace

std::string sort_arguments(const EmitContext& e, const ir::Op& op) {
  const bool values = op.b("values");
  return elem_type_code(e.graph.value(op.inputs[0]).dtype) + ", " + (op.b("descending") ? "true" : "false") +
         ", " + std::to_string(op.i("outer")) + ", " + std::to_string(op.i("axis")) + ", " +
         std::to_string(op.i("inner")) + ", " + std::to_string(op.i("k")) + ", " + e.in(op.inputs[0]) + ", " +
         (values ? e.out(op.outputs[0]) : std::string("nullptr")) + ", " + e.out(op.outputs[values ? 1 : 0]);
}

void register_sort(Registry& r) {
  r.add_lowering("aten::topk", lower_topk);
  r.add_lowering("aten::sort", sort_or_argsort(true));
  r.add_lowering("aten::argsort", sort_or_argsort(false));
  r.add_lowering("aten::msort", lower_msort);
  r.add_ir_op(ir::kind::sort, emit_sort);
}

}  // namespace aotc::ops
