// aten::cat -> IR "concat" -> one copy_strided per input into its slice of the output.
#include "op_helpers.h"

namespace aotc::ops {
namespace {

void lower_cat(LowerContext& ctx) {
  const Operand& list = ctx.arg(0);
  if (list.kind != Operand::Kind::TensorList || list.tensors.empty())
    ctx.fail("argument 0 must be a non-empty list of tensors, got " + list.describe());
  const int64_t dim_arg = ctx.num_inputs() > 1 ? ctx.int_arg(1) : 0;
  // torch skips 1-d empty tensors in cat (legacy behaviour).
  std::vector<int> parts;
  for (int id : list.tensors) {
    const ir::Shape& s = ctx.graph.value(id).shape;
    if (!(s.size() == 1 && s[0] == 0)) parts.push_back(id);
  }
  if (parts.empty()) parts.push_back(list.tensors[0]);
  const ir::Value& first = ctx.graph.value(parts[0]);
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  if (rank == 0) ctx.fail("zero-dimensional tensors cannot be concatenated");
  const int64_t dim = normalize_dim(ctx, dim_arg, rank);
  ir::Shape y = first.shape;
  y[static_cast<size_t>(dim)] = 0;
  for (int id : parts) {
    const ir::Value& v = ctx.graph.value(id);
    if (v.dtype != first.dtype) ctx.fail("tensors of different dtypes cannot be concatenated yet");
    bool ok = v.shape.size() == first.shape.size();
    for (size_t d = 0; ok && d < v.shape.size(); ++d)
      ok = d == static_cast<size_t>(dim) || v.shape[d] == first.shape[d];
    if (!ok)
      ctx.fail("shapes " + ir::shape_str(first.shape) + " and " + ir::shape_str(v.shape) +
               " differ outside dimension " + std::to_string(dim));
    y[static_cast<size_t>(dim)] += v.shape[static_cast<size_t>(dim)];
  }
  const int out = ctx.new_value(first.dtype, y);
  ir::Op& op = ctx.add_op("concat", parts, {out});
  op.attrs = {{"dim", dim}};
  ctx.set_tensor_output(0, out);
}

std::string emit_concat(const EmitContext& e, const ir::Op& op) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  const size_t dim = static_cast<size_t>(op.i("dim"));
  const std::vector<int64_t> dst = dense_strides(y.shape);
  const int64_t elem = ir::dtype_size(y.dtype);
  std::string code;
  int64_t offset = 0;  // elements along dim already written
  for (int id : op.inputs) {
    const ir::Shape& s = e.graph.value(id).shape;
    ParamsCode p("aotc::rt::CopyParams");
    p.set("rank", static_cast<int64_t>(s.size()))
        .set("elem_size", elem)
        .set_array("dims", s)
        .set_array("src_strides", dense_strides(s))
        .set_array("dst_strides", dst);
    const std::string target = "reinterpret_cast<unsigned char*>(" + e.out(op.outputs[0]) + ") + " +
                               std::to_string(offset * dst[dim] * elem);
    code += kernel_call(op, p.str(), "aotc::rt::copy_strided(pool, p, " + e.in(id) + ", " + target + ");");
    offset += s[dim];
  }
  return code;
}

}  // namespace

void register_cat(Registry& r) {
  r.add_lowering("aten::cat", lower_cat);
  r.add_lowering("aten::concat", lower_cat);
  r.add_ir_op("concat", emit_concat);
}

}  // namespace aotc::ops
