// col2im.cpp: aten::col2im (F.fold) -> sliding blocks summed back into an image,
// out[n, c, y sh - ph + i dh, x sw - pw + j dw] += cols[n, (c kh + i) kw + j, y ow + x] for
// the positions inside the image (im2col.cpp's inverse). Where no two (block, tap) pairs
// reach the same position (patches: a stride of at least the dilated window) it is an IR
// "assemble" (assemble.h): zeros, then one strided copy per tap of the blocks it writes
// inside the image; exact, any dtype. Where they overlap, it is a transposed convolution
// (conv_transpose.cpp) with C groups of kh kw one-hot filters, which adds the taps reaching
// each position; float32 only, and an infinity or NaN among the columns gives NaN at the
// other positions of its block too (its products with the zero filters).
#include <cstring>
#include <set>

#include "assemble.h"
#include "spatial.h"

namespace aotc::ops {
namespace {

// Whether two (block, tap) pairs along one dim reach the same position.
bool overlaps(int64_t blocks, int64_t kernel, int64_t stride, int64_t dilation) {
  std::set<int64_t> seen;
  for (int64_t o = 0; o < blocks; ++o)
    for (int64_t k = 0; k < kernel; ++k)
      if (!seen.insert(o * stride + k * dilation).second) return true;
  return false;
}

// col2im(self, output_size, kernel_size, dilation, padding, stride): self [N, C kh kw, L] or
// [C kh kw, L].
void lower_col2im(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  const size_t rank = x.shape.size();
  if (rank != 2 && rank != 3)
    ctx.fail("col2im (F.fold) expects a 2-d or 3-d input, got shape " + ir::shape_str(x.shape));
  const std::vector<int64_t> size = pair_of_at_least(ctx, 1, "output_size", 1),
                             kernel = pair_of_at_least(ctx, 2, "kernel_size", 1),
                             dilation = pair_of_at_least(ctx, 3, "dilation", 1),
                             padding = pair_of_at_least(ctx, 4, "padding", 0),
                             stride = pair_of_at_least(ctx, 5, "stride", 1);
  const int64_t n = rank == 3 ? x.shape[0] : 1, ck = x.shape[rank - 2], blocks = x.shape[rank - 1];
  const int64_t taps = kernel[0] * kernel[1];
  if (ck % taps != 0)
    ctx.fail("the input's " + std::to_string(ck) + " rows are not a multiple of kernel_size " +
             ir::shape_str(kernel) + "'s " + std::to_string(taps) + " taps");
  const int64_t c = ck / taps, h = size[0], w = size[1];
  const int64_t span_h = h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1;
  const int64_t span_w = w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1;
  if (span_h < 0 || span_w < 0)
    ctx.fail("output_size " + ir::shape_str(size) + " with kernel_size " + ir::shape_str(kernel) +
             ", dilation " + ir::shape_str(dilation) + " and padding " + ir::shape_str(padding) +
             " leaves no sliding block");
  const int64_t oh = span_h / stride[0] + 1, ow = span_w / stride[1] + 1;
  if (blocks != oh * ow)
    ctx.fail("the input has " + std::to_string(blocks) + " blocks, but output_size " + ir::shape_str(size) +
             ", kernel_size " + ir::shape_str(kernel) + ", dilation " + ir::shape_str(dilation) +
             ", padding " + ir::shape_str(padding) + " and stride " + ir::shape_str(stride) + " make " +
             std::to_string(oh) + " x " + std::to_string(ow) + " = " + std::to_string(oh * ow));
  // The columns as [N, C, kh, kw, oh, ow] (splitting dims of any strided view is a view).
  StridedView in = view_of(ctx.graph, ctx.tensor(0));
  if (rank == 2) in = unsqueeze_view(in, 0);
  StridedView cols = in;
  cols.sizes = {n, c, kernel[0], kernel[1], oh, ow};
  cols.strides = {in.strides[0], in.strides[1] * taps, in.strides[1] * kernel[1],
                  in.strides[1], in.strides[2] * ow,   in.strides[2]};
  const ir::Shape out_shape = rank == 3 ? ir::Shape{n, c, h, w} : ir::Shape{c, h, w};

  // (Two pairs meet where they meet along one dim and share their block and tap along the
  // other: both dims must be free of meetings.)
  if (!overlaps(oh, kernel[0], stride[0], dilation[0]) && !overlaps(ow, kernel[1], stride[1], dilation[1])) {
    Assembly a;
    a.dtype = x.dtype;
    a.shape = {n, c, h, w};
    a.fill = scalar_bytes(ctx, x.dtype, Operand::of_int(0));
    for (int64_t i = 0; i < kernel[0]; ++i)
      for (int64_t j = 0; j < kernel[1]; ++j) {
        const int64_t start_h = i * dilation[0] - padding[0], start_w = j * dilation[1] - padding[1];
        const auto [y0, rows] = blocks_inside(h, oh, start_h, stride[0]);
        const auto [x0, columns] = blocks_inside(w, ow, start_w, stride[1]);
        if (rows == 0 || columns == 0) continue;                       // the tap reaches only padding
        StridedView src = select_view(select_view(cols, 3, j), 2, i);  // [N, C, oh, ow]
        src = slice_view(slice_view(src, 2, y0, rows, 1), 3, x0, columns, 1);
        a.pieces.push_back({src,
                            (start_h + y0 * stride[0]) * w + start_w + x0 * stride[1],
                            {c * h * w, h * w, stride[0] * w, stride[1]}});
      }
    ctx.set_tensor_output(0, ctx.graph.add_alias(add_assembly(ctx, a), out_shape));
    return;
  }
  ctx.require_float32({0});
  // The one-hot filters: group c's input channel c kh kw + k adds to tap k of channel c.
  constexpr int64_t kMaxFilterFloats = int64_t{1} << 24;
  if (ck > kMaxFilterFloats / taps)
    ctx.fail("overlapping blocks of " + std::to_string(taps) + " taps over " + std::to_string(c) +
             " channels would need a " + std::to_string(ck) + " x " + std::to_string(taps) +
             " filter; at most 2^24 values are supported");
  std::vector<float> filters(static_cast<size_t>(ck * taps), 0.0f);
  for (int64_t ch = 0; ch < ck; ++ch) filters[static_cast<size_t>(ch * taps + ch % taps)] = 1.0f;
  std::vector<uint8_t> bytes(filters.size() * sizeof(float));
  std::memcpy(bytes.data(), filters.data(), bytes.size());
  const int columns = materialize(ctx, in, -1);
  ConvArgs a;
  a.x = ctx.graph.add_alias(columns, rank == 3 ? ir::Shape{n, ck, oh, ow} : ir::Shape{ck, oh, ow});
  a.w = ctx.graph.add_constant(ir::DType::Float32, {ck, 1, kernel[0], kernel[1]}, std::move(bytes));
  a.stride = stride;
  a.padding = padding;
  a.dilation = dilation;
  // The rows and columns past the last block's reach (fewer than a stride).
  a.output_padding = {h - ((oh - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kernel[0] - 1) + 1),
                      w - ((ow - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kernel[1] - 1) + 1)};
  a.groups = c;
  a.transposed = true;
  LowerContext conv(ctx.graph, ctx.op_name,
                    {Operand::of_tensor(a.x), Operand::of_tensor(a.w), Operand::none()}, 1, ctx.loc);
  lower_conv_transpose(conv, a);
  ctx.set_output(0, conv.outputs[0]);
}

}  // namespace

void register_col2im(Registry& r) { r.add_lowering("aten::col2im", lower_col2im); }

}  // namespace aotc::ops
