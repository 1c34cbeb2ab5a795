// quantized_mean.cpp: aten::mean of a quantized 4-d tensor over its spatial dims (H and W:
// a global average pool, as shufflenet's head computes it) -> IR "qadaptive_avg_pool2d"
// with a 1x1 output, reshaped when keepdim is False. torch computes it that way too, with
// the input's scale and zero point.
#include "quantized.h"

namespace aotc::ops {
namespace {

void lower_qmean(LowerContext& ctx) {
  const ir::QuantParams q = ctx.quant(0);
  const ir::Shape x = ctx.value(0).shape;
  if (x.size() != 4) ctx.fail("aotc's quantized mean takes 4-d tensors, got " + ir::shape_str(x));
  std::vector<int64_t> dims = ctx.ints_arg(1);
  for (int64_t& d : dims) d = normalize_dim(ctx, d, 4);
  std::sort(dims.begin(), dims.end());
  if (dims != std::vector<int64_t>{2, 3})
    ctx.fail("aotc's quantized mean reduces the spatial dims [2, 3] only, got " +
             ir::shape_str(ctx.ints_arg(1)));
  const bool keepdim = ctx.num_inputs() > 2 && !ctx.is_none(2) && ctx.bool_arg(2);
  if (ctx.num_inputs() > 3 && !ctx.is_none(3)) ctx.fail("a dtype is not supported for a quantized mean");
  const int pooled = new_quantized_value(ctx, {x[0], x[1], 1, 1}, q);
  ir::Op& op = ctx.add_op(ir::kind::qadaptive_avg_pool2d, {ctx.tensor(0)}, {pooled});
  op.attrs = {{"n", x[0]},
              {"c", x[1]},
              {"h_in", x[2]},
              {"w_in", x[3]},
              {"h_out", int64_t{1}},
              {"w_out", int64_t{1}},
              {"channels_last", q.channels_last},
              {"zero", q.zero_point}};
  // One pixel per channel: NHWC and NCHW are the same bytes.
  const int out = keepdim ? pooled : ctx.graph.add_alias(pooled, {x[0], x[1]});
  ir::QuantParams out_q = q;
  out_q.channels_last = keepdim && q.channels_last;
  ctx.graph.value(out).quant = out_q;
  ctx.set_tensor_output(0, out);
}

}  // namespace

void register_quantized_mean(Registry& r) { r.add_quantized_lowering("aten::mean", lower_qmean); }

}  // namespace aotc::ops
