// im2col.cpp: aten::im2col (F.unfold) -> IR "assemble" (assemble.h): the columns a
// convolution multiplies, out[n, (c kh + i) kw + j, y ow + x] = x[n, c, y sh - ph + i dh,
// x sw - pw + j dw], zero where that position falls on the padding. The output, as
// [N, C, kh, kw, oh, ow], is filled with zeros, then each tap (i, j) copies the input
// positions it reads inside the image in one strided copy (without padding the whole is one
// strided copy); the result is that buffer reshaped to [N, C kh kw, oh ow] (or
// [C kh kw, oh ow] for an unbatched input).
#include "assemble.h"
#include "spatial.h"

namespace aotc::ops {
namespace {

// im2col(self, kernel_size, dilation, padding, stride): self [N, C, H, W] or [C, H, W].
void lower_im2col(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  const size_t rank = x.shape.size();
  if (rank != 3 && rank != 4)
    ctx.fail("im2col (F.unfold) expects a 3-d or 4-d input, got shape " + ir::shape_str(x.shape));
  const std::vector<int64_t> kernel = pair_of_at_least(ctx, 1, "kernel_size", 1),
                             dilation = pair_of_at_least(ctx, 2, "dilation", 1),
                             padding = pair_of_at_least(ctx, 3, "padding", 0),
                             stride = pair_of_at_least(ctx, 4, "stride", 1);
  const int64_t n = rank == 4 ? x.shape[0] : 1, c = x.shape[rank - 3], h = x.shape[rank - 2],
                w = x.shape[rank - 1];
  // The span past the first block's, in input positions (negative: not even one block).
  const int64_t span_h = h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1;
  const int64_t span_w = w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1;
  if (span_h < 0 || span_w < 0)
    ctx.fail("the input's spatial size (" + std::to_string(h) + ", " + std::to_string(w) +
             ") with kernel_size " + ir::shape_str(kernel) + ", dilation " + ir::shape_str(dilation) +
             " and padding " + ir::shape_str(padding) + " leaves no sliding block");
  const int64_t oh = span_h / stride[0] + 1, ow = span_w / stride[1] + 1;
  const ir::Shape columns_shape{n, c, kernel[0], kernel[1], oh, ow};
  StridedView in = view_of(ctx.graph, ctx.tensor(0));
  if (rank == 3) in = unsqueeze_view(in, 0);
  int columns = -1;
  if (padding[0] == 0 && padding[1] == 0) {  // every tap inside the image: one strided view
    StridedView whole = in;
    whole.sizes = columns_shape;
    whole.strides = {in.strides[0],
                     in.strides[1],
                     in.strides[2] * dilation[0],
                     in.strides[3] * dilation[1],
                     in.strides[2] * stride[0],
                     in.strides[3] * stride[1]};
    columns = materialize(ctx, whole, -1);
  } else {
    Assembly a;
    a.dtype = x.dtype;
    a.shape = columns_shape;
    a.fill = scalar_bytes(ctx, x.dtype, Operand::of_int(0));
    const std::vector<int64_t> out = dense_strides(a.shape);
    for (int64_t i = 0; i < kernel[0]; ++i)
      for (int64_t j = 0; j < kernel[1]; ++j) {
        const int64_t start_h = i * dilation[0] - padding[0], start_w = j * dilation[1] - padding[1];
        const auto [y0, rows] = blocks_inside(h, oh, start_h, stride[0]);
        const auto [x0, cols] = blocks_inside(w, ow, start_w, stride[1]);
        if (rows == 0 || cols == 0) continue;  // the tap reads only padding: zeros
        StridedView src = slice_view(in, 2, start_h + y0 * stride[0], rows, stride[0]);
        src = slice_view(src, 3, start_w + x0 * stride[1], cols, stride[1]);
        a.pieces.push_back(
            {src, i * out[2] + j * out[3] + y0 * out[4] + x0 * out[5], {out[0], out[1], out[4], out[5]}});
      }
    columns = add_assembly(ctx, a);
  }
  const ir::Shape shape = rank == 4 ? ir::Shape{n, c * kernel[0] * kernel[1], oh * ow}
                                    : ir::Shape{c * kernel[0] * kernel[1], oh * ow};
  ctx.set_tensor_output(0, ctx.graph.add_alias(columns, shape));
}

}  // namespace

void register_im2col(Registry& r) { r.add_lowering("aten::im2col", lower_im2col); }

}  // namespace aotc::ops
