// scatter / scatter_ (src tensor or scalar value, no reduce) -> IR "scatter": self copied to
// the output, then the runtime scatter writes one element per index.
#include "assemble.h"
#include "indexing.h"

namespace aotc::ops {
namespace {

void lower_scatter(LowerContext& ctx) {
  if (ctx.num_inputs() > 4 && !ctx.is_none(4)) ctx.fail("scatter with reduce= is not supported");
  const ir::Value& x = ctx.value(0);
  const ir::Value& index = ctx.value(2);
  if (index.dtype != ir::DType::Int64 && index.dtype != ir::DType::Int32)
    ctx.fail(std::string("the index must be int64 or int32, got ") + ir::dtype_name(index.dtype));
  if (x.shape.empty() || index.shape.size() != x.shape.size())
    ctx.fail("index " + ir::shape_str(index.shape) + " and self " + ir::shape_str(x.shape) +
             " must have the same number of dimensions (at least 1)");
  const int64_t dim = normalize_dim(ctx, ctx.int_arg(1), static_cast<int64_t>(x.shape.size()));
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (static_cast<int64_t>(d) != dim && index.shape[d] > x.shape[d])
      ctx.fail("index " + ir::shape_str(index.shape) + " is larger than self " + ir::shape_str(x.shape) +
               " outside dimension " + std::to_string(dim));
  const int out = ctx.new_value(x.dtype, x.shape);
  std::vector<int> inputs = {ctx.tensor(0), ctx.tensor(2)};
  ir::Op* op = nullptr;
  if (ctx.arg(3).is_tensor()) {
    const ir::Value& src = ctx.value(3);
    if (src.dtype != x.dtype)
      ctx.fail(std::string("src has dtype ") + ir::dtype_name(src.dtype) + ", self " +
               ir::dtype_name(x.dtype));
    if (src.shape.size() != index.shape.size())
      ctx.fail("src " + ir::shape_str(src.shape) + " and index " + ir::shape_str(index.shape) +
               " must have the same number of dimensions");
    for (size_t d = 0; d < src.shape.size(); ++d)
      if (index.shape[d] > src.shape[d])
        ctx.fail("index " + ir::shape_str(index.shape) + " is larger than src " + ir::shape_str(src.shape));
    inputs.push_back(ctx.tensor(3));
    op = &ctx.add_op(ir::kind::scatter, inputs, {out});
  } else {
    const std::vector<uint8_t> value = scalar_bytes(ctx, x.dtype, ctx.arg(3));
    op = &ctx.add_op(ir::kind::scatter, inputs, {out});
    op->attrs["value"] = std::vector<int64_t>(value.begin(), value.end());
  }
  op->attrs["dim"] = dim;
  // For the CUDA scratch (scatter_cuda.cpp), which is planned from the op alone.
  op->attrs["index_shape"] = index.shape;
  op->attrs["y_dim_size"] = x.shape[static_cast<size_t>(dim)];
  if (ir::numel(index.shape) > 0 && x.shape[static_cast<size_t>(dim)] == 0)
    ctx.fail("cannot scatter into an empty dimension");
  ctx.set_tensor_output(0, out);
}

std::string emit_scatter(const EmitContext& e, const ir::Op& op) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  const bool has_src = op.inputs.size() > 2;
  const std::string params = scatter_params_code(e, op);
  std::string src = has_src ? e.in(op.inputs[2]) : "value";
  const std::string copy = "std::memcpy(" + e.out(op.outputs[0]) + ", " + e.in(op.inputs[0]) + ", " +
                           std::to_string(y.bytes()) + "); ";
  return kernel_call(op, params,
                     copy + "aotc::rt::scatter(pool, p, " + src + ", " + e.in(op.inputs[1]) + ", " +
                         e.out(op.outputs[0]) + ");");
}

}  // namespace

std::string scatter_params_code(const EmitContext& e, const ir::Op& op) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  const ir::Value& index = e.graph.value(op.inputs[1]);
  const int64_t elem = ir::dtype_size(y.dtype);
  const bool has_src = op.inputs.size() > 2;
  ParamsCode p("aotc::rt::ScatterParams");
  p.set("rank", static_cast<int64_t>(index.shape.size()))
      .set("dim", op.i("dim"))
      .set_array("dims", index.shape)
      .set_array("y_strides", dense_strides(y.shape))
      .set_array("src_strides", has_src ? dense_strides(e.graph.value(op.inputs[2]).shape)
                                        : std::vector<int64_t>(index.shape.size(), 0))
      .set("y_dim_size", y.shape[static_cast<size_t>(op.i("dim"))])
      .set("elem_size", elem)
      .set("index_elem_size", ir::dtype_size(index.dtype));
  std::string params = p.str();
  if (!has_src) {
    params += " const unsigned char value[8] = {";
    for (int64_t b : op.ints("value")) params += std::to_string(b) + ",";
    params += "};";
  }
  return params;
}

void register_scatter(Registry& r) {
  r.add_lowering("aten::scatter", lower_scatter);
  r.add_lowering("aten::scatter_", lower_scatter);
  r.add_ir_op(ir::kind::scatter, emit_scatter);
}

}  // namespace aotc::ops
