// spatial_rows.cpp - per-layer A/B of a 3x3 convolution on the paths the CPU target has for
// it: the implicit GEMM (conv2d_f32), Winograd with the tile the compiler picks (stride 1
// only) and the positions-as-rows kernel (conv2d_pointwise_rows_f32 on a spatial kernel),
// taking turns run by run in one process, over resnet18/50's 3x3 layers. Each run reads a
// different copy of the weights, rotating through about 64 MiB of copies, so that the
// weights come from DRAM as they do in a whole model. Prints the median milliseconds of
// each, rows / best other, GFLOP/s of the rows kernel, and the largest relative difference
// of its outputs from the implicit GEMM's.
//
// Build: `meson configure build -Dbench=true && ninja -C build bench/spatial_rows`, then
//   build/bench/spatial_rows [threads] [runs] [batch]   (default 2 threads, 41 runs, batch 1)
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_util.h"

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 41;
  const int64_t batch = argc > 3 ? std::atoi(argv[3]) : 1;
  aotc::rt::ThreadPool pool(threads);
  struct Shape {
    int64_t c_in, c_out, hw_in, stride;
  };
  const Shape shapes[] = {{64, 64, 56, 1},   {128, 128, 28, 1}, {256, 256, 14, 1}, {512, 512, 7, 1},
                          {64, 128, 56, 2},  {128, 256, 28, 2}, {256, 512, 14, 2}, {128, 128, 14, 1},
                          {256, 256, 7, 1},  {96, 160, 14, 1},  {512, 512, 14, 2}, {256, 256, 28, 2},
                          {128, 128, 56, 2}, {32, 64, 112, 2},  {160, 160, 28, 2}};
  std::printf("threads %d, batch %ld, %d runs each, alternating, weights rotated through 64 MiB; median ms\n",
              threads, static_cast<long>(batch), runs);
  std::printf("%-18s %9s %9s %9s %8s %8s %10s\n", "layer", "gemm", "winograd", "rows", "rows/best", "GF rows",
              "max diff");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Shape& s : shapes) {
    aotc::rt::Conv2dParams p;
    p.n = batch;
    p.c_in = s.c_in;
    p.c_out = s.c_out;
    p.h_in = p.w_in = s.hw_in;
    p.kernel_h = p.kernel_w = 3;
    p.pad_h = p.pad_w = 1;
    p.stride_h = p.stride_w = s.stride;
    p.h_out = p.w_out = (s.hw_in + 2 - 3) / s.stride + 1;
    p.has_bias = true;
    p.clamp_lo = 0.0f;
    const bool winograd = aotc::rt::conv2d_winograd_applies(p);
    const int64_t tile = winograd ? aotc::rt::conv2d_winograd_tile(p) : 0;
    const int64_t in_floats = p.n * p.c_in * p.h_in * p.w_in, out_floats = p.n * p.c_out * p.h_out * p.w_out;
    const int64_t wf = p.c_out * p.c_in * 9, pf = aotc::rt::conv2d_pointwise_rows_packed_floats(p);
    const int64_t uf = winograd ? aotc::rt::conv2d_winograd_points(tile) * p.c_out * p.c_in : 0;
    const int64_t copies = std::max<int64_t>(2, (16 << 20) / std::max(wf, uf));
    bench::Buffer x(in_floats), bias(p.c_out), y0(out_floats), y1(out_floats), y2(out_floats);
    bench::Buffer w(copies * wf), wp(copies * pf), u(copies * uf + 1);
    for (int64_t i = 0; i < in_floats; ++i) x.data[i] = dist(rng);
    for (int64_t i = 0; i < wf; ++i) w.data[i] = dist(rng) * 0.05f;
    for (int64_t i = 0; i < p.c_out; ++i) bias.data[i] = dist(rng);
    for (int64_t c = 0; c < copies; ++c) {
      if (c > 0) std::copy(w.data, w.data + wf, w.data + c * wf);
      aotc::rt::conv2d_pointwise_rows_pack(p, w.data, wp.data + c * pf);
      if (winograd) aotc::rt::conv2d_winograd_weights(p, tile, w.data, u.data + c * uf);
    }
    const int64_t scratch_bytes =
        std::max({winograd ? aotc::rt::conv2d_winograd_scratch_bytes(p, tile) : 0,
                  aotc::rt::conv2d_scratch_bytes(p), aotc::rt::conv2d_pointwise_rows_scratch_bytes(p)});
    const int64_t thread_bytes =
        std::max(winograd ? aotc::rt::conv2d_winograd_thread_scratch_bytes(p, tile) : 0,
                 aotc::rt::conv2d_thread_scratch_bytes(p));
    bench::Buffer scratch(scratch_bytes / 4 + 1),
        thread_scratch(threads * ((thread_bytes + 63) / 64 * 16) + 16);
    pool.set_thread_scratch(reinterpret_cast<unsigned char*>(thread_scratch.data),
                            static_cast<size_t>((thread_bytes + 63) / 64 * 64));
    std::vector<double> times[3];
    int64_t copy = 0;
    const int paths = winograd ? 3 : 2;
    for (int r = 0; r < runs + 3; ++r)
      for (int turn = 0; turn < 3; ++turn) {
        const int which = (r + turn) % 3;
        if (which == 1 && !winograd) continue;
        copy = (copy + 1) % copies;
        const double t0 = bench::now_ms();
        if (which == 0)
          aotc::rt::conv2d_f32(pool, p, x.data, w.data + copy * wf, bias.data, nullptr, y0.data,
                               scratch.data);
        else if (which == 1)
          aotc::rt::conv2d_winograd_f32(pool, p, tile, x.data, u.data + copy * uf, bias.data, nullptr,
                                        y1.data, scratch.data);
        else
          aotc::rt::conv2d_pointwise_rows_f32(pool, p, x.data, wp.data + copy * pf, bias.data, nullptr,
                                              y2.data, scratch.data);
        if (r >= 3) times[which].push_back(bench::now_ms() - t0);
      }
    (void)paths;
    pool.set_thread_scratch(nullptr, 0);
    double diff = 0;
    for (int64_t i = 0; i < out_floats; ++i)
      diff =
          std::max(diff, std::fabs(double(y0.data[i]) - y2.data[i]) / (1.0 + std::fabs(double(y0.data[i]))));
    const double g = bench::median(times[0]), wg = winograd ? bench::median(times[1]) : 0.0,
                 rows = bench::median(times[2]);
    const double best = winograd ? std::min(g, wg) : g;
    const double gf = 2.0 * double(p.n * p.c_out * p.h_out * p.w_out) * double(p.c_in * 9) * 1e-6;
    char name[64];
    std::snprintf(name, sizeof name, "%ld>%ld@%ld/%ld", long(s.c_in), long(s.c_out), long(s.hw_in),
                  long(s.stride));
    std::printf("%-18s %9.4f %9.4f %9.4f %8.3f %8.1f %10.2e\n", name, g, wg, rows, rows / best, gf / rows,
                diff);
  }
  return 0;
}
