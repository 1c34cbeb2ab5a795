// thread_pool.h - the fixed pool of worker threads owned by one context.
// Work is split statically: parallel_for(n, fn) gives each thread one contiguous range,
// which keeps runs deterministic (same partition every time) and costs no allocation.
#pragma once

#include <cstdint>
#include <type_traits>

namespace aotc::rt {

class ThreadPool {
 public:
  using RangeFn = void (*)(void* state, int64_t begin, int64_t end);

  // threads counts the calling thread too; threads <= 1 runs everything inline.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Calls fn on disjoint ranges covering [0, n); ranges are at least min_chunk long
  // (except the last) so that tiny loops are not spread over threads.
  template <class F>
  void parallel_for(int64_t n, int64_t min_chunk, F&& fn) {
    auto trampoline = [](void* state, int64_t begin, int64_t end) {
      (*static_cast<std::remove_reference_t<F>*>(state))(begin, end);
    };
    run_ranges(n, min_chunk, trampoline, const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  void run_ranges(int64_t n, int64_t min_chunk, RangeFn fn, void* state);
  struct Impl;
  Impl* impl_ = nullptr;
  int threads_ = 1;
};

}  // namespace aotc::rt
