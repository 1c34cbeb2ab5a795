// thread_pool.h - the fixed pool of worker threads owned by one context.
// parallel_for(n, fn) splits work statically: each thread one contiguous range, the same
// partition every time, no allocation. parallel_pieces(n, least, fn) cuts [0, n) into pieces
// as it goes; each thread takes its own share first, in order, then what is left of the
// others' shares from their ends (see there for why). Either way a
// kernel whose every output is computed the same way whichever thread computes it gives
// the same results every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace aotc::rt {

class ThreadPool {
 public:
  using RangeFn = void (*)(void* state, int64_t begin, int64_t end, int thread);

  // threads counts the calling thread too; threads <= 1 runs everything inline.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Calls fn(begin, end) on disjoint ranges covering [0, n); ranges are at least
  // min_chunk long (except the last) so that tiny loops are not spread over threads.
  // fn may also take a third argument, int thread: the index in [0, size()) of the thread
  // running that range (0 is the calling thread), which owns thread_scratch(thread).
  template <class F>
  void parallel_for(int64_t n, int64_t min_chunk, F&& fn) {
    auto trampoline = [](void* state, int64_t begin, int64_t end, int thread) {
      auto& f = *static_cast<std::remove_reference_t<F>*>(state);
      if constexpr (std::is_invocable_v<decltype(f), int64_t, int64_t, int>)
        f(begin, end, thread);
      else
        f(begin, end);
    };
    run_ranges(n, min_chunk, trampoline, const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Calls fn(begin, end, thread) on disjoint pieces covering [0, n), each at least `least`
  // long (or what is left). Thread t owns the units [t * n / size(), (t + 1) * n / size())
  // and takes them from the front, half of what it has left at a time; a thread whose own
  // units are taken takes half of what another has left, from the back. Why: the two vCPUs
  // of the benchmark VM do not run at the same speed from moment to moment, and with one
  // static range each the faster thread waited at the end of every region
  // (bench/results_cpu.md). Owner-first order keeps most of each thread's work where a
  // static split would have put it (its data in its caches); halving keeps the pieces few.
  template <class F>
  void parallel_pieces(int64_t n, int64_t least, F&& fn) {
    auto trampoline = [](void* state, int64_t begin, int64_t end, int thread) {
      (*static_cast<std::remove_reference_t<F>*>(state))(begin, end, thread);
    };
    run_pieces(n, least, trampoline, const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Per-thread scratch for kernels (GEMM packing buffers), set by the context: thread i
  // owns [base + i * bytes_per_thread, base + (i + 1) * bytes_per_thread). base must be
  // 64-byte aligned and bytes_per_thread a multiple of 64. None (nullptr, 0) by default.
  void set_thread_scratch(unsigned char* base, size_t bytes_per_thread) {
    scratch_ = base;
    scratch_bytes_ = base ? bytes_per_thread : 0;
  }
  unsigned char* thread_scratch(int thread) const {
    return scratch_ ? scratch_ + static_cast<size_t>(thread) * scratch_bytes_ : nullptr;
  }
  size_t thread_scratch_bytes() const { return scratch_bytes_; }

 private:
  void run_ranges(int64_t n, int64_t min_chunk, RangeFn fn, void* state);
  void run_pieces(int64_t n, int64_t least, RangeFn fn, void* state);
  struct Impl;
  Impl* impl_ = nullptr;
  int threads_ = 1;
  unsigned char* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
};

}  // namespace aotc::rt
