// convert_to_channels_last: the CUDA target's layout choice. A CNN whose convolutions are
// ungrouped or depthwise runs in NHWC (channels last). An ungrouped convolution becomes a
// linear layer over its receptive fields: Y (n*h_out*w_out x c_out) = X' W'^T with W' the
// weights reordered to (c_out, kh, kw, c_in) at compile time and X' the input itself (1x1,
// stride 1, no padding) or its NHWC unfolding ("im2col_nhwc"; at fp32 and tf32 with c_in a
// multiple of 32 the GEMM gets the input and the convolution's "conv_geometry" instead, and
// gathers the unfolding itself where that is faster: gemm_cuda.cpp). That GEMM is the linear
// layers' own "gemm" op, so it gets what they get: cuBLASLt's per-column bias and relu
// epilogue and the residual as its C operand (fuse_conv_residual), one product over the
// whole batch instead of one per image, the tuning run with gemm_3xtf32 as a candidate in
// fp32, and 16-bit weights in fp16 / bf16 (choose_gemm_operands.cpp). In NCHW cuBLASLt's
// bias runs along the wrong axis, so the bias and relu were a pass of their own, and at
// batch 32 the per-image products of the last stages (7x7 planes) were too small to fill
// the GPU. A depthwise convolution becomes "depthwise_conv2d_nhwc", its weights reordered
// to (kh, kw, c).
//
// The rewrite walks the ops in order. Convolutions convert, taking their input to NHWC
// (one permuting copy per value, shared by its readers); max pooling, adaptive average
// pooling, unary and binary ops convert when their inputs are NHWC already (a binary
// operand may also be broadcast over the spatial dims: a per-channel scale, a
// squeeze-and-excitation gate); the model's own permutes between NCHW and NHWC (ConvNeXt's
// around its layer norms and linear layers) become aliases; any other reader of a converted
// value gets it back in NCHW from one permuting copy (or a plain alias where the
// permutation moves no bytes: 1x1 planes, one channel). The result is kept when the copies
// move at most half the bytes that the converted convolutions write (a ResNet: one copy of
// the input, the pooled features an alias); a network with a single convolution (ViT's
// patches) or few (the copies weigh as much as the convolutions) stays NCHW as a whole,
// unless converting it copies nothing and turns the model's own permute into an alias.
// AOTC_CUDA_LAYOUT=nhwc converts whatever can be, =nchw nothing (read when compiling).
#include <aotc/rt/kernels.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "../../ops/cuda/cuda_registry.h"
#include "../../ops/gemm.h"
#include "../../ops/spatial.h"
#include "../passes.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {
namespace {

// [n, c, h, w] -> [n, h, w, c] and back.
ir::Shape nhwc_shape(const ir::Shape& s) { return {s[0], s[2], s[3], s[1]}; }

// v rounded to tf32's 10 mantissa bits, to nearest with ties to even; infinities and NaNs
// as they are, and values that round past float32's largest become infinities.
float round_to_tf32(float v) {
  uint32_t bits = std::bit_cast<uint32_t>(v);
  if ((bits & 0x7f800000u) == 0x7f800000u) return v;
  bits = (bits + 0xfffu + ((bits >> 13) & 1u)) & 0xffffe000u;
  return std::bit_cast<float>(bits);
}

// Whether permuting between NCHW and NHWC leaves every element where it is.
bool permutation_moves_nothing(const ir::Shape& nchw) { return nchw[1] == 1 || nchw[2] * nchw[3] == 1; }

class ChannelsLast {
 public:
  ChannelsLast(ir::Graph& graph, rt::cuda::Precision precision) : g_(graph), precision_(precision) {}

  void run() {
    std::vector<ir::Op> ops = std::move(g_.ops);
    g_.ops.clear();
    for (ir::Op& op : ops) {
      if (!convert(op)) {
        for (int in : op.inputs)
          if (in >= 0) need_nchw(g_.storage_root(in));
        g_.ops.push_back(std::move(op));
      }
    }
    for (const ir::GraphOutput& out : g_.outputs) need_nchw(g_.storage_root(out.value));
  }

  int convs = 0;             // convolutions converted
  int64_t conv_bytes = 0;    // their outputs' bytes
  int64_t copied_bytes = 0;  // the permuting copies' (aliases cost nothing)
  int permutes_gone = 0;     // the model's own permutes to NHWC, now aliases

 private:
  ir::Graph& g_;
  const rt::cuda::Precision precision_;
  std::map<int, int> nhwc_of_;                         // an NCHW value -> the value holding it in NHWC
  std::map<int, bool> pending_;                        // an NCHW value only its NHWC form holds so far
  std::map<std::pair<int, int64_t>, int> weights_of_;  // (weight, row length) -> reordered

  // The NHWC form of id, also through an alias of all of a value (torchvision's
  // `out += identity` reads the convolution's result through one); -1 if none.
  int nhwc_form(int id) const {
    for (;;) {
      if (auto it = nhwc_of_.find(id); it != nhwc_of_.end()) return it->second;
      const ir::Value& v = g_.value(id);
      if (v.alias_of < 0 || v.alias_byte_offset != 0 || g_.value(v.alias_of).shape != v.shape) return -1;
      id = v.alias_of;
    }
  }

  // A permuting copy of src (dims as in src) into a new dense value of shape dims permuted
  // by order, appended to the ops.
  void add_permute(int src, int dst, const std::vector<int64_t>& order, const ir::SourceLocation& loc) {
    const ir::Shape& s = g_.value(src).shape;
    std::vector<int64_t> src_strides(4), dims(4);
    const std::vector<int64_t> dense = {s[1] * s[2] * s[3], s[2] * s[3], s[3], 1};
    for (size_t i = 0; i < 4; ++i) {
      dims[i] = s[static_cast<size_t>(order[i])];
      src_strides[i] = dense[static_cast<size_t>(order[i])];
    }
    ir::Op& op = g_.add_op(ir::kind::copy, {src}, {dst}, loc);
    op.attrs = {
        {"dims", dims},
        {"src_strides", src_strides},
        {"dst_strides", std::vector<int64_t>{dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1}},
        {"elem_size", int64_t{4}},
        {"src_offset", int64_t{0}}};
    copied_bytes += g_.value(src).bytes();
  }

  // The NHWC form of a 4-d NCHW value, made by a permuting copy the first time.
  int to_nhwc(int id, const ir::SourceLocation& loc) {
    if (const int have = nhwc_form(id); have >= 0) return have;
    need_nchw(g_.storage_root(id));  // a part of a converted value, read through a view
    const ir::Value& v = g_.value(id);
    const int out = permutation_moves_nothing(v.shape) ? g_.add_alias(id, nhwc_shape(v.shape))
                                                       : g_.add_value(v.dtype, nhwc_shape(v.shape), v.name);
    if (g_.value(out).storage != ir::Storage::Alias) add_permute(id, out, {0, 2, 3, 1}, loc);
    nhwc_of_[id] = out;
    return out;
  }

  // A value read in NCHW (by an op that stays so, or as a graph output) that only its
  // NHWC form holds gets its NCHW bytes now: the original value becomes the permuting
  // copy's output, or an alias of the NHWC form, so its aliases keep working.
  void need_nchw(int root) {
    auto it = pending_.find(root);
    if (it == pending_.end() || !it->second) return;
    it->second = false;
    ir::Value& v = g_.value(root);
    const int nhwc = nhwc_of_.at(root);
    if (permutation_moves_nothing(v.shape)) {
      v.storage = ir::Storage::Alias;
      v.alias_of = nhwc;
      v.alias_byte_offset = 0;
      return;
    }
    add_permute(nhwc, root, {0, 3, 1, 2}, {});
  }

  // The op's output gets an NHWC twin, which the op now writes.
  int nhwc_output(int out) {
    const ir::Value& v = g_.value(out);
    const int twin = g_.add_value(v.dtype, nhwc_shape(v.shape), v.name);
    nhwc_of_[out] = twin;
    pending_[out] = true;
    return twin;
  }

  // Whether id's bytes are (an alias of) a value only its NHWC form holds so far.
  bool pending(int id) const {
    auto it = pending_.find(g_.storage_root(id));
    return it != pending_.end() && it->second;
  }

  bool is_4d_f32(int id) const {
    const ir::Value& v = g_.value(id);
    return v.shape.size() == 4 && v.dtype == ir::DType::Float32;
  }

  // The weights as (c_out, kh, kw, c_in), rows of `depth` floats (zeros after the taps),
  // made once per weight.
  int reordered_weights(int w, int64_t depth) {
    if (auto it = weights_of_.find({w, depth}); it != weights_of_.end()) return it->second;
    const ir::Constant& c = g_.constant_of(w);
    const int64_t co = c.shape[0], ci = c.shape[1], kh = c.shape[2], kw = c.shape[3];
    const bool tf32 = precision_ == rt::cuda::Precision::Tf32;
    auto reorder = [&] {
      std::vector<float> data(static_cast<size_t>(co * depth), 0.0f);
      const float* src = c.f32();
      for (int64_t o = 0; o < co; ++o)
        for (int64_t i = 0; i < ci; ++i)
          for (int64_t y = 0; y < kh; ++y)
            for (int64_t x = 0; x < kw; ++x)
              data[static_cast<size_t>(o * depth + (y * kw + x) * ci + i)] =
                  src[((o * ci + i) * kh + y) * kw + x];
      // At tf32 the weights are tf32 numbers (nearest, ties to even), as the tensor cores take
      // them: the gathering GEMM rounds only its input as it reads it (gemm_3xtf32.cu).
      if (tf32)
        for (float& v : data) v = round_to_tf32(v);
      return data;
    };
    const std::string recipe =
        "channels_last depth=" + std::to_string(depth) + " tf32=" + std::to_string(tf32);
    const int id =
        passes::add_derived_f32_constant(g_, recipe, {w}, {co, depth}, reorder, g_.value(w).name + "_nhwc");
    weights_of_[{w, depth}] = id;
    return id;
  }

  bool convert_conv(const ir::Op& op) {
    const rt::Conv2dParams p = ops::conv2d_params_of(op);
    // The output may be a view of the result with another shape (fuse_activation moves a
    // relu that reads one onto the convolution): the bytes are NCHW's, so it stays so.
    if (p.groups != 1 || op.inputs.size() != 3 || !is_4d_f32(op.inputs[0]) || !is_4d_f32(op.outputs[0]) ||
        g_.value(op.inputs[0]).shape != ir::Shape{p.n, p.c_in, p.h_in, p.w_in} ||
        g_.value(op.outputs[0]).shape != ir::Shape{p.n, p.c_out, p.h_out, p.w_out} ||
        !is_whole_f32_constant(g_, op.inputs[1]) || g_.value(op.inputs[1]).shape.size() != 4)
      return false;
    const int64_t rows = p.n * p.h_out * p.w_out;
    int64_t depth = p.kernel_h * p.kernel_w * p.c_in;
    const bool unfold = !(p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                          p.pad_h == 0 && p.pad_w == 0);
    // An unfolding reads an input that exists only in NCHW (the model's image) as it is: no
    // permuting copy.
    const bool nchw_input = unfold && nhwc_form(op.inputs[0]) < 0 && !pending(op.inputs[0]);
    const int x = nchw_input ? op.inputs[0] : to_nhwc(op.inputs[0], op.loc);
    int a = x;
    // fp16 / bf16: the unfolding writes the columns in the 16-bit type, the GEMM's operand,
    // and the weights are converted here (a 1x1 convolution's input is rounded as the GEMM
    // runs, as a linear layer's is: choose_gemm_operands.cpp).
    const bool low = precision_ == rt::cuda::Precision::Fp16 || precision_ == rt::cuda::Precision::Bf16;
    const bool low_columns = low && unfold;
    // In float32 and tf32, an unfolding whose every 32-deep slice of k is one tap's channels
    // is left to the GEMM, which gathers its input itself where the tuning run finds that
    // faster than unfolding (conv_gemm_nhwc_f32): no im2col op, the columns its scratch.
    const bool gathered = unfold && !low && !nchw_input && p.c_in % 32 == 0;
    if (unfold && !gathered) {
      // Rows 16 bytes apart (4 float32 or 8 16-bit values): cuBLAS's fast kernels want
      // 16-byte aligned rows (a 7x7 RGB stem has 147 taps; at 147 floats, or 148 fp16
      // values, it took a slower sm80 kernel), and the unfolding then stores 16 bytes a thread.
      const int64_t row_values = low_columns ? 8 : 4;
      depth = (depth + row_values - 1) / row_values * row_values;
      const ir::DType type = !low_columns                              ? ir::DType::Float32
                             : precision_ == rt::cuda::Precision::Fp16 ? ir::DType::Float16
                                                                       : ir::DType::BFloat16;
      a = g_.add_value(type, {rows, depth}, g_.value(op.inputs[0]).name + "_cols");
      ir::Op& im2col = g_.add_op(ir::kind::im2col_nhwc, {x}, {a}, op.loc);
      for (const char* key : {"n", "c_in", "h_in", "w_in", "c_out", "h_out", "w_out", "groups"})
        im2col.attrs[key] = op.i(key);
      for (const char* key : {"kernel", "stride", "padding", "dilation"}) im2col.attrs[key] = op.ints(key);
      im2col.attrs["row_stride"] = depth;
      im2col.attrs[ir::attr::nchw_input] = nchw_input;
      im2col.attrs[ir::attr::precision] =
          static_cast<int64_t>(low_columns ? precision_ : rt::cuda::Precision::Fp32);
    }
    ops::GemmShape s;
    s.m = rows;
    s.n = p.c_out;
    s.k = depth;
    s.trans_b = true;
    s.bias_kind = op.inputs[2] >= 0 ? rt::BiasKind::PerColumn : rt::BiasKind::None;
    int w = reordered_weights(op.inputs[1], depth);
    if (low_columns) w = converted_constant(g_, w, precision_);
    const int y = nhwc_output(op.outputs[0]);
    ir::Op& gemm = g_.add_op(ir::kind::gemm, {a, w, op.inputs[2]}, {y}, op.loc);
    gemm.attrs = ops::gemm_attrs(s);
    if (gathered) gemm.attrs[ir::attr::conv_geometry] = ops::cuda::conv_geometry_attr(p);
    gemm.attrs[ir::attr::clamp_lo] = op.f(ir::attr::clamp_lo);
    gemm.attrs[ir::attr::clamp_hi] = op.f(ir::attr::clamp_hi);
    if (low_columns) {
      gemm.attrs[ir::attr::a_16bit] = true;
      gemm.attrs[ir::attr::b_16bit] = true;
      gemm.attrs[ir::attr::precision] = static_cast<int64_t>(precision_);
    }
    ++convs;
    conv_bytes += g_.value(y).bytes();
    return true;
  }

  // The depthwise weights (c, 1, kh, kw) as (kh, kw, c), made once per weight.
  int depthwise_weights(int w) {
    if (auto it = weights_of_.find({w, -1}); it != weights_of_.end()) return it->second;
    const ir::Constant& c = g_.constant_of(w);
    const int64_t channels = c.shape[0], taps = c.shape[2] * c.shape[3];
    auto reorder = [&] {
      std::vector<float> data(static_cast<size_t>(channels * taps));
      const float* src = c.f32();
      for (int64_t k = 0; k < channels; ++k)
        for (int64_t t = 0; t < taps; ++t) data[static_cast<size_t>(t * channels + k)] = src[k * taps + t];
      return data;
    };
    const int id = passes::add_derived_f32_constant(g_, "channels_last depthwise", {w},
                                                    {c.shape[2], c.shape[3], channels}, reorder,
                                                    g_.value(w).name + "_nhwc");
    weights_of_[{w, -1}] = id;
    return id;
  }

  // A depthwise convolution (one filter per channel) reads and writes NHWC: a thread per
  // channel vector and run of output pixels (depthwise_conv2d_nhwc.cu), bias and clamp fused.
  bool convert_depthwise(const ir::Op& op) {
    const rt::Conv2dParams p = ops::conv2d_params_of(op);
    if (!rt::conv2d_is_depthwise(p) || op.inputs.size() != 3 || !is_4d_f32(op.inputs[0]) ||
        !is_4d_f32(op.outputs[0]) || g_.value(op.inputs[0]).shape != ir::Shape{p.n, p.c_in, p.h_in, p.w_in} ||
        g_.value(op.outputs[0]).shape != ir::Shape{p.n, p.c_out, p.h_out, p.w_out} ||
        !is_whole_f32_constant(g_, op.inputs[1]) ||
        g_.value(op.inputs[1]).shape != ir::Shape{p.c_out, 1, p.kernel_h, p.kernel_w})
      return false;
    const int x = to_nhwc(op.inputs[0], op.loc);
    const int w = depthwise_weights(op.inputs[1]);
    ir::Op converted = op;
    converted.kind = ir::kind::depthwise_conv2d_nhwc;
    converted.inputs = {x, w, op.inputs[2]};
    converted.outputs = {nhwc_output(op.outputs[0])};
    g_.ops.push_back(std::move(converted));
    ++convs;
    conv_bytes += g_.value(op.outputs[0]).bytes();
    return true;
  }

  // Whether a copy op moves a whole dense 4-d float32 value into a dense one of its dims
  // permuted by `order` (out dim i is in dim order[i]).
  bool is_permutation(const ir::Op& op, const std::vector<int64_t>& order) const {
    if (op.inputs.size() != 1 || op.outputs.size() != 1 || !is_4d_f32(op.inputs[0]) ||
        !is_4d_f32(op.outputs[0]))
      return false;
    if (!op.has("dims") || !op.has("src_strides") || !op.has("dst_strides") || !op.has("elem_size") ||
        op.i("elem_size") != 4 || (op.has("src_offset") && op.i("src_offset") != 0))
      return false;
    const ir::Shape& in = g_.value(op.inputs[0]).shape;
    const ir::Shape& out = g_.value(op.outputs[0]).shape;
    const std::vector<int64_t> dims = op.ints("dims"), src = op.ints("src_strides"),
                               dst = op.ints("dst_strides");
    const std::vector<int64_t> in_dense = ops::dense_strides(in), out_dense = ops::dense_strides(out);
    if (dims.size() != 4 || src.size() != 4 || dst.size() != 4) return false;
    for (size_t i = 0; i < 4; ++i) {
      const auto from = static_cast<size_t>(order[i]);
      if (dims[i] != out[i] || out[i] != in[from]) return false;
      if (dims[i] > 1 && (src[i] != in_dense[from] || dst[i] != out_dense[i])) return false;
    }
    return true;
  }

  // torch's permutes between NCHW and NHWC (ConvNeXt's blocks and LayerNorm2d around their
  // layer norms and linear layers) move no bytes where the value is NHWC already: to NHWC,
  // the result becomes an alias of the NHWC form; back to NCHW, the result gets the permute's
  // input as its NHWC form, and only a reader that stays NCHW makes the copy.
  bool convert_permute(const ir::Op& op) {
    if (op.outputs.size() != 1) return false;
    const int out = op.outputs[0];
    ir::Value& v = g_.value(out);
    if (v.storage != ir::Storage::Arena) return false;  // a copy into a part of another value
    if (is_permutation(op, {0, 2, 3, 1})) {
      const int nhwc = nhwc_form(op.inputs[0]);
      if (nhwc < 0) return false;
      v.storage = ir::Storage::Alias;
      v.alias_of = nhwc;
      v.alias_byte_offset = 0;
      permutes_gone += 1;
      return true;
    }
    if (is_permutation(op, {0, 3, 1, 2})) {
      need_nchw(g_.storage_root(op.inputs[0]));  // the input's own bytes, in its own layout
      nhwc_of_[out] = op.inputs[0];
      pending_[out] = true;
      return true;
    }
    return false;
  }

  // The NHWC shape of a binary operand broadcast over the spatial dims ([c, 1, 1] or
  // [n, c, 1, 1]: ConvNeXt's layer scale, the squeeze-and-excitation gate), which reads the
  // same bytes as [n or 1, 1, 1, c or 1]; a single value keeps its shape; nullopt for any
  // other broadcast.
  std::optional<ir::Shape> broadcast_nhwc_shape(int id, const ir::Shape& out) const {
    const ir::Value& v = g_.value(id);
    if (v.dtype != ir::DType::Float32 || v.shape.size() > 4) return std::nullopt;
    if (ir::numel(v.shape) == 1) return v.shape;
    ir::Shape s(4 - v.shape.size(), 1);
    s.insert(s.end(), v.shape.begin(), v.shape.end());
    if (s[2] != 1 || s[3] != 1 || (s[0] != 1 && s[0] != out[0]) || (s[1] != 1 && s[1] != out[1]))
      return std::nullopt;
    return ir::Shape{s[0], 1, 1, s[1]};
  }

  int broadcast_operand(int id, const ir::Shape& nhwc_shape) {
    if (ir::numel(nhwc_shape) == 1) return id;
    if (g_.value(id).shape.size() == 4)
      if (const int have = nhwc_form(id); have >= 0) return have;
    need_nchw(g_.storage_root(id));
    return g_.add_alias(id, nhwc_shape);
  }

  // Pooling, unary and binary ops whose tensor inputs all have NHWC forms of the output's
  // shape convert as they are (the pooling ops marked "channels_last"); a binary op may also
  // read operands broadcast over the spatial dims, through [n, 1, 1, c] aliases.
  bool convert_in_place(const ir::Op& op) {
    const bool pool = op.kind == ir::kind::max_pool2d || op.kind == ir::kind::adaptive_avg_pool2d;
    if (!pool && op.kind != ir::kind::unary && op.kind != ir::kind::binary) return false;
    if (op.outputs.size() != 1 || !is_4d_f32(op.outputs[0]) || op.inputs.empty()) return false;
    if (pool &&
        (g_.value(op.inputs[0]).shape != ir::Shape{op.i("n"), op.i("c"), op.i("h_in"), op.i("w_in")} ||
         g_.value(op.outputs[0]).shape != ir::Shape{op.i("n"), op.i("c"), op.i("h_out"), op.i("w_out")}))
      return false;
    const ir::Shape out = g_.value(op.outputs[0]).shape;  // (broadcast_operand adds values)
    std::vector<int> inputs;
    std::vector<std::pair<size_t, ir::Shape>> broadcast;  // binary operands of another shape
    for (int in : op.inputs) {
      if (in < 0) return false;
      const bool same_shape = pool || g_.value(in).shape == out;
      const int nhwc = same_shape && is_4d_f32(in) ? nhwc_form(in) : -1;
      if (nhwc >= 0) {
        inputs.push_back(nhwc);
        continue;
      }
      // A binary operand broadcast over the spatial dims, or of the output's shape on planes
      // of one pixel (it reads the same bytes in NHWC, and at the larger sizes of a --dim
      // build it is a broadcast one: both sizes must convert alike).
      const bool spatial = op.kind == ir::kind::binary && (!same_shape || out[2] * out[3] == 1);
      const std::optional<ir::Shape> shape = spatial ? broadcast_nhwc_shape(in, out) : std::nullopt;
      if (!shape) return false;
      broadcast.emplace_back(inputs.size(), *shape);
      inputs.push_back(in);
    }
    if (broadcast.size() == inputs.size()) return false;  // nothing NHWC to read
    for (const auto& [i, shape] : broadcast) inputs[i] = broadcast_operand(inputs[i], shape);
    ir::Op converted = op;
    converted.inputs = inputs;
    converted.outputs = {nhwc_output(op.outputs[0])};
    if (pool) converted.attrs[ir::attr::channels_last] = true;
    g_.ops.push_back(std::move(converted));
    return true;
  }

  bool convert(const ir::Op& op) {
    if (op.kind == ir::kind::conv2d) return convert_conv(op) || convert_depthwise(op);
    if (op.kind == ir::kind::copy) return convert_permute(op);
    return convert_in_place(op);
  }
};

}  // namespace

void convert_to_channels_last(ir::Graph& graph, rt::cuda::Precision precision) {
  const char* env = std::getenv("AOTC_CUDA_LAYOUT");
  const std::string mode = env ? env : "";
  if (!mode.empty() && mode != "nchw" && mode != "nhwc")
    throw CompileError("AOTC_CUDA_LAYOUT is '" + mode +
                       "'; it takes nchw or nhwc (or is unset: aotc chooses)");
  if (mode == "nchw") return;
  int ungrouped = 0;  // no copy of the graph for a model without a convolution to convert
  for (const ir::Op& op : graph.ops) ungrouped += op.kind == ir::kind::conv2d && op.i("groups") == 1;
  if (ungrouped == 0) return;
  ir::Graph converted = graph;
  ChannelsLast pass(converted, precision);
  pass.run();
  // Worth it when the permuting copies move at most half the bytes the converted
  // convolutions write: each of those saves its epilogue pass (a read and a write of its
  // output) at least, each copy costs one. A single convolution converts where that takes
  // no copy and removes one: a Swin transformer's patches, which the model permutes to NHWC
  // itself (a strided copy, now an alias); not ViT's (its tokens are read through strides
  // already, so NHWC would add a copy back).
  const bool worth_it = (ungrouped >= 2 && pass.convs >= 2 && 2 * pass.copied_bytes <= pass.conv_bytes) ||
                        (pass.copied_bytes == 0 && pass.permutes_gone > 0);
  if (pass.convs == 0 || (mode != "nhwc" && !worth_it)) return;
  passes::eliminate_dead_ops(converted);
  graph = std::move(converted);
}

}  // namespace aotc::passes::cuda
