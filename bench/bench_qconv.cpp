// bench_qconv.cpp - per-layer times of the int8 convolutions and linear layer (qconv2d_u8,
// qlinear_u8) on resnet18's and mobilenet_v2's shapes, beside the float32 kernels of the same
// layer (conv2d_f32, and for 3x3 stride-1 layers the Winograd F(4x4) path, the faster of
// which the float model would take), the two taking turns run by run. Prints the median
// milliseconds, the int8 GOP/s (2 ops a multiply-add) and int8 / float. The int8 kernels take
// their AMX or AVX512-VNNI forms where the CPU has them: AOTC_CPU_AMX=0 times the vpdpbusd
// tiles, AOTC_CPU_AVX512=0 the AVX2 forms.
//
// Build after ./scripts/setup.sh (the runtime library is build/runtime/libaotc_runtime.a):
//   g++ -O2 -std=c++20 -Iruntime/include bench/bench_qconv.cpp
//       build/runtime/libaotc_runtime.a -lpthread -o build/bench_qconv   (one line)
//   build/bench_qconv [threads] [runs] [layer index]   (default 1 thread, 21 runs, all layers)
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_util.h"

namespace {

using aotc::rt::Conv2dParams;
using aotc::rt::QConv2dParams;
using bench::Buffer;
using bench::median;
using bench::now_ms;

struct Layer {
  const char* name;
  int64_t c_in, c_out, hw, k, stride, groups;  // hw: input height and width; linear: k = 0
};

// 64-byte aligned bytes.
struct ByteBuffer {
  std::vector<unsigned char> storage;
  unsigned char* data;
  explicit ByteBuffer(int64_t bytes) : storage(static_cast<size_t>(bytes) + 64) {
    const auto address = reinterpret_cast<uintptr_t>(storage.data());
    data = storage.data() + (64 - address % 64) % 64;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 21;
  const int only = argc > 3 ? std::atoi(argv[3]) : -1;
  aotc::rt::ThreadPool pool(threads);
  const Layer layers[] = {
      {"r18 stem 7x7 s2", 3, 64, 224, 7, 2, 1},       {"r18 3x3 64 56", 64, 64, 56, 3, 1, 1},
      {"r18 3x3 128 28", 128, 128, 28, 3, 1, 1},      {"r18 3x3 256 14", 256, 256, 14, 3, 1, 1},
      {"r18 3x3 512 7", 512, 512, 7, 3, 1, 1},        {"r18 3x3 s2 64>128", 64, 128, 56, 3, 2, 1},
      {"r18 1x1 s2 64>128", 64, 128, 56, 1, 2, 1},    {"1x1 64>64 56", 64, 64, 56, 1, 1, 1},
      {"mv2 1x1 24>144 56", 24, 144, 56, 1, 1, 1},    {"mv2 1x1 144>24 56", 144, 24, 56, 1, 1, 1},
      {"mv2 dw 3x3 144 56", 144, 144, 56, 3, 1, 144}, {"mv2 dw 3x3 s2 96 112", 96, 96, 112, 3, 2, 96},
      {"mv2 dw 3x3 960 7", 960, 960, 7, 3, 1, 960},   {"mv2 1x1 960>160 7", 960, 160, 7, 1, 1, 1},
      {"mv2 1x1 320>1280 7", 320, 1280, 7, 1, 1, 1},  {"r18 fc 512>1000", 512, 1000, 1, 0, 1, 1},
  };
  std::printf("threads %d, %d runs each, alternating; median ms\n", threads, runs);
  std::printf("%-22s %9s %8s %9s %8s\n", "layer", "int8", "GOP/s", "float", "i8/f32");
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Layer& l : layers) {
    if (only >= 0 && &l - layers != only) continue;
    const bool linear = l.k == 0;
    QConv2dParams q;
    q.c_in = l.c_in;
    q.c_out = l.c_out;
    q.h_in = q.w_in = l.hw;
    q.kernel_h = q.kernel_w = linear ? 1 : l.k;
    q.stride_h = q.stride_w = l.stride;
    q.pad_h = q.pad_w = linear ? 0 : l.k / 2;
    q.groups = l.groups;
    q.in_zero = 3;
    q.h_out = q.w_out = (l.hw + 2 * q.pad_h - q.kernel_h) / l.stride + 1;
    const int64_t cig = l.c_in / l.groups, taps = q.kernel_h * q.kernel_w;
    const int64_t x_bytes = l.c_in * l.hw * l.hw, y_bytes = l.c_out * q.h_out * q.w_out;
    const int64_t w_count = l.c_out * cig * taps;
    ByteBuffer x(x_bytes), y(y_bytes);
    for (int64_t i = 0; i < x_bytes; ++i) x.data[i] = static_cast<unsigned char>(byte(rng));
    std::vector<int8_t> w(static_cast<size_t>(w_count));
    for (auto& v : w) v = static_cast<int8_t>(byte(rng) - 128);
    std::vector<int32_t> off(static_cast<size_t>(l.c_out), 100);
    std::vector<float> bias(static_cast<size_t>(l.c_out), 3.0f), mult(static_cast<size_t>(l.c_out), 1e-4f);
    aotc::rt::QRequant rq;
    rq.acc_offset = off.data();
    rq.bias_over_scale = bias.data();
    rq.multiplier = mult.data();
    rq.out_zero = 10;
    rq.lo = 10;
    const aotc::rt::QLinearParams lp{1, l.c_out, l.c_in};
    const int64_t packed_bytes =
        linear ? aotc::rt::qlinear_packed_weight_bytes(lp) : aotc::rt::qconv2d_packed_weight_bytes(q);
    ByteBuffer packed(packed_bytes);
    auto* wp = reinterpret_cast<int8_t*>(packed.data);
    if (linear)
      aotc::rt::qlinear_pack_weights(lp, w.data(), wp);
    else
      aotc::rt::qconv2d_pack_weights(q, w.data(), wp);

    // The float layer.
    Conv2dParams p;
    p.c_in = l.c_in;
    p.c_out = l.c_out;
    p.h_in = p.w_in = l.hw;
    p.h_out = p.w_out = q.h_out;
    p.kernel_h = p.kernel_w = q.kernel_h;
    p.stride_h = p.stride_w = l.stride;
    p.pad_h = p.pad_w = q.pad_h;
    p.groups = l.groups;
    p.has_bias = true;
    p.clamp_lo = 0.0f;
    Buffer fx(x_bytes), fw(w_count), fb(l.c_out), fy(y_bytes);
    for (int64_t i = 0; i < x_bytes; ++i) fx.data[i] = dist(rng);
    for (int64_t i = 0; i < w_count; ++i) fw.data[i] = dist(rng) * 0.05f;
    const bool winograd = l.k == 3 && l.stride == 1 && l.groups == 1;
    Buffer u4(winograd ? 36 * l.c_out * l.c_in : 1);
    if (winograd) aotc::rt::conv2d_winograd_weights(p, 4, fw.data, u4.data);
    int64_t scratch_bytes = aotc::rt::conv2d_scratch_bytes(p);
    int64_t thread_bytes =
        std::max(aotc::rt::conv2d_thread_scratch_bytes(p), aotc::rt::qconv2d_thread_scratch_bytes(q));
    if (winograd) {
      scratch_bytes = std::max(scratch_bytes, aotc::rt::conv2d_winograd_scratch_bytes(p, 4));
      thread_bytes = std::max(thread_bytes, aotc::rt::conv2d_winograd_thread_scratch_bytes(p, 4));
    }
    if (linear) thread_bytes = std::max(thread_bytes, aotc::rt::qlinear_thread_scratch_bytes(lp));
    Buffer scratch(scratch_bytes / 4 + 1);
    const int64_t stride = (thread_bytes + 63) / 64 * 64;
    ByteBuffer thread_scratch(threads * stride + 64);
    pool.set_thread_scratch(thread_scratch.data, static_cast<size_t>(stride));
    std::vector<double> t_q, t_f, t_w;
    for (int r = 0; r < runs + 2; ++r) {
      for (int turn = 0; turn < 3; ++turn) {
        const int which = (r + turn) % 3;
        if (which == 2 && !winograd) continue;
        const double t0 = now_ms();
        if (which == 0) {
          if (linear)
            aotc::rt::qlinear_u8(pool, lp, x.data, wp, rq, y.data);
          else
            aotc::rt::qconv2d_u8(pool, q, x.data, wp, rq, y.data);
        } else if (which == 1) {
          if (linear)
            aotc::rt::gemm_f32(
                pool,
                [&] {
                  aotc::rt::GemmParams g;
                  g.m = 1;
                  g.n = l.c_out;
                  g.k = l.c_in;
                  g.trans_b = true;
                  return g;
                }(),
                fx.data, fw.data, nullptr, fy.data);
          else
            aotc::rt::conv2d_f32(pool, p, fx.data, fw.data, fb.data, nullptr, fy.data, scratch.data);
        } else {
          aotc::rt::conv2d_winograd_f32(pool, p, 4, fx.data, u4.data, fb.data, nullptr, fy.data,
                                        scratch.data);
        }
        const double dt = now_ms() - t0;
        if (r >= 2) (which == 0 ? t_q : which == 1 ? t_f : t_w).push_back(dt);
      }
    }
    pool.set_thread_scratch(nullptr, 0);
    const double mq = median(t_q), mf = winograd ? std::min(median(t_f), median(t_w)) : median(t_f);
    const double ops = 2.0 * static_cast<double>(y_bytes) * static_cast<double>(cig * taps);
    std::printf("%-22s %9.3f %8.1f %9.3f %8.2f\n", l.name, mq, ops / mq * 1e-6, mf, mq / mf);
  }
  return 0;
}
