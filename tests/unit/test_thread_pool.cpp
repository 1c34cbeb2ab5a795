// ThreadPool: parallel_for's static ranges and parallel_pieces' shares with taking from the
// others' ends. Every unit must be handed out exactly once, pieces must respect their least
// length, and a thread that falls behind must have its units taken by the others.
#include <doctest/doctest.h>

#include <aotc/rt/thread_pool.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using aotc::rt::ThreadPool;

struct Piece {
  int64_t begin, end;
  int thread;
};

// Runs parallel_pieces(n, least) and returns the pieces handed out (in no order).
std::vector<Piece> run_pieces(ThreadPool& pool, int64_t n, int64_t least) {
  std::mutex mutex;
  std::vector<Piece> pieces;
  pool.parallel_pieces(n, least, [&](int64_t b, int64_t e, int thread) {
    std::lock_guard lock(mutex);
    pieces.push_back({b, e, thread});
  });
  return pieces;
}

}  // namespace

TEST_CASE("parallel_pieces hands every unit out once, in pieces of at least `least`") {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 7, 16, 49, 196, 1000, 4099})
      for (int64_t least : {0, 1, 2, 4, 8, 100}) {
        for (int rep = 0; rep < 20; ++rep) {
          const std::vector<Piece> pieces = run_pieces(pool, n, least);
          INFO("threads " << threads << " n " << n << " least " << least);
          std::vector<int> hits(static_cast<size_t>(n), 0);
          int64_t short_pieces = 0;
          for (const Piece& p : pieces) {
            REQUIRE(p.begin >= 0);
            REQUIRE(p.begin < p.end);
            REQUIRE(p.end <= n);
            REQUIRE(p.thread >= 0);
            REQUIRE(p.thread < threads);
            for (int64_t i = p.begin; i < p.end; ++i) ++hits[static_cast<size_t>(i)];
            if (p.end - p.begin < least) ++short_pieces;
          }
          for (int64_t i = 0; i < n; ++i) REQUIRE(hits[static_cast<size_t>(i)] == 1);
          // Only the last piece of a share (what is left) may be shorter than `least`.
          CHECK(short_pieces <= threads);
          if (n > 0 && n <= least) CHECK(pieces.size() == 1);
        }
      }
  }
}

TEST_CASE("parallel_pieces: a thread that falls behind has its units taken") {
  ThreadPool pool(2);
  const int64_t n = 64;
  std::atomic<int64_t> by_worker{0};
  // The calling thread (0) owns units [0, 32); its first piece is half of them. It holds on
  // to that piece until the worker has done its own 32 and the other 16 of thread 0's (or
  // 10 s have passed, so that a pool that never takes them fails here instead of hanging).
  std::vector<std::atomic<int>> owner(static_cast<size_t>(n));
  pool.parallel_pieces(n, 1, [&](int64_t b, int64_t e, int thread) {
    if (thread == 0 && b == 0) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (by_worker.load() < n / 2 + n / 4 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (int64_t i = b; i < e; ++i) owner[static_cast<size_t>(i)].store(thread);
    if (thread == 1) by_worker += e - b;
  });
  int64_t of_thread0_taken = 0;
  for (int64_t i = 0; i < n / 2; ++i) of_thread0_taken += owner[static_cast<size_t>(i)].load() == 1;
  // Thread 0's first piece is half its share (16 units); the other 16 go to the worker.
  CHECK(of_thread0_taken == n / 4);
  CHECK(by_worker.load() == n / 2 + n / 4);
}

TEST_CASE("parallel_for: one contiguous range per thread, the same every time") {
  ThreadPool pool(3);
  for (int rep = 0; rep < 10; ++rep) {
    std::mutex mutex;
    std::vector<Piece> ranges;
    pool.parallel_for(100, 1, [&](int64_t b, int64_t e, int thread) {
      std::lock_guard lock(mutex);
      ranges.push_back({b, e, thread});
    });
    REQUIRE(ranges.size() == 3);
    for (const Piece& r : ranges) {
      CHECK(r.begin == r.thread * 34);
      CHECK(r.end == std::min<int64_t>(100, (r.thread + 1) * 34));
    }
  }
}

TEST_CASE("regions hand over without a lock: back to back, after sleeping, and with a slow range") {
  // Many short regions back to back (workers polling), regions after a pause longer than the
  // polling window (workers asleep), and a range slower than the window (the caller asleep):
  // every unit must run exactly once each time, with more threads than cores too.
  for (int threads : {2, 3, 8}) {
    ThreadPool pool(threads);
    std::vector<std::atomic<int>> hits(64);
    auto check_once = [&](int64_t n) {
      for (int64_t i = 0; i < n; ++i) REQUIRE(hits[static_cast<size_t>(i)].exchange(0) == 1);
    };
    // More threads than cores wait for the scheduler at every region: fewer of those.
    const int regions = threads <= 2 ? 2000 : 100;
    for (int rep = 0; rep < regions; ++rep) {
      const int64_t n = 1 + rep % 64;
      if (rep % 2)
        pool.parallel_for(n, 1 + rep % 5, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
        });
      else
        pool.parallel_pieces(n, 1 + rep % 3, [&](int64_t b, int64_t e, int) {
          for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
        });
      check_once(n);
    }
    for (int rep = 0; rep < 4; ++rep) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      pool.parallel_for(64, 1, [&](int64_t b, int64_t e, int thread) {
        // The last range sleeps past the polling window, so the caller goes to sleep too.
        if (thread == pool.size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
      });
      check_once(64);
    }
  }
}
