// pixel_shuffle, pixel_unshuffle and channel_shuffle: a reshape, a permute and a reshape,
// i.e. one strided view (strided_view.h) materialised by one copy_strided.
#include "strided_view.h"

namespace aotc::ops {
namespace {

// Leading batch dims (any number) are merged into one.
int64_t batch_of(const ir::Shape& s, size_t trailing) {
  return ir::numel(ir::Shape(s.begin(), s.end() - static_cast<std::ptrdiff_t>(trailing)));
}

// Views x (dense, through an alias) as `dims`, permutes by `order` and reshapes to `out`.
void shuffle(LowerContext& ctx, const ir::Shape& dims, const std::vector<int64_t>& order,
             const ir::Shape& out) {
  const int reshaped = ctx.graph.add_alias(ctx.tensor(0), dims);
  const int moved = materialize(ctx, permute_view(view_of(ctx.graph, reshaped), order), -1);
  ctx.set_tensor_output(0, ctx.graph.add_alias(moved, out));
}

// pixel_shuffle(self, upscale_factor): [*, C r^2, H, W] -> [*, C, H r, W r]
void lower_pixel_shuffle(LowerContext& ctx) {
  const ir::Shape x = ctx.value(0).shape;
  const int64_t r = ctx.int_arg(1);
  if (x.size() < 3) ctx.fail("pixel_shuffle expects at least 3 dimensions, got shape " + ir::shape_str(x));
  if (r <= 0) ctx.fail("upscale_factor must be positive, got " + std::to_string(r));
  const size_t n = x.size();
  const int64_t c = x[n - 3], h = x[n - 2], w = x[n - 1];
  if (c % (r * r))
    ctx.fail("the channel count " + std::to_string(c) + " is not divisible by the square of " +
             std::to_string(r));
  ir::Shape out(x.begin(), x.end() - 3);
  out.insert(out.end(), {c / (r * r), h * r, w * r});
  shuffle(ctx, {batch_of(x, 3), c / (r * r), r, r, h, w}, {0, 1, 4, 2, 5, 3}, out);
}

// pixel_unshuffle(self, downscale_factor): [*, C, H r, W r] -> [*, C r^2, H, W]
void lower_pixel_unshuffle(LowerContext& ctx) {
  const ir::Shape x = ctx.value(0).shape;
  const int64_t r = ctx.int_arg(1);
  if (x.size() < 3) ctx.fail("pixel_unshuffle expects at least 3 dimensions, got shape " + ir::shape_str(x));
  if (r <= 0) ctx.fail("downscale_factor must be positive, got " + std::to_string(r));
  const size_t n = x.size();
  const int64_t c = x[n - 3], h = x[n - 2], w = x[n - 1];
  if (h % r || w % r)
    ctx.fail("the spatial size " + std::to_string(h) + "x" + std::to_string(w) + " is not divisible by " +
             std::to_string(r));
  ir::Shape out(x.begin(), x.end() - 3);
  out.insert(out.end(), {c * r * r, h / r, w / r});
  shuffle(ctx, {batch_of(x, 3), c, h / r, r, w / r, r}, {0, 1, 3, 5, 2, 4}, out);
}

// channel_shuffle(self, groups): [N, g * k, *] -> channels reordered as [N, k, g, *].
void lower_channel_shuffle(LowerContext& ctx) {
  const ir::Shape x = ctx.value(0).shape;
  const int64_t g = ctx.int_arg(1);
  if (x.size() < 3) ctx.fail("channel_shuffle expects at least 3 dimensions, got shape " + ir::shape_str(x));
  if (g <= 0 || x[1] % g)
    ctx.fail("the channel count " + std::to_string(x[1]) + " is not divisible by groups " +
             std::to_string(g));
  const int64_t spatial = ir::numel(ir::Shape(x.begin() + 2, x.end()));
  shuffle(ctx, {x[0], g, x[1] / g, spatial}, {0, 2, 1, 3}, x);
}

}  // namespace

void register_pixel_shuffle(Registry& r) {
  r.add_lowering("aten::pixel_shuffle", lower_pixel_shuffle);
  r.add_lowering("aten::pixel_unshuffle", lower_pixel_unshuffle);
  r.add_lowering("aten::channel_shuffle", lower_channel_shuffle);
  r.add_lowering("aten::native_channel_shuffle", lower_channel_shuffle);
}

}  // namespace aotc::ops
