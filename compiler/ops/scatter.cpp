// scatter / scatter_ (src tensor or scalar value, no reduce) -> IR "scatter": self copied to
// the output, then the runtime scatter writes one element per index. With reduce=, the
// op is scatter_reduce.cpp's.
#include "assemble.h"
#include "indexing.h"

namespace aotc::ops {
namespace {

void lower_scatter(LowerContext& ctx) {
  if (ctx.num_inputs() > 4 && !ctx.is_none(4)) return lower_scatter_with_reduce(ctx);
  const ir::Value& x = ctx.value(0);
  const bool has_src = ctx.arg(3).is_tensor();
  if (has_src && ctx.value(3).dtype != x.dtype)
    ctx.fail(std::string("src has dtype ") + ir::dtype_name(ctx.value(3).dtype) + ", self " +
             ir::dtype_name(x.dtype));
  const int64_t dim = check_scatter_operands(ctx, ctx.tensor(0), ctx.int_arg(1), ctx.tensor(2),
                                             ctx.value(2).shape, has_src ? ctx.tensor(3) : -1);
  const int out = ctx.new_value(x.dtype, x.shape);
  std::vector<int> inputs = {ctx.tensor(0), ctx.tensor(2)};
  ir::Op* op = nullptr;
  if (has_src) {
    inputs.push_back(ctx.tensor(3));
    op = &ctx.add_op(ir::kind::scatter, inputs, {out});
  } else {
    const std::vector<uint8_t> value = scalar_bytes(ctx, x.dtype, ctx.arg(3));
    op = &ctx.add_op(ir::kind::scatter, inputs, {out});
    op->attrs["value"] = std::vector<int64_t>(value.begin(), value.end());
  }
  op->attrs["dim"] = dim;
  // For the CUDA scratch (scatter_cuda.cpp), which is planned from the op alone.
  op->attrs["index_shape"] = ctx.value(2).shape;
  op->attrs["y_dim_size"] = x.shape[static_cast<size_t>(dim)];
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

int64_t check_scatter_operands(LowerContext& ctx, int self, int64_t dim_arg, int index_id,
                               const ir::Shape& index, int src_id) {
  const ir::Value& x = ctx.graph.value(self);
  check_index_dtype(ctx, ctx.graph.value(index_id).dtype);
  if (x.shape.empty() || index.size() != x.shape.size())
    ctx.fail("index " + ir::shape_str(index) + " and self " + ir::shape_str(x.shape) +
             " must have the same number of dimensions (at least 1)");
  const int64_t dim = normalize_dim(ctx, dim_arg, static_cast<int64_t>(x.shape.size()));
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (static_cast<int64_t>(d) != dim && index[d] > x.shape[d])
      ctx.fail("index " + ir::shape_str(index) + " is larger than self " + ir::shape_str(x.shape) +
               " outside dimension " + std::to_string(dim));
  if (src_id >= 0) {
    const ir::Value& src = ctx.graph.value(src_id);
    if (src.shape.size() != index.size())
      ctx.fail("src " + ir::shape_str(src.shape) + " and index " + ir::shape_str(index) +
               " must have the same number of dimensions");
    for (size_t d = 0; d < src.shape.size(); ++d)
      if (index[d] > src.shape[d])
        ctx.fail("index " + ir::shape_str(index) + " is larger than src " + ir::shape_str(src.shape));
  }
  if (ir::numel(index) > 0 && x.shape[static_cast<size_t>(dim)] == 0)
    ctx.fail("cannot scatter into an empty dimension");
  return dim;
}

std::string scatter_params_code(const EmitContext& e, const ir::Op& op) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  const ir::Value& index = e.graph.value(op.inputs[1]);
  const std::vector<int64_t>& dims = op.ints("index_shape");  // (scatter_reduce's may be broadcast)
  const int64_t elem = ir::dtype_size(y.dtype);
  const bool has_src = op.inputs.size() > 2;
  ParamsCode p("aotc::rt::ScatterParams");
  p.set("rank", static_cast<int64_t>(dims.size()))
      .set("dim", op.i("dim"))
      .set_array("dims", dims)
      .set_array("y_strides", dense_strides(y.shape))
      .set_array("src_strides", has_src ? dense_strides(e.graph.value(op.inputs[2]).shape)
                                        : std::vector<int64_t>(dims.size(), 0))
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
