#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace aotc::rt {
namespace {

// How long a worker waiting for the next parallel region, and the caller waiting for the
// workers to finish one, poll before they sleep on a condition variable. Why: a model runs
// a parallel region per op, back to back, and a sleeping thread takes a futex wake-up to
// restart. On a virtual machine (KVM) that wake-up restarts a halted vCPU: mobilenet_v2
// (about 100 regions) took 12.3-12.8 ms per run for its first four runs after 100 ms idle
// and 7.1 ms once the host had adapted, while a pool that polls first runs at 7.1 ms from
// the first run. After the window the threads sleep, so an idle context costs no CPU.
constexpr std::chrono::microseconds kSpinWindow{2000};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls done() until it holds or the spin window passes; true when it holds. The clock is
// read every 64 polls only: reading it costs more than a pause.
template <class Done>
bool spin_until(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinWindow;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
}

}  // namespace

// Workers poll, then sleep on a condition variable, between parallel regions, and start on
// a new generation number. Everything a region hands over is written under the mutex; the
// atomics let the polling threads watch generation and pending without taking it. The
// calling thread runs range 0 itself, so a pool of size 1 has no workers and costs nothing.
struct ThreadPool::Impl {
  std::mutex mutex;
  std::condition_variable work_ready;
  std::condition_variable work_done;
  std::vector<std::thread> workers;
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> stopping{false};
  // The current parallel region.
  RangeFn fn = nullptr;
  void* state = nullptr;
  int64_t n = 0;
  int64_t chunk = 0;
  int active_ranges = 0;        // ranges handed to workers in this region
  std::atomic<int> pending{0};  // ranges not yet finished by workers

  void worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
      RangeFn f;
      void* s;
      int64_t begin, end;
      spin_until([&] {
        return stopping.load(std::memory_order_acquire) || generation.load(std::memory_order_acquire) != seen;
      });
      {
        std::unique_lock lock(mutex);
        work_ready.wait(lock, [&] { return stopping.load() || generation.load() != seen; });
        if (stopping.load()) return;
        seen = generation.load();
        if (index + 1 >= active_ranges + 1) continue;  // no range for this worker
        f = fn;
        s = state;
        begin = static_cast<int64_t>(index + 1) * chunk;
        end = std::min(n, begin + chunk);
      }
      f(s, begin, end, index + 1);
      {
        std::lock_guard lock(mutex);
        if (pending.fetch_sub(1) == 1) work_done.notify_one();
      }
    }
  }
};

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
  if (threads_ == 1) return;
  impl_ = new Impl;
  impl_->workers.reserve(threads_ - 1);
  for (int i = 0; i < threads_ - 1; ++i) {
    impl_->workers.emplace_back([this, i] { impl_->worker_loop(i); });
  }
}

ThreadPool::~ThreadPool() {
  if (!impl_) return;
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping.store(true);
  }
  impl_->work_ready.notify_all();
  for (auto& worker : impl_->workers) worker.join();
  delete impl_;
}

void ThreadPool::run_ranges(int64_t n, int64_t min_chunk, RangeFn fn, void* state) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  const int64_t max_ranges = (n + min_chunk - 1) / min_chunk;
  const int ranges = static_cast<int>(std::min<int64_t>(threads_, max_ranges));
  if (ranges <= 1 || !impl_) {
    fn(state, 0, n, 0);
    return;
  }
  const int64_t chunk = (n + ranges - 1) / ranges;
  // The last ranges may be empty after rounding; only hand out non-empty ones.
  const int used = static_cast<int>((n + chunk - 1) / chunk);
  {
    std::lock_guard lock(impl_->mutex);
    impl_->fn = fn;
    impl_->state = state;
    impl_->n = n;
    impl_->chunk = chunk;
    impl_->active_ranges = used - 1;
    impl_->pending.store(used - 1);
    impl_->generation.fetch_add(1);
  }
  impl_->work_ready.notify_all();
  fn(state, 0, std::min(n, chunk), 0);
  if (spin_until([&] { return impl_->pending.load(std::memory_order_acquire) == 0; })) {
    // Taking the mutex once orders this return after the last worker's critical section,
    // as the condition-variable path below does.
    std::lock_guard lock(impl_->mutex);
    return;
  }
  std::unique_lock lock(impl_->mutex);
  impl_->work_done.wait(lock, [&] { return impl_->pending.load() == 0; });
}

}  // namespace aotc::rt
