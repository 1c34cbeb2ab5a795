// conv3d_f32 and conv_transpose_f32 against naive double references: 1-d, 2-d and 3-d
// shapes (as 3-d with leading 1s), odd sizes, every parameter (stride, padding, dilation,
// groups, output padding through larger outputs, bias, clamp), scratch exactly the planned
// size and guarded, 1 and 3 threads.
#include <doctest/doctest.h>

#include <string>

#include "kernel_reference.h"

namespace {

using aotc::rt::ConvNdParams;
using aotc::rt::ThreadPool;
using namespace aotc::test;

struct ConvNdCase {
  const char* name;
  int64_t n, c_in, c_out, groups;
  int64_t in[3], kernel[3], stride[3], pad[3], dilation[3];
  int64_t output_padding[3];  // transposed only
};

const ConvNdCase kCases[] = {
    {"3x3x3", 1, 3, 5, 1, {5, 6, 7}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}},
    {"pointwise", 2, 4, 6, 1, {3, 5, 4}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}},
    {"pointwise groups 2", 1, 4, 6, 2, {2, 3, 5}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}},
    {"strides (1,2,3) pad (0,1,2)",
     2,
     3,
     4,
     1,
     {4, 9, 11},
     {2, 3, 3},
     {1, 2, 3},
     {0, 1, 2},
     {1, 1, 1},
     {0, 1, 2}},
    {"dilation (2,1,2)", 1, 2, 3, 1, {7, 5, 8}, {3, 2, 3}, {1, 1, 1}, {2, 0, 2}, {2, 1, 2}, {1, 0, 1}},
    {"groups 3", 1, 6, 9, 3, {3, 7, 6}, {3, 3, 3}, {2, 1, 2}, {1, 1, 1}, {1, 1, 1}, {1, 0, 1}},
    {"depthwise", 1, 4, 4, 4, {4, 5, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}},
    {"2-d as 3-d", 2, 5, 7, 1, {1, 13, 17}, {1, 3, 5}, {1, 2, 1}, {0, 1, 2}, {1, 1, 1}, {0, 1, 0}},
    {"1-d as 3-d", 3, 4, 6, 2, {1, 1, 29}, {1, 1, 5}, {1, 1, 3}, {0, 0, 2}, {1, 1, 2}, {0, 0, 2}},
    {"1x1x1 input, padded", 1, 3, 2, 1, {1, 1, 1}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}},
    {"larger", 1, 16, 24, 1, {6, 17, 19}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}},
    {"unet up 2x2 s2", 1, 32, 16, 1, {1, 9, 11}, {1, 2, 2}, {1, 2, 2}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}},
};

struct Clamp {
  float lo, hi;
};
const Clamp kClamps[] = {{-INFINITY, INFINITY}, {0.0f, INFINITY}, {-0.2f, 0.3f}};

ConvNdParams make(const ConvNdCase& cc, bool transposed, bool has_bias, const Clamp& cl) {
  ConvNdParams p;
  p.n = cc.n;
  p.c_in = cc.c_in;
  p.c_out = cc.c_out;
  p.groups = cc.groups;
  for (int d = 0; d < 3; ++d) {
    p.in[d] = cc.in[d];
    p.kernel[d] = cc.kernel[d];
    p.stride[d] = cc.stride[d];
    p.pad[d] = cc.pad[d];
    p.dilation[d] = cc.dilation[d];
    p.out[d] = transposed
                   ? (cc.in[d] - 1) * cc.stride[d] - 2 * cc.pad[d] + cc.dilation[d] * (cc.kernel[d] - 1) +
                         cc.output_padding[d] + 1
                   : (cc.in[d] + 2 * cc.pad[d] - cc.dilation[d] * (cc.kernel[d] - 1) - 1) / cc.stride[d] + 1;
  }
  p.has_bias = has_bias;
  p.clamp_lo = cl.lo;
  p.clamp_hi = cl.hi;
  return p;
}

int64_t volume(const int64_t* v) { return v[0] * v[1] * v[2]; }

double clamp(double v, const ConvNdParams& p) {
  return std::fmin(std::fmax(v, double(p.clamp_lo)), double(p.clamp_hi));
}

// y[n, co, o] = bias[co] + sum over ci in co's group and taps k of x[n, ci, o*s - p + k*d] w[co, ci', k]
std::vector<double> ref_conv3d(const ConvNdParams& p, const float* x, const float* w, const float* bias) {
  const int64_t cin_g = p.c_in / p.groups, cout_g = p.c_out / p.groups;
  std::vector<double> y(static_cast<size_t>(p.n * p.c_out * volume(p.out)));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t co = 0; co < p.c_out; ++co)
      for (int64_t od = 0; od < p.out[0]; ++od)
        for (int64_t oh = 0; oh < p.out[1]; ++oh)
          for (int64_t ow = 0; ow < p.out[2]; ++ow) {
            double acc = p.has_bias ? bias[co] : 0.0;
            for (int64_t ci = 0; ci < cin_g; ++ci)
              for (int64_t kd = 0; kd < p.kernel[0]; ++kd)
                for (int64_t kh = 0; kh < p.kernel[1]; ++kh)
                  for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
                    const int64_t id = od * p.stride[0] - p.pad[0] + kd * p.dilation[0];
                    const int64_t ih = oh * p.stride[1] - p.pad[1] + kh * p.dilation[1];
                    const int64_t iw = ow * p.stride[2] - p.pad[2] + kw * p.dilation[2];
                    if (id < 0 || id >= p.in[0] || ih < 0 || ih >= p.in[1] || iw < 0 || iw >= p.in[2])
                      continue;
                    const int64_t c = (co / cout_g) * cin_g + ci;
                    acc += double(x[(((n * p.c_in + c) * p.in[0] + id) * p.in[1] + ih) * p.in[2] + iw]) *
                           w[(((co * cin_g + ci) * p.kernel[0] + kd) * p.kernel[1] + kh) * p.kernel[2] + kw];
                  }
            y[static_cast<size_t>((((n * p.c_out + co) * p.out[0] + od) * p.out[1] + oh) * p.out[2] + ow)] =
                clamp(acc, p);
          }
  return y;
}

// The transposed convolution scatters: x[n, ci, i] adds x * w[ci, co', k] to
// y[n, co, i*s - p + k*d]; weight c_in x c_out/groups x kernel.
std::vector<double> ref_conv_transpose(const ConvNdParams& p, const float* x, const float* w,
                                       const float* bias) {
  const int64_t cin_g = p.c_in / p.groups, cout_g = p.c_out / p.groups;
  const int64_t vol_out = volume(p.out);
  std::vector<double> y(static_cast<size_t>(p.n * p.c_out * vol_out));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t co = 0; co < p.c_out; ++co)
      for (int64_t o = 0; o < vol_out; ++o)
        y[static_cast<size_t>((n * p.c_out + co) * vol_out + o)] = p.has_bias ? bias[co] : 0.0;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t ci = 0; ci < p.c_in; ++ci)
      for (int64_t og = 0; og < cout_g; ++og)
        for (int64_t id = 0; id < p.in[0]; ++id)
          for (int64_t ih = 0; ih < p.in[1]; ++ih)
            for (int64_t iw = 0; iw < p.in[2]; ++iw)
              for (int64_t kd = 0; kd < p.kernel[0]; ++kd)
                for (int64_t kh = 0; kh < p.kernel[1]; ++kh)
                  for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
                    const int64_t od = id * p.stride[0] - p.pad[0] + kd * p.dilation[0];
                    const int64_t oh = ih * p.stride[1] - p.pad[1] + kh * p.dilation[1];
                    const int64_t ow = iw * p.stride[2] - p.pad[2] + kw * p.dilation[2];
                    if (od < 0 || od >= p.out[0] || oh < 0 || oh >= p.out[1] || ow < 0 || ow >= p.out[2])
                      continue;
                    const int64_t co = (ci / cin_g) * cout_g + og;
                    y[static_cast<size_t>((((n * p.c_out + co) * p.out[0] + od) * p.out[1] + oh) * p.out[2] +
                                          ow)] +=
                        double(x[(((n * p.c_in + ci) * p.in[0] + id) * p.in[1] + ih) * p.in[2] + iw]) *
                        w[(((ci * cout_g + og) * p.kernel[0] + kd) * p.kernel[1] + kh) * p.kernel[2] + kw];
                  }
  for (double& v : y) v = clamp(v, p);
  return y;
}

void run_case(ThreadPool& pool, const ConvNdCase& cc, bool transposed, uint32_t& seed) {
  for (bool has_bias : {false, true})
    for (const Clamp& cl : kClamps) {
      const ConvNdParams p = make(cc, transposed, has_bias, cl);
      const auto x = random_floats(static_cast<size_t>(p.n * p.c_in * volume(p.in)), ++seed);
      const int64_t per_group = transposed ? p.c_out / p.groups : p.c_in / p.groups;
      const int64_t w_rows = transposed ? p.c_in : p.c_out;
      const auto w = random_floats(static_cast<size_t>(w_rows * per_group * volume(p.kernel)), ++seed);
      const auto bias = random_floats(static_cast<size_t>(p.c_out), ++seed);
      const int64_t scratch_bytes =
          transposed ? aotc::rt::conv_transpose_scratch_bytes(p) : aotc::rt::conv3d_scratch_bytes(p);
      REQUIRE(scratch_bytes % sizeof(float) == 0);
      Guarded scratch(static_cast<size_t>(scratch_bytes) / sizeof(float));
      Guarded y(static_cast<size_t>(p.n * p.c_out * volume(p.out)));
      PoolScratch thread_scratch(pool, transposed ? aotc::rt::conv_transpose_thread_scratch_bytes(p)
                                                  : aotc::rt::conv3d_thread_scratch_bytes(p));
      const float* b = has_bias ? bias.data() : nullptr;
      std::vector<double> want;
      if (transposed) {
        aotc::rt::conv_transpose_f32(pool, p, x.data(), w.data(), b, y.data(), scratch.data());
        want = ref_conv_transpose(p, x.data(), w.data(), bias.data());
      } else {
        aotc::rt::conv3d_f32(pool, p, x.data(), w.data(), b, y.data(), scratch.data());
        want = ref_conv3d(p, x.data(), w.data(), bias.data());
      }
      INFO(std::string(cc.name) << (transposed ? " transposed" : "") << " bias=" << has_bias << " clamp=["
                                << cl.lo << "," << cl.hi << "] threads=" << pool.size());
      CHECK(rel_l2(y.values(), want) <= kTolerance);
      CHECK(y.guards_intact());
      CHECK(scratch.guards_intact());
      CHECK(thread_scratch.guard_intact());
    }
}

}  // namespace

TEST_CASE("conv3d_f32: vol2col and pointwise paths, every parameter") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 101;
    for (const ConvNdCase& cc : kCases) run_case(pool, cc, false, seed);
  }
}

TEST_CASE("conv_transpose_f32: GEMM + col2im, output padding, every parameter") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 202;
    for (const ConvNdCase& cc : kCases) run_case(pool, cc, true, seed);
  }
}

TEST_CASE("conv_transpose_f32: stride 2 kernel 2 doubles the size exactly") {
  // 1 channel, a 2x2 kernel with stride 2: every input cell becomes a 2x2 block of
  // x * w, with no overlap.
  ThreadPool pool(1);
  ConvNdParams p;
  p.c_in = p.c_out = 1;
  p.in[1] = 2;
  p.in[2] = 3;
  p.kernel[1] = p.kernel[2] = 2;
  p.stride[1] = p.stride[2] = 2;
  p.out[1] = 4;
  p.out[2] = 6;
  const std::vector<float> x = {1, 2, 3, 4, 5, 6}, w = {1, 10, 100, 1000};
  Guarded scratch(static_cast<size_t>(aotc::rt::conv_transpose_scratch_bytes(p)) / sizeof(float));
  Guarded y(24);
  aotc::rt::conv_transpose_f32(pool, p, x.data(), w.data(), nullptr, y.data(), scratch.data());
  CHECK(y.data()[0] == 1.0f);
  CHECK(y.data()[1] == 10.0f);
  CHECK(y.data()[6] == 100.0f);
  CHECK(y.data()[7] == 1000.0f);
  CHECK(y.data()[23] == 6000.0f);
}
