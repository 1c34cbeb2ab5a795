// scan.cpp: aten::cumprod(self, dim, *, dtype) (and cumprod_), aten::logcumsumexp(self, dim),
// aten::cummax / aten::cummin(self, dim) -> IR "scan" -> aotc::rt::scan on an [outer, axis,
// inner] view (cumsum has its own op, cumsum.cpp). cumprod multiplies integer and bool
// tensors in int64, as torch; cummax and cummin keep the input's dtype for their values
// (int32 and bool through int64) and give int64 indices.
#include "elementwise.h"

namespace aotc::ops {
namespace {

using rt::ScanOp;

// The scan of x (float32 or int64) along dim: its outputs (values, then indices for Max and
// Min).
std::vector<int> add_scan(LowerContext& ctx, ScanOp kind, int x, int64_t dim_arg) {
  const ir::Value& v = ctx.graph.value(x);
  const int64_t rank = static_cast<int64_t>(v.shape.size());
  const int64_t dim = normalize_dim(ctx, dim_arg, rank ? rank : 1);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim && d < rank; ++d) outer *= v.shape[static_cast<size_t>(d)];
  for (int64_t d = dim + 1; d < rank; ++d) inner *= v.shape[static_cast<size_t>(d)];
  std::vector<int> outputs{ctx.new_value(v.dtype, v.shape)};
  if (kind == ScanOp::Max || kind == ScanOp::Min) outputs.push_back(ctx.new_value(ir::DType::Int64, v.shape));
  ir::Op& op = ctx.add_op(ir::kind::scan, {x}, outputs);
  op.attrs = {{"op", static_cast<int64_t>(kind)},
              {"outer", outer},
              {"axis", rank ? v.shape[static_cast<size_t>(dim)] : 1},
              {"inner", inner}};
  return outputs;
}

void lower_cumprod(LowerContext& ctx) {
  ir::DType t = is_float(ctx.value(0).dtype) ? ir::DType::Float32 : ir::DType::Int64;
  if (ctx.num_inputs() > 2 && !ctx.is_none(2)) t = dtype_from_torch(ctx, ctx.int_arg(2));
  if (t != ir::DType::Float32 && t != ir::DType::Int64)
    ctx.fail("cumprod multiplies in float32 or int64 only");
  set_elementwise_output(ctx, add_scan(ctx, ScanOp::Prod, cast_to(ctx, ctx.tensor(0), t), ctx.int_arg(1))[0]);
}

void lower_logcumsumexp(LowerContext& ctx) {
  ctx.require_float32({0});
  ctx.set_tensor_output(0, add_scan(ctx, ScanOp::LogAddExp, ctx.tensor(0), ctx.int_arg(1))[0]);
}

LowerFn extremum(ScanOp kind) {
  return [kind](LowerContext& ctx) {
    const ir::DType t = ctx.value(0).dtype;
    const bool wide = t == ir::DType::Float32 || t == ir::DType::Int64;
    if (!wide && t != ir::DType::Int32 && t != ir::DType::Bool)
      ctx.fail(std::string("takes a float32, integer or bool tensor, got ") + ir::dtype_name(t));
    const int x = wide ? ctx.tensor(0) : cast_to(ctx, ctx.tensor(0), ir::DType::Int64);
    const std::vector<int> outputs = add_scan(ctx, kind, x, ctx.int_arg(1));
    ctx.set_tensor_output(0, wide ? outputs[0] : cast_to(ctx, outputs[0], t));
    ctx.set_tensor_output(1, outputs[1]);
  };
}

std::string emit_scan(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, "", "aotc::rt::scan(pool, " + scan_arguments(e, op) + ");");
}

}  // namespace

std::string scan_arguments(const EmitContext& e, const ir::Op& op) {
  static const char* const kNames[] = {"Prod", "LogAddExp", "Max", "Min"};
  return std::string("aotc::rt::ScanOp::") + kNames[op.i("op")] + ", " +
         elem_type_code(e.graph.value(op.inputs[0]).dtype) + ", " + std::to_string(op.i("outer")) + ", " +
         std::to_string(op.i("axis")) + ", " + std::to_string(op.i("inner")) + ", " + e.in(op.inputs[0]) +
         ", " + e.out(op.outputs[0]) + ", " +
         (op.outputs.size() > 1 ? e.out(op.outputs[1]) : std::string("nullptr"));
}

void register_scan(Registry& r) {
  register_with_inplace(r, "aten::cumprod", lower_cumprod);
  r.add_lowering("aten::logcumsumexp", lower_logcumsumexp);
  r.add_lowering("aten::special_logcumsumexp", lower_logcumsumexp);
  r.add_lowering("aten::cummax", extremum(ScanOp::Max));
  r.add_lowering("aten::cummin", extremum(ScanOp::Min));
  r.add_ir_op(ir::kind::scan, emit_scan);
}

}  // namespace aotc::ops
