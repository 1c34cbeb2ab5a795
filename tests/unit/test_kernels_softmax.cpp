// softmax_f32 / log_softmax over the middle of outer x axis x inner.
#include <doctest/doctest.h>

#include "kernel_reference.h"

using aotc::rt::ThreadPool;
using namespace aotc::test;

TEST_CASE("softmax_f32: softmax and log_softmax, contiguous and strided axis") {
  struct Case {
    int64_t outer, axis, inner;
  };
  const Case cases[] = {{1, 1, 1},  {3, 7, 1},     {5, 1000, 1},  {2, 13, 17}, {4, 3, 300},
                        {7, 33, 5}, {64, 1000, 1}, {2, 100, 300}, {1, 1, 33},  {1, 4097, 1}};
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 71;
    for (const Case& c : cases)
      for (bool log : {false, true})
        for (float scale : {1.0f, 100.0f}) {  // large logits: the max must be subtracted
          const size_t total = static_cast<size_t>(c.outer * c.axis * c.inner);
          const auto x = random_floats(total, ++seed, -scale, scale);
          Guarded y(total);
          aotc::rt::softmax_f32(pool, c.outer, c.axis, c.inner, log, x.data(), y.data());
          INFO("outer=" << c.outer << " axis=" << c.axis << " inner=" << c.inner << " log=" << log
                        << " scale=" << scale << " threads=" << threads);
          CHECK(rel_l2(y.values(), ref_softmax(c.outer, c.axis, c.inner, log, x.data())) <= kTolerance);
          CHECK(y.guards_intact());
        }
  }
}

TEST_CASE("softmax_f32: in place") {
  ThreadPool pool(3);
  for (int64_t inner : {1, 9})
    for (bool log : {false, true}) {
      const auto x = random_floats(static_cast<size_t>(40 * 50 * inner), 5, -3.0f, 3.0f);
      const auto want = ref_softmax(40, 50, inner, log, x.data());
      Guarded y(x.size(), x);
      aotc::rt::softmax_f32(pool, 40, 50, inner, log, y.data(), y.data());
      CHECK(rel_l2(y.values(), want) <= kTolerance);
    }
}
