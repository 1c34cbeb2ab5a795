// aten::affine_grid_generator (F.affine_grid, 2-d) -> a constant base grid times each
// theta: grid[n] (H*W x 2) = base (H*W x 3) theta[n]^T, one batched GEMM whose left
// operand is shared by every image. base[h, w] = (x_w, y_h, 1) with torch's
// linspace_from_neg_one positions.
#include "gemm.h"
#include "spatial.h"

namespace aotc::ops {
namespace {

// torch's linspace_from_neg_one: -1..1 in `steps` values, scaled by (steps - 1) / steps
// without align_corners; 0 for a single step.
std::vector<float> positions(int64_t steps, bool align_corners) {
  std::vector<float> v(static_cast<size_t>(steps), 0.0f);
  if (steps <= 1) return v;
  for (int64_t i = 0; i < steps; ++i) {
    // at::linspace in float: start + i * step for the first half, end - (steps - 1 - i) *
    // step for the second, as torch computes it.
    const float step = 2.0f / static_cast<float>(steps - 1);
    v[static_cast<size_t>(i)] = i < steps / 2 ? -1.0f + step * static_cast<float>(i)
                                              : 1.0f - step * static_cast<float>(steps - 1 - i);
    if (!align_corners)
      v[static_cast<size_t>(i)] =
          v[static_cast<size_t>(i)] * static_cast<float>(steps - 1) / static_cast<float>(steps);
  }
  return v;
}

// (theta, size, align_corners)
void lower_affine_grid(LowerContext& ctx) {
  ctx.require_float32({0});
  const ir::Shape theta = ctx.value(0).shape;
  const std::vector<int64_t> size = ctx.ints_arg(1);
  if (size.size() != 4)
    ctx.fail("only 2-d affine grids (size N, C, H, W) are supported, got size " + ir::shape_str(size));
  if (theta.size() != 3 || theta[0] != size[0] || theta[1] != 2 || theta[2] != 3)
    ctx.fail("theta must be N x 2 x 3 with N = " + std::to_string(size[0]) + ", got " + ir::shape_str(theta));
  const int64_t n = size[0], h = size[2], w = size[3];
  const bool align_corners = ctx.bool_arg(2);
  const std::vector<float> xs = positions(w, align_corners), ys = positions(h, align_corners);
  std::vector<float> base(static_cast<size_t>(h * w * 3));
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < w; ++j) {
      float* cell = base.data() + (i * w + j) * 3;
      cell[0] = xs[static_cast<size_t>(j)];
      cell[1] = ys[static_cast<size_t>(i)];
      cell[2] = 1.0f;
    }
  const int base_id = ctx.graph.add_f32_constant({h * w, 3}, std::move(base));
  const int out = ctx.new_value(ir::DType::Float32, {n, h, w, 2});
  GemmShape g;
  g.m = h * w;
  g.n = 2;
  g.k = 3;
  g.trans_b = true;  // theta[n] is stored 2 x 3
  g.batch = n;
  g.stride_a = 0;  // the base grid is shared
  g.stride_b = 6;
  make_gemm(ctx, g, base_id, ctx.tensor(0), -1, out);
  ctx.set_tensor_output(0, out);
}

}  // namespace

void register_affine_grid(Registry& r) { r.add_lowering("aten::affine_grid_generator", lower_affine_grid); }

}  // namespace aotc::ops
