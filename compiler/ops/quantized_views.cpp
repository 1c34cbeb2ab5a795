// quantized_views.cpp: the views and copies of a quantized tensor (flatten, reshape,
// transpose, chunk, ...): the float lowerings move bytes of any dtype, so each runs as it
// is, on the tensor in NCHW order, and its results keep the input's scale and zero point.
#include "quantized.h"

namespace aotc::ops {
namespace {

// Runs torch_name's own lowering on the quantized arguments made row-major.
void lower_quantized_view(LowerContext& ctx, const std::string& torch_name) {
  const LowerFn* inner = Registry::get().find_lowering(torch_name);
  if (!inner) ctx.fail("internal: no lowering of " + torch_name);
  std::optional<ir::QuantParams> q;
  std::vector<Operand> args = ctx.inputs;
  auto row_major = [&](int& id) {
    if (id < 0 || !ctx.graph.value(id).quant) return;
    if (q && (q->scale != ctx.graph.value(id).quant->scale ||
              q->zero_point != ctx.graph.value(id).quant->zero_point))
      ctx.fail("the quantized arguments have different scales or zero points");
    id = quantized_in_layout(ctx, id, false);
    q = ctx.graph.value(id).quant;
  };
  for (Operand& o : args) {
    if (o.kind == Operand::Kind::Tensor) row_major(o.tensor);
    if (o.kind == Operand::Kind::TensorList)
      for (int& id : o.tensors) row_major(id);
  }
  LowerContext view(ctx.graph, ctx.op_name, std::move(args), ctx.outputs.size(), ctx.loc);
  (*inner)(view);
  for (size_t i = 0; i < view.outputs.size(); ++i) {
    Operand o = view.outputs[i];
    auto mark = [&](int id) {
      if (id >= 0 && ctx.graph.value(id).dtype == ir::DType::UInt8) ctx.graph.value(id).quant = q;
    };
    if (o.kind == Operand::Kind::Tensor) mark(o.tensor);
    if (o.kind == Operand::Kind::TensorList)
      for (int id : o.tensors) mark(id);
    ctx.set_output(i, std::move(o));
  }
}

}  // namespace

void register_quantized_views(Registry& r) {
  for (const char* name : {"aten::view",       "aten::reshape",   "aten::flatten",
                           "aten::unflatten",  "aten::squeeze",   "aten::unsqueeze",
                           "aten::contiguous", "aten::clone",     "aten::detach",
                           "aten::dropout",    "aten::dropout_",  "aten::feature_dropout",
                           "aten::permute",    "aten::transpose", "aten::t",
                           "aten::chunk",      "aten::split",     "aten::split_with_sizes",
                           "aten::unbind",     "aten::slice",     "aten::narrow",
                           "aten::select"}) {
    const std::string torch_name = name;
    r.add_quantized_lowering(torch_name,
                             [torch_name](LowerContext& ctx) { lower_quantized_view(ctx, torch_name); });
  }
}

}  // namespace aotc::ops
