#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
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
// a new generation number. A region is handed over without a lock: the caller writes its
// fields, then bumps `generation` (release); every worker acknowledges every region through
// `pending`, those without a range at once, so that the caller writes the next region's
// fields only after all have read this one's. Why no mutex: at 16 threads, 15 workers
// taking one mutex at the start and the end of every region (a model runs one per op)
// queued behind each other. The mutex and condition variables serve only threads that
// sleep: a side about to sleep announces it (`sleepers`, `caller_sleeping`) before it
// checks once more under the mutex, and the other side, after its own store, notifies only
// when it sees the announcement (both sequentially consistent, so one of them sees the
// other). The calling thread runs range 0 itself, so a pool of size 1 has no workers.
struct ThreadPool::Impl {
  // One thread's share of a parallel_pieces region: its untaken units [front, back), packed
  // into one word (front in the low half) so that the owner taking from the front and a
  // thief taking from the back agree with one compare-exchange. One cache line each.
  struct alignas(64) Queue {
    std::atomic<uint64_t> range{0};
  };

  explicit Impl(int threads) : queues(new Queue[static_cast<size_t>(threads)]), threads(threads) {}

  std::mutex mutex;
  std::condition_variable work_ready;
  std::condition_variable work_done;
  std::vector<std::thread> workers;
  std::unique_ptr<Queue[]> queues;
  const int threads;
  // The current parallel region, written by the caller while no worker reads it.
  RangeFn fn = nullptr;
  void* state = nullptr;
  int64_t n = 0;
  int64_t chunk = 0;      // parallel_for: the range length
  int64_t least = 0;      // parallel_pieces: the least units of a piece (0: parallel_for)
  int active_ranges = 0;  // parallel_for: ranges handed to workers in this region
  // Read by every worker while it polls; on a line of its own, away from the counters that
  // change during a region.
  alignas(64) std::atomic<uint64_t> generation{0};
  std::atomic<bool> stopping{false};
  alignas(64) std::atomic<int> pending{0};   // workers yet to finish (or skip) this region
  std::atomic<int> sleepers{0};              // workers asleep on work_ready, or about to be
  std::atomic<bool> caller_sleeping{false};  // the caller asleep on work_done, or about to be

  // The next piece of queue q: half of its untaken units, at least `least` (or what is left),
  // from the front (the owner) or the back (a thief); false when it is empty.
  static bool take(Queue& q, bool from_back, int64_t least, int64_t& begin, int64_t& end) {
    uint64_t r = q.range.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t front = r & 0xffffffffu, back = r >> 32, left = back - front;
      if (front >= back) return false;
      const uint64_t half = (left + 1) / 2, want = std::max<uint64_t>(half, static_cast<uint64_t>(least));
      const uint64_t size = std::min(want, left);
      const uint64_t next = from_back ? ((back - size) << 32 | front) : (back << 32 | (front + size));
      if (q.range.compare_exchange_weak(r, next, std::memory_order_relaxed)) {
        begin = static_cast<int64_t>(from_back ? back - size : front);
        end = begin + static_cast<int64_t>(size);
        return true;
      }
    }
  }

  // Thread `self`'s part of a parallel_pieces region: its own units, then the others'.
  static void take_pieces(Impl& impl, int self, RangeFn f, void* s, int64_t least) {
    int64_t begin, end;
    while (take(impl.queues[self], false, least, begin, end)) f(s, begin, end, self);
    for (int v = 1; v < impl.threads; ++v) {
      Queue& q = impl.queues[(self + v) % impl.threads];
      while (take(q, true, least, begin, end)) f(s, begin, end, self);
    }
  }

  // Publishes the region whose fields the caller has written and wakes sleeping workers.
  void start_region() {
    pending.store(threads - 1, std::memory_order_relaxed);
    generation.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard lock(mutex);
      work_ready.notify_all();
    }
  }

  void worker_loop(int index) {
    const int self = index + 1;
    uint64_t seen = 0;
    for (;;) {
      auto ready = [&] {
        return stopping.load(std::memory_order_acquire) || generation.load(std::memory_order_acquire) != seen;
      };
      if (!spin_until(ready)) {
        std::unique_lock lock(mutex);
        sleepers.fetch_add(1, std::memory_order_seq_cst);
        work_ready.wait(lock, [&] {
          return stopping.load(std::memory_order_seq_cst) ||
                 generation.load(std::memory_order_seq_cst) != seen;
        });
        sleepers.fetch_sub(1, std::memory_order_relaxed);
      }
      if (stopping.load(std::memory_order_acquire)) return;
      // One step: the caller starts no region before every worker has finished this one.
      seen = generation.load(std::memory_order_acquire);
      if (least > 0) {
        take_pieces(*this, self, fn, state, least);
      } else if (self <= active_ranges) {
        const int64_t begin = static_cast<int64_t>(self) * chunk;
        fn(state, begin, std::min(n, begin + chunk), self);
      }
      if (pending.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
          caller_sleeping.load(std::memory_order_seq_cst)) {
        std::lock_guard lock(mutex);
        work_done.notify_one();
      }
    }
  }

  // Waits until every worker has finished (or skipped) the region.
  void wait_for_workers() {
    if (spin_until([&] { return pending.load(std::memory_order_acquire) == 0; })) return;
    std::unique_lock lock(mutex);
    caller_sleeping.store(true, std::memory_order_seq_cst);
    work_done.wait(lock, [&] { return pending.load(std::memory_order_seq_cst) == 0; });
    caller_sleeping.store(false, std::memory_order_relaxed);
  }
};

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
  if (threads_ == 1) return;
  impl_ = new Impl(threads_);
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
  impl_->fn = fn;
  impl_->state = state;
  impl_->n = n;
  impl_->chunk = chunk;
  impl_->least = 0;
  impl_->active_ranges = used - 1;
  impl_->start_region();
  fn(state, 0, std::min(n, chunk), 0);
  impl_->wait_for_workers();
}

void ThreadPool::run_pieces(int64_t n, int64_t least, RangeFn fn, void* state) {
  if (n <= 0) return;
  least = std::max<int64_t>(1, least);
  // A queue holds unit indices in 32 bits: beyond that, static ranges.
  if (n >= (int64_t{1} << 32)) return run_ranges(n, least, fn, state);
  // Shares of at least `least` units: fewer owners than threads where n is short (the
  // others only take from them).
  const int owners = static_cast<int>(std::min<int64_t>(threads_, n / least));
  if (owners <= 1 || !impl_) {
    fn(state, 0, n, 0);
    return;
  }
  for (int t = 0; t < threads_; ++t) {
    const auto lo = static_cast<uint64_t>(n * std::min(t, owners) / owners);
    const auto hi = static_cast<uint64_t>(n * std::min(t + 1, owners) / owners);
    impl_->queues[t].range.store(hi << 32 | lo, std::memory_order_relaxed);
  }
  impl_->fn = fn;
  impl_->state = state;
  impl_->n = n;
  impl_->chunk = 0;
  impl_->least = least;
  impl_->start_region();
  Impl::take_pieces(*impl_, 0, fn, state, least);
  impl_->wait_for_workers();
}

}  // namespace aotc::rt
