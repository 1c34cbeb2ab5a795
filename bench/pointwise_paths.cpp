// pointwise_paths.cpp - per-layer A/B of the two CPU paths of a 1x1 stride-1 convolution:
// Eigen's GEMM on the input as it is (conv2d_f32 when conv2d_pointwise_on_eigen says so)
// against the own implicit GEMM (detail::conv2d_gemm_f32), taking turns run by run in one
// process, over the 1x1 layers of torchvision's mobilenet_v2, efficientnet_b0, resnet18/50,
// googlenet, densenet121, squeezenet1_1, regnet_x_400mf and shufflenet_v2 at 224x224.
// Prints the median milliseconds of each, own / Eigen, and which one the runtime takes;
// the rule in conv2d_pointwise_on_eigen (runtime/include/aotc/rt/kernels/conv.h) follows it.
//
// Build after ./scripts/setup.sh (one line):
//   g++ -O2 -march=x86-64-v3 -std=c++20 -Iruntime/include -Iruntime/src/kernels
//       bench/pointwise_paths.cpp build/runtime/libaotc_runtime.a -lpthread -o build/pointwise_paths
//   build/pointwise_paths [threads] [runs]   (default 2 threads, 41 runs)
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_util.h"
#include "kernel_util.h"

namespace {

using bench::Buffer;
using bench::median;
using bench::now_ms;

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 41;
  aotc::rt::ThreadPool pool(threads);
  struct Shape {
    int64_t c_in, c_out, hw;
  };
  const Shape shapes[] = {
      {16, 64, 55},   {16, 96, 112},  {24, 58, 28},   {24, 58, 56},    {24, 144, 56},   {32, 16, 112},
      {32, 32, 56},   {32, 32, 112},  {32, 64, 56},   {32, 128, 27},   {32, 192, 28},   {40, 240, 28},
      {48, 192, 13},  {58, 58, 28},   {64, 16, 55},   {64, 64, 28},    {64, 64, 56},    {64, 128, 56},
      {64, 160, 28},  {64, 256, 13},  {64, 256, 56},  {64, 384, 14},   {80, 480, 14},   {96, 24, 56},
      {96, 128, 56},  {96, 576, 14},  {112, 672, 14}, {116, 116, 14},  {116, 116, 28},  {128, 16, 55},
      {128, 32, 27},  {128, 128, 28}, {128, 128, 56}, {128, 512, 28},  {144, 24, 56},   {144, 32, 28},
      {144, 40, 28},  {160, 128, 28}, {160, 128, 56}, {160, 160, 14},  {160, 400, 14},  {160, 960, 7},
      {192, 16, 28},  {192, 32, 28},  {192, 64, 14},  {192, 64, 28},   {192, 96, 28},   {192, 128, 28},
      {192, 128, 56}, {192, 1152, 7}, {224, 128, 28}, {224, 128, 56},  {232, 232, 7},   {232, 232, 14},
      {240, 40, 28},  {240, 80, 14},  {256, 32, 27},  {256, 32, 28},   {256, 48, 13},   {256, 64, 28},
      {256, 64, 56},  {256, 128, 14}, {256, 128, 28}, {256, 128, 56},  {256, 1024, 14}, {288, 128, 14},
      {288, 128, 28}, {320, 128, 14}, {320, 128, 28}, {320, 1280, 7},  {384, 64, 14},   {384, 96, 14},
      {384, 128, 14}, {400, 400, 7},  {464, 1024, 7}, {480, 16, 14},   {480, 80, 14},   {480, 112, 14},
      {480, 192, 14}, {512, 32, 14},  {512, 128, 7},  {512, 128, 14},  {512, 128, 28},  {512, 256, 28},
      {512, 2048, 7}, {576, 96, 14},  {576, 160, 7},  {672, 112, 14},  {672, 192, 7},   {832, 128, 7},
      {832, 384, 7},  {960, 160, 7},  {960, 320, 7},  {1024, 256, 14}, {1024, 512, 14}, {1152, 192, 7},
      {1152, 320, 7}, {2048, 512, 7}};
  std::printf("threads %d, %d runs each, alternating; median ms\n", threads, runs);
  std::printf("%-16s %9s %9s %8s %6s\n", "layer", "eigen", "own", "own/eig", "takes");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  double total_taken = 0.0, total_best = 0.0;
  for (const Shape& s : shapes) {
    aotc::rt::Conv2dParams p;
    p.n = 1;
    p.c_in = s.c_in;
    p.c_out = s.c_out;
    p.h_in = p.w_in = p.h_out = p.w_out = s.hw;
    p.has_bias = true;
    p.clamp_lo = 0.0f;
    const int64_t plane = s.hw * s.hw;
    Buffer x(s.c_in * plane), w(s.c_out * s.c_in), bias(s.c_out), y(s.c_out * plane);
    for (int64_t i = 0; i < s.c_in * plane; ++i) x.data[i] = dist(rng);
    for (int64_t i = 0; i < s.c_in * s.c_out; ++i) w.data[i] = dist(rng) * 0.05f;
    for (int64_t i = 0; i < s.c_out; ++i) bias.data[i] = dist(rng);
    // The own path's arena scratch as the planner would size it if the layer took that path
    // (conv2d_scratch_bytes: the packed columns, up to 2 MiB), and the pool's thread scratch.
    const int64_t packed_floats = s.c_in * ((plane + 15) / 16 * 16);
    Buffer scratch(packed_floats);
    const bool fits = packed_floats <= aotc::rt::gemm_conv::kMaxPrepackFloats;
    // Eigen's path, as conv2d_f32 takes it for one image: the input is the right operand.
    aotc::rt::GemmParams g;
    g.m = s.c_out;
    g.n = plane;
    g.k = s.c_in;
    g.lda = s.c_in;
    g.ldb = g.ldc = g.ldr = plane;
    g.bias_kind = aotc::rt::BiasKind::PerRow;
    g.clamp_lo = 0.0f;
    const int64_t thread_bytes =
        std::max<int64_t>(aotc::rt::conv2d_thread_scratch_bytes(p), aotc::rt::gemm_thread_scratch_bytes(g));
    Buffer thread_scratch(threads * (thread_bytes / 4 + 16));
    pool.set_thread_scratch(reinterpret_cast<unsigned char*>(thread_scratch.data),
                            static_cast<size_t>((thread_bytes + 63) / 64 * 64));
    std::vector<double> times[2];
    for (int r = 0; r < runs + 3; ++r)
      for (int turn = 0; turn < 2; ++turn) {
        const int which = (r + turn) % 2;
        const double t0 = now_ms();
        if (which == 0) {
          aotc::rt::gemm_f32(pool, g, w.data, x.data, bias.data, y.data);
        } else {
          aotc::rt::detail::conv2d_gemm_f32(pool, p, x.data, w.data, bias.data, nullptr, y.data,
                                            fits ? scratch.data : nullptr);
        }
        if (r >= 3) times[which].push_back(now_ms() - t0);  // after 3 warm-up rounds
      }
    pool.set_thread_scratch(nullptr, 0);
    const double eigen = median(times[0]), own = median(times[1]);
    const bool on_eigen = aotc::rt::conv2d_pointwise_on_eigen(p);
    total_taken += on_eigen ? eigen : own;
    total_best += std::min(eigen, own);
    char name[64];
    std::snprintf(name, sizeof name, "%ld>%ldx%ld", static_cast<long>(s.c_in), static_cast<long>(s.c_out),
                  static_cast<long>(s.hw));
    std::printf("%-16s %9.4f %9.4f %8.3f %6s\n", name, eigen, own, own / eigen, on_eigen ? "eigen" : "own");
  }
  std::printf("sum of the paths taken %.3f ms, of the faster of each %.3f ms\n", total_taken, total_best);
  return 0;
}
