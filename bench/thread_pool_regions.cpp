// thread_pool_regions.cpp - what one parallel region costs the runtime's thread pool
// (runtime/src/thread_pool.cpp), apart from the work in it: microseconds per region for
// regions back to back, as a model runs one per op. Three kinds of region: empty ranges
// (parallel_for over `threads` units), a small elementwise op (64 KiB of floats, split the
// way the kernels split one), and parallel_pieces over 4096 units. An A/B of two pool
// versions builds this against each runtime library.
//
// Build with -Dbench=true (build/bench/thread_pool_regions), or:
//   g++ -O2 -std=c++20 -Iruntime/include bench/thread_pool_regions.cpp
//       build/runtime/libaotc_runtime.a -lpthread -o build/thread_pool_regions   (one line)
//   build/thread_pool_regions [threads ...]   (default: 2, and every core when more)
#include <aotc/rt/thread_pool.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "bench_util.h"

namespace {

using aotc::rt::ThreadPool;

constexpr int kRegions = 2000;  // regions in one timed run
constexpr int kRuns = 15;       // timed runs; the median is reported

// Median microseconds per region of `region(pool)`, run kRegions times back to back.
template <class Region>
double time_regions(ThreadPool& pool, Region region) {
  for (int i = 0; i < kRegions; ++i) region(pool);  // warm-up: workers polling, caches warm
  std::vector<double> us;
  for (int run = 0; run < kRuns; ++run) {
    const double start = bench::now_ms();
    for (int i = 0; i < kRegions; ++i) region(pool);
    us.push_back((bench::now_ms() - start) * 1000.0 / kRegions);
  }
  return bench::median(us);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> thread_counts;
  for (int i = 1; i < argc; ++i) thread_counts.push_back(std::atoi(argv[i]));
  if (thread_counts.empty()) {
    thread_counts.push_back(2);
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    if (cores > 2) thread_counts.push_back(cores);
  }
  std::vector<float> a(16384, 1.0f), b(16384, 2.0f), c(16384);
  std::printf("threads  empty_us  add64k_us  pieces_us   (median of %d runs of %d regions)\n", kRuns,
              kRegions);
  for (int threads : thread_counts) {
    ThreadPool pool(threads);
    const double empty =
        time_regions(pool, [&](ThreadPool& p) { p.parallel_for(p.size(), 1, [](int64_t, int64_t) {}); });
    const double add = time_regions(pool, [&](ThreadPool& p) {
      p.parallel_for(static_cast<int64_t>(c.size()), 1024, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) c[i] = a[i] + b[i];
      });
    });
    const double pieces = time_regions(pool, [&](ThreadPool& p) {
      p.parallel_pieces(4096, 16, [&](int64_t begin, int64_t end, int) {
        for (int64_t i = begin; i < end; ++i) c[i] = a[i] * b[i];
      });
    });
    std::printf("%7d  %8.2f  %9.2f  %9.2f\n", threads, empty, add, pieces);
  }
  return 0;
}
