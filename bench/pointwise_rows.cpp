// pointwise_rows.cpp - per-layer A/B of a 1x1 stride-1 convolution on the implicit GEMM
// (detail::conv2d_gemm_f32, weights as the tile's rows, or the few-output kernel where it
// applies) against conv2d_pointwise_rows_f32 (positions as the tile's rows, weights packed
// at compile time), taking turns run by run in one process, over the 1x1 layers of the
// CNN benchmark models. Each run reads a different copy of the weights, rotating through
// about 64 MiB of copies, so that the weights come from DRAM as they do in a whole model.
// Prints the median milliseconds of each, rows / gemm, GFLOP/s, and the largest relative
// difference of the outputs.
//
// Build after ./scripts/setup.sh (one line):
//   g++ -O2 -march=x86-64-v3 -std=c++20 -Iruntime/include -Iruntime/src/kernels
//       bench/pointwise_rows.cpp build/runtime/libaotc_runtime.a -lpthread -o build/pointwise_rows
//   build/pointwise_rows [threads] [runs] [in-cache: 0|1]   (default 2 threads, 41 runs, 0)
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_util.h"
#include "kernel_util.h"

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 41;
  const bool in_cache = argc > 3 && std::atoi(argv[3]) != 0;
  // Both turns on one path (the noise floor): SAME=1 the implicit GEMM, SAME_ROWS=1 the rows.
  const bool same = std::getenv("SAME") != nullptr, same_rows = std::getenv("SAME_ROWS") != nullptr;
  aotc::rt::ThreadPool pool(threads);
  struct Shape {
    int64_t c_in, c_out, hw;
  };
  const Shape shapes[] = {{96, 24, 56},   {144, 24, 56},   {144, 32, 28},   {192, 32, 28},  {192, 64, 14},
                          {384, 64, 14},  {384, 96, 14},   {576, 96, 14},   {576, 160, 7},  {960, 160, 7},
                          {960, 320, 7},  {320, 1280, 7},  {240, 40, 28},   {480, 80, 14},  {480, 112, 14},
                          {672, 112, 14}, {672, 192, 7},   {1152, 192, 7},  {1152, 320, 7}, {256, 64, 56},
                          {512, 128, 28}, {1024, 256, 14}, {2048, 512, 7},  {512, 2048, 7}, {64, 384, 14},
                          {160, 960, 7},  {13, 45, 9},     {200, 37, 5},    {128, 512, 28}, {64, 256, 56},
                          {256, 128, 56}, {512, 256, 28},  {1024, 512, 14}, {128, 128, 28}, {144, 24, 28}};
  std::printf("threads %d, %d runs each, alternating, weights %s; median ms\n", threads, runs,
              in_cache ? "in cache" : "rotated through 64 MiB");
  std::printf("%-14s %9s %9s %8s %8s %8s %10s\n", "layer", "gemm", "rows", "rows/gm", "GF gemm", "GF rows",
              "max diff");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  double sum_gemm = 0, sum_rows = 0;
  for (const Shape& s : shapes) {
    aotc::rt::Conv2dParams p;
    p.n = 1;
    p.c_in = s.c_in;
    p.c_out = s.c_out;
    p.h_in = p.w_in = p.h_out = p.w_out = s.hw;
    p.has_bias = true;
    const int64_t plane = s.hw * s.hw, wf = s.c_out * s.c_in;
    const int64_t copies = in_cache ? 1 : std::max<int64_t>(2, (16 << 20) / wf);
    bench::Buffer x(s.c_in * plane), bias(s.c_out), res(s.c_out * plane), y0(s.c_out * plane),
        y1(s.c_out * plane);
    const int64_t pf = aotc::rt::conv2d_pointwise_rows_packed_floats(p);
    bench::Buffer w(copies * wf), wp(copies * pf);
    for (int64_t i = 0; i < s.c_in * plane; ++i) x.data[i] = dist(rng);
    for (int64_t i = 0; i < wf; ++i) w.data[i] = dist(rng) * 0.05f;
    for (int64_t i = 0; i < s.c_out; ++i) bias.data[i] = dist(rng);
    for (int64_t i = 0; i < s.c_out * plane; ++i) res.data[i] = dist(rng);
    for (int64_t c = 1; c < copies; ++c) std::copy(w.data, w.data + wf, w.data + c * wf);
    for (int64_t c = 0; c < copies; ++c)
      aotc::rt::conv2d_pointwise_rows_pack(p, w.data + c * wf, wp.data + c * pf);
    const int64_t thread_bytes = aotc::rt::conv2d_thread_scratch_bytes(p);
    bench::Buffer thread_scratch(threads * (thread_bytes / 4 + 16));
    pool.set_thread_scratch(reinterpret_cast<unsigned char*>(thread_scratch.data),
                            static_cast<size_t>((thread_bytes + 63) / 64 * 64));
    const int64_t packed_floats = s.c_in * ((plane + 15) / 16 * 16);
    bench::Buffer scratch(packed_floats);
    const bool fits = packed_floats <= aotc::rt::gemm_conv::kMaxPrepackFloats;
    std::vector<double> times[2];
    int64_t copy = 0;
    for (int r = 0; r < runs + 3; ++r)
      for (int turn = 0; turn < 2; ++turn) {
        const int which = (r + turn) % 2;
        copy = (copy + 1) % copies;
        const double t0 = bench::now_ms();
        if ((which == 0 || same) && !same_rows) {
          if (aotc::rt::detail::conv2d_pointwise_few_rows_applies(p))
            aotc::rt::detail::conv2d_pointwise_few_rows_f32(pool, p, x.data, w.data + copy * wf, bias.data,
                                                            res.data, y0.data);
          else
            aotc::rt::detail::conv2d_gemm_f32(pool, p, x.data, w.data + copy * wf, bias.data, res.data,
                                              y0.data, fits ? scratch.data : nullptr);
        } else {
          aotc::rt::conv2d_pointwise_rows_f32(pool, p, x.data, wp.data + copy * pf, bias.data, res.data,
                                              y1.data);
        }
        if (r >= 3) times[which].push_back(bench::now_ms() - t0);
      }
    pool.set_thread_scratch(nullptr, 0);
    double diff = 0;
    for (int64_t i = 0; i < s.c_out * plane; ++i)
      diff =
          std::max(diff, std::fabs(double(y0.data[i]) - y1.data[i]) / (1.0 + std::fabs(double(y0.data[i]))));
    const double a = bench::median(times[0]), b = bench::median(times[1]);
    sum_gemm += a;
    sum_rows += b;
    const double gf = 2.0 * double(s.c_in) * double(s.c_out) * double(plane) * 1e-6;
    char name[64];
    std::snprintf(name, sizeof name, "%ld>%ld@%ld", long(s.c_in), long(s.c_out), long(s.hw));
    std::printf("%-14s %9.4f %9.4f %8.3f %8.1f %8.1f %10.2e\n", name, a, b, b / a, gf / a, gf / b, diff);
  }
  std::printf("sums: gemm %.3f ms, rows %.3f ms\n", sum_gemm, sum_rows);
  return 0;
}
