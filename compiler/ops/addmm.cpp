// aten::addmm(self, mat1, mat2, beta, alpha) = beta * self + alpha * mat1 @ mat2.
// The bias broadcast patterns the GEMM epilogue knows are fused; others are added after.
#include "gemm.h"
#include "op_helpers.h"

namespace aotc::ops {
namespace {

void lower_addmm(LowerContext& ctx) {
  ctx.require_float32({0, 1, 2});
  const ir::Shape s = ctx.value(0).shape, a = ctx.value(1).shape, b = ctx.value(2).shape;
  if (a.size() != 2 || b.size() != 2 || a[1] != b[0])
    ctx.fail("mat1 " + ir::shape_str(a) + " and mat2 " + ir::shape_str(b) + " cannot be multiplied");
  GemmShape g;
  g.m = a[0];
  g.n = b[1];
  g.k = a[1];
  g.beta = ctx.num_inputs() > 3 ? ctx.double_arg(3) : 1.0;
  g.alpha = ctx.num_inputs() > 4 ? ctx.double_arg(4) : 1.0;
  const ir::Shape out_shape = {g.m, g.n};
  if (broadcast_shapes(ctx, s, out_shape) != out_shape)
    ctx.fail("self " + ir::shape_str(s) + " does not broadcast to the product's shape " +
             ir::shape_str(out_shape));
  const int64_t count = ir::numel(s);
  if (count == g.n && (s.size() == 1 || s[0] == 1) && g.n > 1)
    g.bias_kind = rt::BiasKind::PerColumn;
  else if (s.size() == 2 && s[0] == g.m && s[1] == 1 && g.m > 1)
    g.bias_kind = rt::BiasKind::PerRow;
  else if (count == g.m * g.n)
    g.bias_kind = rt::BiasKind::Full;
  const int out = ctx.new_value(ir::DType::Float32, out_shape);
  if (g.bias_kind != rt::BiasKind::None) {
    make_gemm(ctx, g, ctx.tensor(1), ctx.tensor(2), ctx.tensor(0), out);
    ctx.set_tensor_output(0, out);
    return;
  }
  // A scalar-like bias: product first, then a broadcasting add of beta * self.
  make_gemm(ctx, g, ctx.tensor(1), ctx.tensor(2), -1, out);
  const int sum = ctx.new_value(ir::DType::Float32, out_shape);
  ir::Op& add = ctx.add_op(ir::kind::binary, {out, ctx.tensor(0)}, {sum});
  add.attrs = {{"op", int64_t{0}}, {"alpha", g.beta}};
  ctx.set_tensor_output(0, sum);
}

}  // namespace

void register_addmm(Registry& r) { r.add_lowering("aten::addmm", lower_addmm); }

}  // namespace aotc::ops
