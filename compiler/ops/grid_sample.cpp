// aten::grid_sampler / grid_sampler_2d (F.grid_sample on 4-d inputs) -> IR "grid_sample" ->
// grid_sample_f32: bilinear or nearest, zeros / border / reflection padding.
#include <aotc/rt/kernels.h>

#include "spatial.h"

namespace aotc::ops {
namespace {

// (input, grid, interpolation_mode, padding_mode, align_corners)
void lower_grid_sampler(LowerContext& ctx) {
  ctx.require_float32({0, 1});
  const ir::Shape x = ctx.value(0).shape, grid = ctx.value(1).shape;
  if (x.size() != 4)
    ctx.fail("only 2-d grid sampling (4-d input) is supported, got input " + ir::shape_str(x));
  if (grid.size() != 4 || grid[0] != x[0] || grid[3] != 2)
    ctx.fail("grid must be N x H x W x 2 with the input's N, got " + ir::shape_str(grid) + " for input " +
             ir::shape_str(x));
  const int64_t mode = ctx.int_arg(2), padding = ctx.int_arg(3);
  if (mode != 0 && mode != 1) ctx.fail("only bilinear and nearest grid sampling are supported (not bicubic)");
  if (padding < 0 || padding > 2) ctx.fail("unknown padding mode " + std::to_string(padding));
  const int out = ctx.new_value(ir::DType::Float32, {x[0], x[1], grid[1], grid[2]});
  ir::Op& op = ctx.add_op(ir::kind::grid_sample, {ctx.tensor(0), ctx.tensor(1)}, {out});
  op.attrs = {{"n", x[0]},    {"c", x[1]},          {"h_in", x[2]},
              {"w_in", x[3]}, {"h_out", grid[1]},   {"w_out", grid[2]},
              {"mode", mode}, {"padding", padding}, {"align_corners", ctx.bool_arg(4)}};
  ctx.set_tensor_output(0, out);
}

std::string emit_grid_sample(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, grid_sample_params_code(op).str(),
                     "aotc::rt::grid_sample_f32(pool, p, " + e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) +
                         ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

ParamsCode grid_sample_params_code(const ir::Op& op) {
  ParamsCode p("aotc::rt::GridSampleParams");
  p.set("n", op.i("n"))
      .set("c", op.i("c"))
      .set("h_in", op.i("h_in"))
      .set("w_in", op.i("w_in"))
      .set("h_out", op.i("h_out"))
      .set("w_out", op.i("w_out"))
      .raw("mode", "static_cast<aotc::rt::GridSampleMode>(" + std::to_string(op.i("mode")) + ")")
      .raw("padding", "static_cast<aotc::rt::GridSamplePadding>(" + std::to_string(op.i("padding")) + ")")
      .set_bool("align_corners", op.b("align_corners"));
  return p;
}

void register_grid_sample(Registry& r) {
  r.add_lowering("aten::grid_sampler", lower_grid_sampler);
  r.add_lowering("aten::grid_sampler_2d", lower_grid_sampler);
  r.add_ir_op(ir::kind::grid_sample, emit_grid_sample);
}

}  // namespace aotc::ops
