// expand_depthwise.cpp - per-layer A/B of a 1x1 expansion and the depthwise convolution
// after it: the two convolutions apart (conv2d_f32 twice, the expanded tensor in memory)
// against conv2d_expand_depthwise_f32 (one pass, the expanded rows in a per-thread ring),
// taking turns run by run in one process, on the 16 expansion + depthwise pairs of
// torchvision's mobilenet_v2 at 224x224 (bias and relu6 on both, as after the compiler's
// fusions). Prints the median milliseconds of each (and of the two convolutions apart
// alone) and fused / apart.
//
// Build after ./scripts/setup.sh (one line):
//   g++ -O2 -march=x86-64-v3 -std=c++20 -Iruntime/include -Iruntime/src/kernels
//       bench/expand_depthwise.cpp build/runtime/libaotc_runtime.a -lpthread -o build/expand_depthwise
//   build/expand_depthwise [threads] [runs] [batch]   (default 2 threads, 41 runs, batch 1)
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_util.h"

namespace {

using bench::Buffer;
using bench::median;
using bench::now_ms;

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 41;
  const int64_t batch = argc > 3 ? std::atoi(argv[3]) : 1;
  aotc::rt::ThreadPool pool(threads);
  struct Shape {
    int64_t c_in, c_mid, hw, stride;
  };
  const Shape shapes[] = {{16, 96, 112, 2}, {24, 144, 56, 1}, {24, 144, 56, 2},
                          {32, 192, 28, 1}, {32, 192, 28, 2}, {64, 384, 14, 1},
                          {96, 576, 14, 1}, {96, 576, 14, 2}, {160, 960, 7, 1}};
  std::printf("threads %d, batch %ld, %d runs each, alternating; median ms\n", threads,
              static_cast<long>(batch), runs);
  std::printf("%-18s %9s %9s %9s %9s %8s\n", "layer", "1x1", "dw", "apart", "fused", "fus/apt");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Shape& s : shapes) {
    aotc::rt::Conv2dParams pw;
    pw.n = batch;
    pw.c_in = s.c_in;
    pw.c_out = s.c_mid;
    pw.h_in = pw.w_in = pw.h_out = pw.w_out = s.hw;
    pw.has_bias = true;
    pw.clamp_lo = 0.0f;
    pw.clamp_hi = 6.0f;
    aotc::rt::Conv2dParams dw = pw;
    dw.c_in = dw.c_out = dw.groups = s.c_mid;
    dw.kernel_h = dw.kernel_w = 3;
    dw.stride_h = dw.stride_w = s.stride;
    dw.pad_h = dw.pad_w = 1;
    dw.h_out = dw.w_out = (s.hw - 1) / s.stride + 1;
    const int64_t plane = s.hw * s.hw;
    Buffer x(batch * s.c_in * plane), w1(s.c_mid * s.c_in), b1(s.c_mid), w2(s.c_mid * 9), b2(s.c_mid);
    Buffer mid(batch * s.c_mid * plane), y(batch * s.c_mid * dw.h_out * dw.w_out);
    for (int64_t i = 0; i < batch * s.c_in * plane; ++i) x.data[i] = dist(rng);
    for (int64_t i = 0; i < s.c_mid * s.c_in; ++i) w1.data[i] = dist(rng) * 0.2f;
    for (int64_t i = 0; i < s.c_mid * 9; ++i) w2.data[i] = dist(rng) * 0.3f;
    for (int64_t i = 0; i < s.c_mid; ++i) b1.data[i] = b2.data[i] = dist(rng);
    aotc::rt::GemmParams g;
    g.k = s.c_in;
    g.n = s.c_mid;
    g.trans_b = true;
    g.ldb = s.c_in;
    Buffer packed(aotc::rt::gemm_prepacked_floats(g.n, g.k));
    aotc::rt::gemm_prepack_weights(g, w1.data, packed.data);
    Buffer scratch(std::max<int64_t>(1, aotc::rt::conv2d_scratch_bytes(pw) / 4));
    const int64_t thread_bytes =
        std::max({aotc::rt::conv2d_thread_scratch_bytes(pw), aotc::rt::conv2d_thread_scratch_bytes(dw),
                  aotc::rt::conv2d_expand_depthwise_thread_scratch_bytes(pw, dw)});
    const int64_t stride_bytes = (thread_bytes + 63) / 64 * 64;
    Buffer thread_scratch(threads * stride_bytes / 4 + 16);
    pool.set_thread_scratch(reinterpret_cast<unsigned char*>(thread_scratch.data),
                            static_cast<size_t>(stride_bytes));
    std::vector<double> times[4];
    for (int r = 0; r < runs + 3; ++r)
      for (int turn = 0; turn < 2; ++turn) {
        const int which = (r + turn) % 2;
        if (which == 0) {
          const double t0 = now_ms();
          aotc::rt::conv2d_f32(pool, pw, x.data, w1.data, b1.data, nullptr, mid.data, scratch.data);
          const double t1 = now_ms();
          aotc::rt::conv2d_f32(pool, dw, mid.data, w2.data, b2.data, nullptr, y.data, nullptr);
          const double t2 = now_ms();
          if (r >= 3) {
            times[0].push_back(t2 - t0);
            times[2].push_back(t1 - t0);
            times[3].push_back(t2 - t1);
          }
        } else {
          const double t0 = now_ms();
          aotc::rt::conv2d_expand_depthwise_f32(pool, pw, dw, x.data, packed.data, b1.data, w2.data, b2.data,
                                                y.data);
          if (r >= 3) times[1].push_back(now_ms() - t0);
        }
      }
    pool.set_thread_scratch(nullptr, 0);
    const double apart = median(times[0]), fused = median(times[1]);
    char name[64];
    std::snprintf(name, sizeof name, "%ld>%ldx%ld/%ld", static_cast<long>(s.c_in), static_cast<long>(s.c_mid),
                  static_cast<long>(s.hw), static_cast<long>(s.stride));
    std::printf("%-18s %9.4f %9.4f %9.4f %9.4f %8.3f\n", name, median(times[2]), median(times[3]), apart,
                fused, fused / apart);
  }
  return 0;
}
