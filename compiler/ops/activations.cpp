// More activations -> IR "unary" (and "binary", "copy" for prelu and glu): elu, selu,
// celu, softplus, mish, log_sigmoid, threshold, hardshrink, softshrink, prelu, glu.
// (softsign and tanhshrink are Python compositions of abs/add/div and tanh/sub.)
#include "elementwise.h"

namespace aotc::ops {
namespace {

using rt::UnaryOp;

double number_or(const LowerContext& ctx, size_t i, double fallback) {
  return ctx.num_inputs() > i && !ctx.is_none(i) ? ctx.double_arg(i) : fallback;
}

// elu(self, alpha=1, scale=1, input_scale=1) = scale * (x > 0 ? x : alpha (exp(input_scale x) - 1))
void lower_elu(LowerContext& ctx) {
  const double alpha = number_or(ctx, 1, 1.0), scale = number_or(ctx, 2, 1.0),
               input_scale = number_or(ctx, 3, 1.0);
  const int x = cast_to(ctx, ctx.tensor(0), ir::DType::Float32);
  int y = add_unary_op(ctx, UnaryOp::Elu, x, alpha, input_scale);
  if (scale != 1.0) y = add_unary_op(ctx, UnaryOp::ScaleShift, y, scale, 0.0);
  set_elementwise_output(ctx, y);
}

// celu(self, alpha=1) = elu with input_scale 1 / alpha
void lower_celu(LowerContext& ctx) {
  const double alpha = number_or(ctx, 1, 1.0);
  if (alpha == 0.0) ctx.fail("celu with alpha 0 is undefined");
  lower_unary(ctx, UnaryOp::Elu, alpha, 1.0 / alpha);
}

// prelu(self, weight): weight has 1 or C = self.size(1) entries, one per channel (dim 1).
void lower_prelu(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  const ir::Value& w = ctx.value(1);
  if (x.dtype != ir::DType::Float32 || w.dtype != ir::DType::Float32) ctx.fail("prelu needs float32 tensors");
  const int64_t n = ir::numel(w.shape);
  int weight = ctx.tensor(1);
  if (n != 1) {
    if (x.shape.size() < 2 || x.shape[1] != n) {
      if (!(x.shape.size() == 1 && x.shape[0] == n))
        ctx.fail("prelu weight of " + std::to_string(n) + " entries does not match the channels of " +
                 ir::shape_str(x.shape));
    } else {
      ir::Shape shape(x.shape.size() - 1, 1);
      shape[0] = n;
      weight = ctx.graph.add_alias(weight, shape);
    }
  } else {
    weight = ctx.graph.add_alias(weight, {});
  }
  ctx.set_tensor_output(0, add_binary_op(ctx, rt::BinaryOp::PRelu, ctx.tensor(0), weight));
}

// A dense copy of x[..., start:start+len, ...] along dim (an IR "copy" from a view).
int slice_copy(LowerContext& ctx, int x, int64_t dim, int64_t start, int64_t len) {
  const ir::Value& v = ctx.graph.value(x);
  const std::vector<int64_t> strides = dense_strides(v.shape);
  const int64_t offset = start * strides[static_cast<size_t>(dim)];
  const int src = ctx.graph.add_alias(x, {ir::numel(v.shape) - offset}, offset * ir::dtype_size(v.dtype));
  ir::Shape shape = v.shape;
  shape[static_cast<size_t>(dim)] = len;
  const int out = ctx.new_value(v.dtype, shape);
  ir::Op& op = ctx.add_op(ir::kind::copy, {src}, {out});
  op.attrs = {{"dims", shape},
              {"src_strides", strides},
              {"dst_strides", dense_strides(shape)},
              {"elem_size", ir::dtype_size(v.dtype)}};
  return out;
}

// glu(self, dim=-1) = a * sigmoid(b), a and b the halves of self along dim.
void lower_glu(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  if (x.dtype != ir::DType::Float32) ctx.fail("glu needs a float32 tensor");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) ctx.fail("glu does not support 0-d tensors");
  const int64_t dim = normalize_dim(ctx, ctx.num_inputs() > 1 ? ctx.int_arg(1) : -1, rank);
  const int64_t size = x.shape[static_cast<size_t>(dim)];
  if (size % 2)
    ctx.fail("glu halves dim " + std::to_string(dim) + " of even size, got " + std::to_string(size));
  const int a = slice_copy(ctx, ctx.tensor(0), dim, 0, size / 2);
  const int b = slice_copy(ctx, ctx.tensor(0), dim, size / 2, size / 2);
  ctx.set_tensor_output(0, add_binary_op(ctx, rt::BinaryOp::Mul, a, add_unary_op(ctx, UnaryOp::Sigmoid, b)));
}

}  // namespace

void register_activations(Registry& r) {
  register_with_inplace(r, "aten::elu", lower_elu);
  register_with_inplace(r, "aten::selu", [](LowerContext& c) { lower_unary(c, UnaryOp::Selu); });
  register_with_inplace(r, "aten::celu", lower_celu);
  r.add_lowering("aten::softplus", [](LowerContext& c) {
    lower_unary(c, UnaryOp::Softplus, number_or(c, 1, 1.0), number_or(c, 2, 20.0));
  });
  register_with_inplace(r, "aten::mish", [](LowerContext& c) { lower_unary(c, UnaryOp::Mish); });
  r.add_lowering("aten::log_sigmoid", [](LowerContext& c) { lower_unary(c, UnaryOp::LogSigmoid); });
  register_with_inplace(r, "aten::threshold", [](LowerContext& c) {
    lower_unary(c, UnaryOp::Threshold, c.double_arg(1), c.double_arg(2));
  });
  r.add_lowering("aten::hardshrink",
                 [](LowerContext& c) { lower_unary(c, UnaryOp::Hardshrink, number_or(c, 1, 0.5)); });
  r.add_lowering("aten::softshrink",
                 [](LowerContext& c) { lower_unary(c, UnaryOp::Softshrink, number_or(c, 1, 0.5)); });
  r.add_lowering("aten::prelu", lower_prelu);
  r.add_lowering("aten::_prelu_kernel", lower_prelu);
  r.add_lowering("aten::glu", lower_glu);
}

}  // namespace aotc::ops
