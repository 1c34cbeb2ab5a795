// spatial.cpp - helpers shared by the convolution, pooling and normalisation op files.
#include "spatial.h"

#include <algorithm>

namespace aotc::ops {

std::vector<int64_t> spatial_values(const LowerContext& ctx, std::vector<int64_t> v, size_t spatial,
                                    const char* what) {
  if (v.size() == 1) v.assign(spatial, v[0]);
  if (v.size() != spatial)
    ctx.fail(std::string(what) + " must have 1 or " + std::to_string(spatial) + " values, got " +
             ir::shape_str(v));
  return v;
}

std::vector<int64_t> pair_of_at_least(const LowerContext& ctx, size_t arg, const char* name, int64_t least) {
  const std::vector<int64_t> v = ctx.ints_arg(arg);
  if (v.size() != 2) ctx.fail(std::string(name) + " must have 2 elements, got " + ir::shape_str(v));
  for (int64_t e : v)
    if (e < least)
      ctx.fail(std::string(name) + " must be at least " + std::to_string(least) + ", got " +
               ir::shape_str(v));
  return v;
}

std::pair<int64_t, int64_t> blocks_inside(int64_t size, int64_t blocks, int64_t start, int64_t stride) {
  const int64_t first = start >= 0 ? 0 : (-start + stride - 1) / stride;
  if (size - 1 - start < 0) return {0, 0};
  const int64_t last = std::min(blocks - 1, (size - 1 - start) / stride);
  return {first, std::max<int64_t>(0, last - first + 1)};
}

std::vector<int64_t> as_3d(const std::vector<int64_t>& v, int64_t fill) {
  std::vector<int64_t> r(3 - v.size(), fill);
  r.insert(r.end(), v.begin(), v.end());
  return r;
}

int64_t pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                    bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = span / stride + 1;  // span >= 0 is checked by the caller
  // The last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

void lower_any_conv(LowerContext& ctx, const ConvArgs& a) {
  const size_t rank = ctx.graph.value(a.w).shape.size();
  if (a.transposed) return lower_conv_transpose(ctx, a);
  if (rank == 5) return lower_conv3d(ctx, a);
  if (rank == 3 || rank == 4) return lower_conv2d(ctx, a);
  ctx.fail("the weight of a convolution must be 3-d, 4-d or 5-d, got " +
           ir::shape_str(ctx.graph.value(a.w).shape));
}

}  // namespace aotc::ops
