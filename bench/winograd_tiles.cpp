// winograd_tiles.cpp - per-layer A/B of the CPU Winograd output tiles: F(2x2, 3x3) against
// F(4x4, 3x3) (and the implicit-GEMM path, conv2d_f32, for reference) on the 3x3 stride-1
// layers of resnet18/50, taking turns run by run in one process so that all see the same
// machine state. Prints the median milliseconds of each and the ratio F4 / F2; the
// compiler's choice (conv2d_winograd_tile in runtime/include/aotc/rt/kernels/conv.h) follows it.
//
// Build after ./scripts/setup.sh (the runtime library is build/runtime/libaotc_runtime.a):
//   g++ -O2 -std=c++20 -Iruntime/include bench/winograd_tiles.cpp
//       build/runtime/libaotc_runtime.a -lpthread -o build/winograd_tiles   (one line)
//   build/winograd_tiles [threads] [runs] [shape index]   (default 2 threads, 41 runs, all shapes)
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_util.h"

namespace {

using aotc::rt::Conv2dParams;

using bench::Buffer;
using bench::median;
using bench::now_ms;

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 41;
  aotc::rt::ThreadPool pool(threads);
  struct Shape {
    int64_t n, c_in, c_out, hw;
  };
  // resnet18/50's layers at batches 1 to 8, sizes between theirs (a 96x96 input gives
  // 24x24), VGG-like wide layers, whose transformed weights are largest, and U-Net-like
  // narrow ones (few channels, large planes; an RGB input).
  const Shape shapes[] = {
      {1, 64, 64, 56},   {1, 128, 128, 28}, {1, 256, 256, 14}, {1, 512, 512, 7},  {8, 64, 64, 56},
      {8, 512, 512, 7},  {1, 64, 64, 24},   {1, 64, 64, 20},   {1, 128, 128, 16}, {1, 256, 256, 56},
      {1, 512, 512, 28}, {1, 64, 64, 112},  {8, 128, 128, 28}, {8, 256, 256, 14}, {2, 512, 512, 7},
      {4, 512, 512, 7},  {6, 512, 512, 7},  {2, 256, 256, 14}, {1, 32, 32, 56},   {1, 32, 32, 112},
      {1, 16, 16, 112},  {1, 32, 32, 28},   {1, 48, 48, 56},   {1, 8, 8, 112},    {1, 3, 64, 224},
      {1, 3, 32, 112},   {1, 64, 32, 112},  {1, 32, 64, 56},   {1, 16, 16, 28},   {1, 16, 16, 14},
      {1, 64, 3, 112},   {1, 64, 8, 112},   {1, 8, 64, 112},   {1, 4, 16, 56},    {1, 6, 16, 56},
      {1, 16, 64, 56},   {1, 16, 128, 56},  {1, 32, 256, 28},  {1, 12, 12, 56},   {1, 16, 64, 112}};
  const int only = argc > 3 ? std::atoi(argv[3]) : -1;  // one shape, by index
  std::printf("threads %d, %d runs each, alternating; median ms\n", threads, runs);
  std::printf("%-20s %9s %9s %9s %8s\n", "layer", "gemm", "F(2x2)", "F(4x4)", "F4/F2");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Shape& s : shapes) {
    if (only >= 0 && &s - shapes != only) continue;
    Conv2dParams p;
    p.n = s.n;
    p.c_in = s.c_in;
    p.c_out = s.c_out;
    p.h_in = p.w_in = p.h_out = p.w_out = s.hw;
    p.kernel_h = p.kernel_w = 3;
    p.pad_h = p.pad_w = 1;
    p.has_bias = true;
    p.clamp_lo = 0.0f;
    Buffer x(p.n * p.c_in * s.hw * s.hw), w(p.c_out * p.c_in * 9), bias(p.c_out),
        y(p.n * p.c_out * s.hw * s.hw);
    for (int64_t i = 0; i < p.n * p.c_in * s.hw * s.hw; ++i) x.data[i] = dist(rng);
    for (int64_t i = 0; i < p.c_out * p.c_in * 9; ++i) w.data[i] = dist(rng) * 0.05f;
    for (int64_t i = 0; i < p.c_out; ++i) bias.data[i] = dist(rng);
    Buffer u2(16 * p.c_out * p.c_in), u4(36 * p.c_out * p.c_in);
    aotc::rt::conv2d_winograd_weights(p, 2, w.data, u2.data);
    aotc::rt::conv2d_winograd_weights(p, 4, w.data, u4.data);
    const int64_t scratch_bytes =
        std::max({aotc::rt::conv2d_winograd_scratch_bytes(p, 2),
                  aotc::rt::conv2d_winograd_scratch_bytes(p, 4), aotc::rt::conv2d_scratch_bytes(p)});
    const int64_t thread_bytes = std::max({aotc::rt::conv2d_winograd_thread_scratch_bytes(p, 2),
                                           aotc::rt::conv2d_winograd_thread_scratch_bytes(p, 4),
                                           aotc::rt::conv2d_thread_scratch_bytes(p)});
    Buffer scratch(scratch_bytes / 4 + 1), thread_scratch(threads * ((thread_bytes + 63) / 64 * 16) + 16);
    pool.set_thread_scratch(reinterpret_cast<unsigned char*>(thread_scratch.data),
                            static_cast<size_t>((thread_bytes + 63) / 64 * 64));
    // The three take turns in a rotating order: whichever runs after another finds the
    // shared scratch in the state that one left it in.
    std::vector<double> times[3];
    for (int r = 0; r < runs + 3; ++r) {
      for (int turn = 0; turn < 3; ++turn) {
        const int which = (r + turn) % 3;
        const double t0 = now_ms();
        if (which == 0)
          aotc::rt::conv2d_f32(pool, p, x.data, w.data, bias.data, nullptr, y.data, scratch.data);
        else
          aotc::rt::conv2d_winograd_f32(pool, p, which == 1 ? 2 : 4, x.data, which == 1 ? u2.data : u4.data,
                                        bias.data, nullptr, y.data, scratch.data);
        if (r >= 3) times[which].push_back(now_ms() - t0);  // after 3 warm-up rounds
      }
    }
    const std::vector<double>&t_gemm = times[0], &t2 = times[1], &t4 = times[2];
    pool.set_thread_scratch(nullptr, 0);
    char name[64];
    std::snprintf(name, sizeof name, "%ldx%ld>%ldx%ldx%ld", static_cast<long>(s.n), static_cast<long>(s.c_in),
                  static_cast<long>(s.c_out), static_cast<long>(s.hw), static_cast<long>(s.hw));
    std::printf("%-20s %9.3f %9.3f %9.3f %8.3f\n", name, median(t_gemm), median(t2), median(t4),
                median(t4) / median(t2));
  }
  return 0;
}
