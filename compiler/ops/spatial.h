// spatial.h - lowering pieces shared by the convolution, pooling and normalisation op
// files (1-d, 2-d and 3-d spatial tensors N x C x ...). Kernels see every spatial tensor
// as 3-d (d, h, w) with leading 1s: see runtime/include/aotc/rt/kernels/spatial.h.
#pragma once

#include <aotc/rt/kernels.h>

#include <string>
#include <vector>

#include "op_helpers.h"

namespace aotc::ops {

// The arguments every convolution form carries, already read from the node.
struct ConvArgs {
  int x = -1, w = -1, bias = -1;  // bias -1: none
  std::vector<int64_t> stride, padding, dilation, output_padding;
  std::string padding_mode;  // "", "same" or "valid" (string overloads of conv1d/2d/3d)
  int64_t groups = 1;
  bool transposed = false;
};

// conv2d.cpp: 1-d and 2-d convolutions (IR "conv2d").
void lower_conv2d(LowerContext& ctx, const ConvArgs& a);
// conv3d.cpp: 3-d convolutions (IR "conv3d").
void lower_conv3d(LowerContext& ctx, const ConvArgs& a);
// conv_transpose.cpp: 1-d, 2-d and 3-d transposed convolutions (IR "conv_transpose").
void lower_conv_transpose(LowerContext& ctx, const ConvArgs& a);
// A "conv2d" IR op's attributes as rt::Conv2dParams, and as C++ (conv2d.cpp; the CUDA
// generator and the passes that pick convolution algorithms use them too).
rt::Conv2dParams conv2d_params_of(const ir::Op& op);
ParamsCode conv2d_params_code(const ir::Op& op);
ParamsCode conv2d_params_code(const rt::Conv2dParams& c, const std::string& var = "p");

// The geometry that rt::Conv2dParams and rt::QConv2dParams share (sizes, kernel, stride,
// padding, dilation, groups), read from a "conv2d" or "qconv2d" IR op's attributes and
// written as C++.
template <class Params>
void read_conv2d_geometry(const ir::Op& op, Params& p) {
  p.n = op.i("n");
  p.c_in = op.i("c_in");
  p.h_in = op.i("h_in");
  p.w_in = op.i("w_in");
  p.c_out = op.i("c_out");
  p.h_out = op.i("h_out");
  p.w_out = op.i("w_out");
  p.kernel_h = op.ints("kernel")[0];
  p.kernel_w = op.ints("kernel")[1];
  p.stride_h = op.ints("stride")[0];
  p.stride_w = op.ints("stride")[1];
  p.pad_h = op.ints("padding")[0];
  p.pad_w = op.ints("padding")[1];
  p.dilation_h = op.ints("dilation")[0];
  p.dilation_w = op.ints("dilation")[1];
  p.groups = op.i("groups");
}
template <class Params>
ParamsCode& set_conv2d_geometry(ParamsCode& code, const Params& c) {
  return code.set("n", c.n)
      .set("c_in", c.c_in)
      .set("h_in", c.h_in)
      .set("w_in", c.w_in)
      .set("c_out", c.c_out)
      .set("h_out", c.h_out)
      .set("w_out", c.w_out)
      .set("kernel_h", c.kernel_h)
      .set("kernel_w", c.kernel_w)
      .set("stride_h", c.stride_h)
      .set("stride_w", c.stride_w)
      .set("pad_h", c.pad_h)
      .set("pad_w", c.pad_w)
      .set("dilation_h", c.dilation_h)
      .set("dilation_w", c.dilation_w)
      .set("groups", c.groups);
}
// A "conv2d_expand_depthwise" IR op (passes/fuse_expand_depthwise.cpp): inputs x, the
// expansion's packed weight and bias, the depthwise weight and bias; the depthwise
// convolution's attributes plus "expand_c_in", "expand_clamp_lo" and "expand_clamp_hi".
// Its two convolutions (conv2d_expand_depthwise.cpp).
void expand_depthwise_params_of(const ir::Op& op, rt::Conv2dParams& pw, rt::Conv2dParams& dw);
// The rt::Pool2dParams of a "max_pool2d" or "avg_pool2d" IR op, as C++ (pool2d.cpp; the
// CUDA generator uses it too).
ParamsCode pool2d_params_code(const ir::Op& op);
// The rt::Pool3dParams of a "max_pool3d" or "avg_pool3d" IR op (pool3d.cpp) and the
// rt::AdaptivePoolParams of an "adaptive_avg_pool3d" or "adaptive_max_pool3d" IR op
// (adaptive_pool3d.cpp), as C++; the CUDA generators use them too.
ParamsCode pool3d_params_code(const ir::Op& op);
ParamsCode adaptive_pool3d_params_code(const ir::Op& op);
// The rt::ConvNdParams of a "conv3d" or "conv_transpose" IR op, as C++ (conv3d.cpp; the
// CUDA generators use it too), and as values (for the CUDA scratch plan).
std::string conv_nd_params_code(const ir::Op& op);
rt::ConvNdParams conv_nd_params_of(const ir::Op& op);
// Picks one of the above from the weight's rank and `transposed`.
void lower_any_conv(LowerContext& ctx, const ConvArgs& a);

// A list argument of `spatial` values: a single value repeats (torch's int[2] accepts 3).
std::vector<int64_t> spatial_values(const LowerContext& ctx, std::vector<int64_t> v, size_t spatial,
                                    const char* what);
// The last `spatial` values of v, with leading `fill`s up to 3 (a 2-d [h, w] -> [fill, h, w]).
std::vector<int64_t> as_3d(const std::vector<int64_t>& v, int64_t fill);

// im2col's and col2im's (F.unfold's, F.fold's) 2-element arguments: argument `arg` of the
// node, checked to hold 2 values of at least `least`.
std::vector<int64_t> pair_of_at_least(const LowerContext& ctx, size_t arg, const char* name, int64_t least);
// The sliding blocks along one dim whose tap at position start + block * stride lies in
// [0, size): {first, count} (im2col.cpp, col2im.cpp).
std::pair<int64_t, int64_t> blocks_inside(int64_t size, int64_t blocks, int64_t start, int64_t stride);

// torch's pooling_output_shape, ceil_mode included.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                    bool ceil_mode);

// The geometry of a max or average pooling node (aten::max_pool{1,2,3}d[_with_indices],
// aten::avg_pool{1,2,3}d), read and checked as torch does; every list has 3 entries
// (leading 1s, or 0s for padding, for 1-d and 2-d).
struct PoolGeometry {
  int64_t n = 1, c = 1;
  std::vector<int64_t> in, out, kernel, stride, pad, dilation;
  bool count_include_pad = true;  // average pooling
  int64_t divisor_override = 0;   // average pooling; 0: none
  ir::Shape out_shape;            // the output's shape, batched or not like the input
};
PoolGeometry pool_geometry(const LowerContext& ctx, size_t spatial, bool is_max);  // pool2d.cpp

// batch_norm.cpp: batch norm in eval mode (running statistics) -> IR "channel_affine".
// The arguments are those of aten::batch_norm, which aten::instance_norm shares.
void lower_batch_norm_eval(LowerContext& ctx);
// group_norm.cpp: IR "group_norm" over x (N x C x ...) with `groups` groups; gamma and
// beta are value ids or -1.
int add_group_norm(LowerContext& ctx, int x, int64_t groups, int gamma, int beta, double eps);
// The rt::GroupNormParams of a "group_norm" IR op, and as C++ (group_norm.cpp; the CUDA
// generator uses them too).
rt::GroupNormParams group_norm_params_of(const ir::Op& op);
ParamsCode group_norm_params_code(const ir::Op& op);
// The rt::UpsampleParams of an "upsample" IR op (upsample.cpp) and the rt::GridSampleParams
// of a "grid_sample" IR op (grid_sample.cpp), as C++; the CUDA generators use them too.
ParamsCode upsample_params_code(const ir::Op& op);
ParamsCode grid_sample_params_code(const ir::Op& op);

}  // namespace aotc::ops
