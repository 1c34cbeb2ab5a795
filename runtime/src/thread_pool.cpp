#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace aotc::rt {

// Workers sleep on a condition variable between parallel regions and wake on a new
// generation number. The calling thread runs range 0 itself, so a pool of size 1 has no
// workers and costs nothing.
struct ThreadPool::Impl {
  std::mutex mutex;
  std::condition_variable work_ready;
  std::condition_variable work_done;
  std::vector<std::thread> workers;
  uint64_t generation = 0;
  bool stopping = false;
  // The current parallel region.
  RangeFn fn = nullptr;
  void* state = nullptr;
  int64_t n = 0;
  int64_t chunk = 0;
  int active_ranges = 0;  // ranges handed to workers in this region
  int pending = 0;        // ranges not yet finished by workers

  void worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
      RangeFn f;
      void* s;
      int64_t begin, end;
      {
        std::unique_lock lock(mutex);
        work_ready.wait(lock, [&] { return stopping || generation != seen; });
        if (stopping) return;
        seen = generation;
        if (index + 1 >= active_ranges + 1) continue;  // no range for this worker
        f = fn;
        s = state;
        begin = static_cast<int64_t>(index + 1) * chunk;
        end = std::min(n, begin + chunk);
      }
      f(s, begin, end, index + 1);
      {
        std::lock_guard lock(mutex);
        if (--pending == 0) work_done.notify_one();
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
    impl_->stopping = true;
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
    impl_->pending = used - 1;
    ++impl_->generation;
  }
  impl_->work_ready.notify_all();
  fn(state, 0, std::min(n, chunk), 0);
  std::unique_lock lock(impl_->mutex);
  impl_->work_done.wait(lock, [&] { return impl_->pending == 0; });
}

}  // namespace aotc::rt
