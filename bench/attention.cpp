// attention.cpp - attention_f32 alone on the shapes of the transformer benchmark models:
// vit_b_16 (197 tokens, 12 heads of 64) and bert_base (128 tokens), reading Q, K and V
// through the strides of one packed QKV projection [T, 3 * 768] as the compiled models do,
// and writing the heads side by side. Prints the median milliseconds and GFLOP/s of
// the two products (4 * T * T * 64 flops a head).
//
// Build after ./scripts/setup.sh (one line):
//   g++ -O2 -march=x86-64-v3 -std=c++20 -Iruntime/include -Iruntime/src/kernels
//       bench/attention.cpp build/runtime/libaotc_runtime.a -lpthread -o build/attention_bench
//   build/attention_bench [threads] [runs]   (default 2 threads, 201 runs)
// To compare two versions of the kernel, build one binary against each library and run
// them by turns (their medians move with this machine's speed phases).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_util.h"

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 201;
  aotc::rt::ThreadPool pool(threads);
  struct Shape {
    const char* name;
    int64_t tokens, heads, head_dim;
  };
  const Shape shapes[] = {{"vit_b_16", 197, 12, 64}, {"bert_base", 128, 12, 64}};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Shape& s : shapes) {
    const int64_t width = s.heads * s.head_dim, T = s.tokens;
    aotc::rt::AttentionParams p;
    p.heads = s.heads;
    p.q_len = p.kv_len = T;
    p.head_dim = p.v_head_dim = s.head_dim;
    p.scale = 0.125f;
    // [T, 3, H, E]: row stride 3 * width, head stride E; the output [T, H, E].
    const int64_t q_strides[3] = {T * 3 * width, s.head_dim, 3 * width};
    for (int d = 0; d < 3; ++d) {
      p.q_strides[d] = p.k_strides[d] = p.v_strides[d] = q_strides[d];
    }
    p.out_strides[0] = T * width;
    p.out_strides[1] = s.head_dim;
    p.out_strides[2] = width;
    bench::Buffer qkv(T * 3 * width), out(T * width);
    for (int64_t i = 0; i < T * 3 * width; ++i) qkv.data[i] = dist(rng);
    const int64_t thread_bytes = aotc::rt::attention_thread_scratch_bytes(p);
    bench::Buffer scratch(threads * (thread_bytes / 4 + 16));
    pool.set_thread_scratch(reinterpret_cast<unsigned char*>(scratch.data),
                            static_cast<size_t>((thread_bytes + 63) / 64 * 64));
    std::vector<double> times;
    for (int r = 0; r < runs + 5; ++r) {
      const double t0 = bench::now_ms();
      aotc::rt::attention_f32(pool, p, qkv.data, qkv.data + width, qkv.data + 2 * width, nullptr, out.data,
                              nullptr);
      if (r >= 5) times.push_back(bench::now_ms() - t0);
    }
    pool.set_thread_scratch(nullptr, 0);
    double check = 0;
    for (int64_t i = 0; i < T * width; ++i) check += out.data[i];
    const double ms = bench::median(times);
    const double gflop = 4.0 * double(T) * double(T) * double(s.head_dim) * double(s.heads) * 1e-9;
    std::printf("%-10s threads %d: %.4f ms, %.1f GFLOP/s (checksum %.6g)\n", s.name, threads, ms,
                gflop / ms * 1e3, check);
  }
  return 0;
}
