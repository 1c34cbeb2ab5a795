// reduce_f32: Sum / Mean / Max / Min over sets of dims.
#include <doctest/doctest.h>

#include "kernel_reference.h"

using aotc::rt::ReduceOp;
using aotc::rt::ReduceParams;
using aotc::rt::ThreadPool;
using namespace aotc::test;

TEST_CASE("reduce_f32: dims sets x ops") {
  struct Case {
    std::vector<int64_t> dims;
    std::vector<bool> mask;
  };
  const Case cases[] = {
      {{7}, {true}},
      {{300001}, {true}},  // full reduction over several fixed chunks
      {{3, 17}, {false, true}},
      {{3, 17}, {true, false}},
      {{2, 3, 4, 5}, {false, true, false, false}},
      {{2, 3, 4, 5}, {false, false, true, true}},
      {{2, 3, 4, 5}, {true, false, true, false}},
      {{2, 3, 4, 5}, {true, false, false, true}},
      {{2, 3, 4, 5}, {false, true, false, true}},
      {{2, 3, 4, 5}, {true, true, true, true}},
      {{2, 3, 4, 5}, {false, false, false, false}},
      {{4, 1, 5}, {false, true, true}},
      {{1, 1, 1}, {true, false, true}},
      {{2, 64, 28, 28}, {false, false, true, true}},  // global pooling
      {{2, 64, 28, 28}, {true, false, true, true}},   // per-channel statistics
      {{1000, 40}, {true, false}},                    // column reduction, split over threads
      {{2, 3, 2, 3, 2, 3, 2, 3}, {true, false, true, false, false, true, false, true}},
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 81;
    for (const Case& c : cases)
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min}) {
        ReduceParams p;
        p.op = op;
        p.rank = static_cast<int32_t>(c.dims.size());
        for (int d = 0; d < p.rank; ++d) {
          p.dims[d] = c.dims[static_cast<size_t>(d)];
          p.reduce_mask[d] = c.mask[static_cast<size_t>(d)];
        }
        const auto x = random_floats(static_cast<size_t>(index_space_size(p.rank, p.dims)), ++seed);
        const auto want = ref_reduce(p, x.data());
        Guarded y(want.size());
        aotc::rt::reduce_f32(pool, p, x.data(), y.data());
        std::string mask;
        for (bool m : c.mask) mask += m ? '1' : '0';
        INFO("dims=" << dims_str(p.rank, p.dims) << " mask=" << mask << " op=" << int(op)
                     << " threads=" << threads);
        if (op == ReduceOp::Max || op == ReduceOp::Min) {
          CHECK(rel_l2(y.values(), want) == 0.0);
        } else {
          CHECK(rel_l2(y.values(), want) <= kTolerance);
        }
        CHECK(y.guards_intact());
      }
  }
}

TEST_CASE("reduce_f32: NaN propagates through max/min, results do not depend on threads") {
  ReduceParams p;
  p.rank = 2;
  p.dims[0] = 64;
  p.dims[1] = 3000;
  p.reduce_mask[0] = true;
  auto x = random_floats(64 * 3000, 3);
  x[5 * 3000 + 7] = NAN;
  for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min}) {
    p.op = op;
    ThreadPool pool(3);
    std::vector<float> y(3000);
    aotc::rt::reduce_f32(pool, p, x.data(), y.data());
    CHECK(std::isnan(y[7]));
    CHECK(!std::isnan(y[8]));
  }
  // Full sum: the same bits with 1 and 3 threads.
  p.rank = 1;
  p.dims[0] = 1000003;
  p.op = ReduceOp::Sum;
  const auto big = random_floats(1000003, 4);
  float y1 = 0, y3 = 0;
  ThreadPool one(1), three(3);
  aotc::rt::reduce_f32(one, p, big.data(), &y1);
  aotc::rt::reduce_f32(three, p, big.data(), &y3);
  CHECK(y1 == y3);
}
