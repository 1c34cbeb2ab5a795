// Depthwise convolutions on NHWC tensors (depthwise_conv2d_nhwc.cu) against a direct sum in
// double over NCHW: every templated window (3, 5 and 7 wide, stride 1 and 2) with grids
// small enough for one output a thread and large enough for its tiles, the generic path
// (dilated columns, stride 3, non-square kernels), channel counts with and without float4
// vectors, a misaligned tensor, padding wider than half the window, bias and clamp, a NaN
// and an infinity in the input. Each shape also with the two forms of input epilogue (what
// the GEMM that wrote the input would have applied, fold_depthwise_input.cpp): an upper
// bound alone; a bias and a clamp (relu6, or one that clamps at 0.75 from nothing), with
// and without the bias, one bias 4 bytes off 16-byte alignment; and a SiLU (the shared-memory
// tiles where the window, channel count and alignment allow, per value read elsewhere) in
// float32, fp16 and bf16, the output's mean per image and channel with it (the tiles' sums
// where those run, a pooling after the convolution elsewhere). 16-bit outputs also from a
// float32 input (a 7x7 layer's, store_activations_16bit.cpp). The 7x7 windows at stride 1
// without input epilogue or SiLU take the taps kernel, on each of its four tiles.
#include <aotc/rt/cuda/conv2d_plan.h>

#include <cmath>
#include <cstring>

#include "kernel_table.h"

namespace aotc::test {
namespace {

// y = clamp(conv(x) + bias), NCHW, one filter per channel, padded taps skipped; with silu,
// clamp(silu(conv(x) + bias)).
std::vector<float> depthwise_reference(const rt::Conv2dParams& p, const std::vector<float>& x,
                                       const std::vector<float>& w, const std::vector<float>& bias,
                                       bool silu = false) {
  std::vector<float> y(static_cast<size_t>(p.n * p.c_out * p.h_out * p.w_out));
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t c = 0; c < p.c_out; ++c)
      for (int64_t oh = 0; oh < p.h_out; ++oh)
        for (int64_t ow = 0; ow < p.w_out; ++ow) {
          double acc = 0.0;
          for (int64_t kh = 0; kh < p.kernel_h; ++kh)
            for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
              const int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
              const int64_t iw = ow * p.stride_w - p.pad_w + kw * p.dilation_w;
              if (ih < 0 || ih >= p.h_in || iw < 0 || iw >= p.w_in) continue;
              acc += static_cast<double>(
                         x[static_cast<size_t>(((i * p.c_in + c) * p.h_in + ih) * p.w_in + iw)]) *
                     w[static_cast<size_t>((c * p.kernel_h + kh) * p.kernel_w + kw)];
            }
          float v = static_cast<float>(acc) + (p.has_bias ? bias[static_cast<size_t>(c)] : 0.0f);
          if (silu) v = static_cast<float>(v / (1.0 + std::exp(-static_cast<double>(v))));
          if (v == v) v = std::fmin(std::fmax(v, p.clamp_lo), p.clamp_hi);
          y[static_cast<size_t>(((i * p.c_out + c) * p.h_out + oh) * p.w_out + ow)] = v;
        }
  return y;
}

// (c, 1, kh, kw) -> (kh, kw, c)
std::vector<float> taps_last(const std::vector<float>& w, int64_t c, int64_t taps) {
  std::vector<float> r(w.size());
  for (int64_t k = 0; k < c; ++k)
    for (int64_t t = 0; t < taps; ++t)
      r[static_cast<size_t>(t * c + k)] = w[static_cast<size_t>(k * taps + t)];
  return r;
}

void depthwise_nhwc_cases(KernelTable& t) {
  struct Shape {
    int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
    bool bias, relu6, misaligned;
  };
  const std::vector<Shape> shapes = {
      // the templated windows on small grids (one output a thread)
      {1, 8, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, true, false, false},
      {1, 12, 10, 13, 3, 3, 2, 2, 1, 1, 1, 1, true, true, false},
      {2, 7, 9, 9, 5, 5, 1, 1, 2, 2, 1, 1, false, false, false},
      {1, 20, 11, 12, 5, 5, 2, 2, 2, 2, 1, 1, true, false, false},
      {1, 96, 7, 7, 7, 7, 1, 1, 3, 3, 1, 1, true, false, false},
      {1, 5, 6, 5, 7, 7, 1, 1, 3, 3, 1, 1, true, true, false},
      // and on grids large enough for their tiles (w_out not a multiple of the tile)
      {2, 64, 40, 65, 3, 3, 1, 1, 1, 1, 1, 1, true, true, false},
      {2, 64, 40, 131, 3, 3, 2, 2, 1, 1, 1, 1, true, false, false},
      {2, 68, 36, 70, 5, 5, 1, 1, 2, 2, 1, 1, true, false, false},
      {2, 64, 44, 133, 5, 5, 2, 2, 2, 2, 1, 1, false, true, false},
      {2, 96, 30, 58, 7, 7, 1, 1, 3, 3, 1, 1, true, false, false},
      {3, 33, 37, 61, 7, 7, 1, 1, 3, 3, 1, 1, true, false, false},  // scalar channels
      // grids of input-SiLU tiles that fill a GPU of up to 132 multiprocessors (two blocks
      // each), every window, channels that fill part of a tile's 128 bytes (40, 72, 136),
      // the last with the NaN and the infinity of n == 3
      {6, 40, 50, 61, 3, 3, 1, 1, 1, 1, 1, 1, true, false, false},
      {8, 72, 40, 43, 3, 3, 2, 2, 1, 1, 1, 1, true, true, false},
      {6, 72, 36, 37, 5, 5, 1, 1, 2, 2, 1, 1, false, false, false},
      {8, 40, 60, 70, 5, 5, 2, 2, 2, 2, 1, 1, true, false, false},
      {3, 136, 60, 29, 7, 7, 1, 1, 3, 3, 1, 1, true, false, false},
      // the 7x7 taps kernel: its four tiles (4x4 above, 2x4 and 1x4 beside the scalar
      // channels, 1x2 on the small grids), no padding and padding wider than half the window,
      // uneven, output rows and columns not multiples of the tile, a plane narrower than the
      // window, a misaligned tensor
      {4, 100, 45, 47, 7, 7, 1, 1, 0, 2, 1, 1, true, true, false},
      {1, 48, 30, 41, 7, 7, 1, 1, 5, 4, 1, 1, false, false, false},
      {2, 24, 23, 19, 7, 7, 1, 1, 0, 0, 1, 1, true, false, false},
      {1, 10, 9, 4, 7, 7, 1, 1, 3, 3, 1, 1, true, false, false},
      {1, 16, 9, 11, 7, 7, 1, 1, 3, 3, 1, 1, true, false, true},
      // planes of one tile (the pooled means written by the tiles themselves)
      {66, 256, 7, 7, 5, 5, 1, 1, 2, 2, 1, 1, true, false, false},
      // padding wider than half the window, none, rows dilated (still the row window)
      {2, 64, 34, 67, 3, 3, 1, 1, 3, 2, 1, 1, true, false, false},
      {1, 16, 9, 10, 3, 3, 1, 1, 0, 0, 1, 1, true, false, false},
      {1, 16, 13, 12, 3, 3, 1, 1, 2, 1, 2, 1, true, false, false},
      // the generic path: dilated columns, stride 3, non-square, 1x1, a 1x1 plane
      {1, 8, 12, 13, 3, 3, 1, 1, 2, 2, 2, 2, true, false, false},
      {2, 9, 14, 15, 3, 3, 3, 3, 1, 1, 1, 1, true, true, false},
      {1, 12, 11, 9, 3, 5, 1, 2, 1, 2, 1, 1, false, false, false},
      {1, 12, 5, 6, 1, 1, 1, 1, 0, 0, 1, 1, true, false, false},
      {2, 6, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, true, false, false},
      // a tensor 4 bytes off 16-byte alignment: the scalar kernel on a channel count of 4k
      {1, 16, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, true, false, true},
  };
  for (const Shape& s : shapes) {
    rt::Conv2dParams p;
    p.n = s.n, p.c_in = p.c_out = p.groups = s.c, p.h_in = s.h, p.w_in = s.w;
    p.kernel_h = s.kh, p.kernel_w = s.kw, p.stride_h = s.sh, p.stride_w = s.sw;
    p.pad_h = s.ph, p.pad_w = s.pw, p.dilation_h = s.dh, p.dilation_w = s.dw;
    p.h_out = (s.h + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
    p.w_out = (s.w + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
    p.has_bias = s.bias;
    if (s.relu6) p.clamp_lo = 0.0f, p.clamp_hi = 6.0f;
    const std::string what = dims_str({s.n, s.c, s.h, s.w}) + " k" + dims_str({s.kh, s.kw}) + " s" +
                             dims_str({s.sh, s.sw}) + " p" + dims_str({s.ph, s.pw}) + " d" +
                             dims_str({s.dh, s.dw}) + (s.bias ? " bias" : "") + (s.relu6 ? " relu6" : "") +
                             (s.misaligned ? " misaligned" : "");
    std::vector<float> x = t.floats(static_cast<size_t>(s.n * s.c * s.h * s.w), false, 2.0f);
    if (s.n == 3) {  // one NaN and one infinity: the windows that read them, and only those
      x[5] = NAN;
      x[x.size() / 2 + 77] = INFINITY;
    }
    const std::vector<float> w = t.floats(static_cast<size_t>(s.c * s.kh * s.kw));
    const std::vector<float> bias = t.floats(static_cast<size_t>(s.c));
    const std::vector<float> in_bias = t.floats(static_cast<size_t>(s.c) + 1);
    const size_t bias_shift = &s == &shapes.front() || s.misaligned ? 1 : 0;
    for (int epilogue = 0; epilogue < 3; ++epilogue) {
      rt::cuda::DepthwiseInputEpilogue in;
      std::vector<float> x_read = x;  // x as the convolution reads it
      if (epilogue) {
        const bool relu6 = s.c % 2 == 0;
        in.in_lo = relu6 && epilogue == 2 ? 0.0f : -INFINITY;
        in.in_hi = relu6 ? 6.0f : 0.75f;
        const bool with_bias = epilogue == 2 && (s.bias || s.misaligned);
        // The first shape's tensors allow float4: its bias alone off alignment must not.
        for (size_t i = 0; i < x_read.size(); ++i) {
          const size_t c = i / static_cast<size_t>(s.h * s.w) % static_cast<size_t>(s.c);
          float v = x_read[i] + (with_bias ? in_bias[c + bias_shift] : 0.0f);
          if (v == v) v = std::fmin(std::fmax(v, in.in_lo), in.in_hi);
          x_read[i] = v;
        }
        if (with_bias) in.in_bias = t.upload(in_bias) + bias_shift;
      }
      const std::vector<float> cpu = depthwise_reference(p, x_read, w, bias);
      const size_t out = cpu.size(), shift = s.misaligned ? 1 : 0;
      std::vector<float> x_nhwc = to_nhwc(x, s.n, s.c, s.h, s.w);
      x_nhwc.insert(x_nhwc.begin(), shift, 0.0f);
      float* y = t.device<float>(out + shift);
      rt::cuda::depthwise_conv2d_nhwc_f32(
          t.stream(), p, t.upload(x_nhwc) + shift, t.upload(taps_last(w, s.c, s.kh * s.kw)),
          s.bias ? t.upload(bias) : nullptr, y + shift, epilogue ? &in : nullptr);
      std::vector<float> got = t.download(y, out + shift);
      got.erase(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(shift));
      const char* form[] = {"", " input bound", " input epilogue"};
      t.expect_close("depthwise_conv2d_nhwc", what + form[epilogue], cpu,
                     to_nchw(got, s.n, s.c, p.h_out, p.w_out), 2e-6);
    }
    // A SiLU after the bias (fuse_epilogue_silu.cpp), float32; then x and y in a 16-bit type
    // (store_activations_16bit.cpp), with and without the SiLU and the input's upper bound,
    // and x in float32 with y in the 16-bit type, with and without the SiLU.
    const std::vector<float> w_taps = taps_last(w, s.c, s.kh * s.kw);
    const size_t out = static_cast<size_t>(s.n * s.c * p.h_out * p.w_out), shift = s.misaligned ? 1 : 0;
    std::vector<float> x_nhwc = to_nhwc(x, s.n, s.c, s.h, s.w);
    {
      std::vector<float> shifted = x_nhwc;
      shifted.insert(shifted.begin(), shift, 0.0f);
      float* y = t.device<float>(out + shift);
      rt::cuda::DepthwiseNhwcIo io;
      io.activation = rt::GemmActivation::Silu;
      rt::cuda::depthwise_conv2d_nhwc(t.stream(), p, io, t.upload(shifted) + shift, t.upload(w_taps),
                                      s.bias ? t.upload(bias) : nullptr, y + shift);
      std::vector<float> got = t.download(y, out + shift);
      got.erase(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(shift));
      t.expect_close("depthwise_conv2d_nhwc", what + " silu", depthwise_reference(p, x, w, bias, true),
                     to_nchw(got, s.n, s.c, p.h_out, p.w_out), 2e-6);
    }
    for (const rt::cuda::Precision precision : {rt::cuda::Precision::Fp16, rt::cuda::Precision::Bf16})
      for (int form = 0; form < 6; ++form) {
        const bool silu = form % 2 == 1, bound = form == 2 || form == 3, float_input = form >= 4;
        // x as the kernel holds it: rounded to the type, then widened (or float32 as it is).
        std::vector<uint16_t> x16 = to_bits(x_nhwc, precision);
        std::vector<float> x_read = float_input ? x : to_nchw(to_floats(x16, precision), s.n, s.c, s.h, s.w);
        rt::cuda::DepthwiseInputEpilogue in;
        if (bound) {
          in.in_hi = 0.75f;
          for (float& v : x_read)
            if (v == v) v = std::fmin(v, in.in_hi);
        }
        x16.insert(x16.begin(), shift, 0);
        std::vector<float> x32 = x_nhwc;
        x32.insert(x32.begin(), shift, 0.0f);
        uint16_t* y = t.device<uint16_t>(out + shift);
        rt::cuda::DepthwiseNhwcIo io;
        io.storage = precision;
        io.float_input = float_input;
        io.activation = silu ? rt::GemmActivation::Silu : rt::GemmActivation::None;
        const void* x_device = float_input ? static_cast<const void*>(t.upload(x32) + shift)
                                           : static_cast<const void*>(t.upload(x16) + shift);
        rt::cuda::depthwise_conv2d_nhwc(t.stream(), p, io, x_device, t.upload(w_taps),
                                        s.bias ? t.upload(bias) : nullptr, y + shift, bound ? &in : nullptr);
        std::vector<uint16_t> got = t.download(y, out + shift);
        got.erase(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(shift));
        t.expect_close(std::string("depthwise_conv2d_nhwc (") + name_of(precision) + ")",
                       what + (float_input ? " float32 input" : "") + (silu ? " silu" : "") +
                           (bound ? " input bound" : ""),
                       depthwise_reference(p, x_read, w, bias, silu),
                       to_nchw(to_floats(got, precision), s.n, s.c, p.h_out, p.w_out),
                       precision == rt::cuda::Precision::Fp16 ? 2e-3 : 1.6e-2);
      }
    // The input SiLU (fold_depthwise_input.cpp), the output's SiLU with fp16.
    for (const rt::cuda::Precision precision :
         {rt::cuda::Precision::Fp32, rt::cuda::Precision::Fp16, rt::cuda::Precision::Bf16}) {
      const bool lowp = precision != rt::cuda::Precision::Fp32, silu = precision == rt::cuda::Precision::Fp16;
      const std::vector<uint16_t> x16 = lowp ? to_bits(x_nhwc, precision) : std::vector<uint16_t>{};
      std::vector<float> x_read = to_nchw(lowp ? to_floats(x16, precision) : x_nhwc, s.n, s.c, s.h, s.w);
      for (float& v : x_read) v = static_cast<float>(v / (1.0 + std::exp(-static_cast<double>(v))));
      rt::cuda::DepthwiseInputEpilogue in;
      in.in_activation = rt::GemmActivation::Silu;
      rt::cuda::DepthwiseNhwcIo io;
      io.storage = precision;
      io.activation = silu ? rt::GemmActivation::Silu : rt::GemmActivation::None;
      const size_t bytes = lowp ? 2 : 4;
      std::vector<uint8_t> x_bytes((x_nhwc.size() + shift) * bytes, 0);
      std::memcpy(x_bytes.data() + shift * bytes, lowp ? static_cast<const void*>(x16.data()) : x_nhwc.data(),
                  x_nhwc.size() * bytes);
      uint8_t* y = t.device<uint8_t>((out + shift) * bytes);
      // With the output's mean per image and channel (fuse_depthwise_pool.cpp).
      const size_t planes = static_cast<size_t>(s.n * s.c);
      io.pool = t.device<float>(planes);
      io.pool_scratch =
          t.device<float>(static_cast<size_t>(rt::cuda::depthwise_pool_scratch_bytes(p)) / 4 + 1);
      rt::cuda::depthwise_conv2d_nhwc(t.stream(), p, io, t.upload(x_bytes) + shift * bytes, t.upload(w_taps),
                                      s.bias ? t.upload(bias) : nullptr, y + shift * bytes, &in);
      std::vector<uint8_t> got = t.download(y, (out + shift) * bytes);
      std::vector<float> values(out);
      if (lowp) {
        std::vector<uint16_t> bits(out);
        std::memcpy(bits.data(), got.data() + shift * bytes, out * bytes);
        values = to_floats(bits, precision);
      } else {
        std::memcpy(values.data(), got.data() + shift * bytes, out * bytes);
      }
      t.expect_close(std::string("depthwise_conv2d_nhwc (") + (lowp ? name_of(precision) : "fp32") + ")",
                     what + " input silu" + (silu ? " silu" : ""),
                     depthwise_reference(p, x_read, w, bias, silu),
                     to_nchw(values, s.n, s.c, p.h_out, p.w_out),
                     !lowp                                    ? 2e-6
                     : precision == rt::cuda::Precision::Fp16 ? 2e-3
                                                              : 1.6e-2);
      // The means against those of the outputs as stored, in double.
      const size_t pixels = static_cast<size_t>(p.h_out * p.w_out);
      std::vector<float> means(planes);
      for (size_t plane = 0; plane < planes; ++plane) {
        const size_t image = plane / static_cast<size_t>(s.c), c = plane % static_cast<size_t>(s.c);
        double sum = 0.0;
        for (size_t px = 0; px < pixels; ++px)
          sum += values[(image * pixels + px) * static_cast<size_t>(s.c) + c];
        means[plane] = static_cast<float>(sum / static_cast<double>(pixels));
      }
      t.expect_close(std::string("depthwise_conv2d_nhwc (") + (lowp ? name_of(precision) : "fp32") + ")",
                     what + " input silu" + (silu ? " silu" : "") + " pooled", means,
                     t.download(io.pool, planes), 2e-5);
    }
  }
}

}  // namespace

void conv2d_nhwc_cases(KernelTable& t) { depthwise_nhwc_cases(t); }

}  // namespace aotc::test
