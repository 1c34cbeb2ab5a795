// The memory planner: no two buffers alive at the same time overlap, the arena is never
// below the lower bound, and scratch is planned too.
#include <doctest/doctest.h>

#include <random>

#include "../../compiler/passes/passes.h"

using namespace aotc;

namespace {

// A chain of unary ops with random sizes, some values read again much later.
ir::Graph random_graph(unsigned seed, int ops) {
  std::mt19937 rng(seed);
  ir::Graph g;
  int prev = g.add_input(ir::DType::Float32, {7}, "x");
  std::vector<int> produced;
  for (int i = 0; i < ops; ++i) {
    const int out = g.add_value(ir::DType::Float32, {static_cast<int64_t>(1 + rng() % 1000)});
    std::vector<int> in = {prev};
    if (!produced.empty() && rng() % 3 == 0) in.push_back(produced[rng() % produced.size()]);
    ir::Op& op = g.add_op(ir::kind::unary, in, {out});
    if (rng() % 4 == 0) {
      op.scratch_bytes = 1 + rng() % 5000;
      op.scratch_optional = rng() % 2 == 0;
    }
    produced.push_back(out);
    prev = out;
  }
  g.outputs.push_back({prev, "y"});
  return g;
}

}  // namespace

TEST_CASE("plan_memory: live buffers never overlap and the arena covers the lower bound") {
  for (unsigned seed = 0; seed < 50; ++seed) {
    ir::Graph g = random_graph(seed, 5 + static_cast<int>(seed % 40));
    passes::plan_memory(g);
    CHECK(g.arena_bytes >= g.arena_lower_bound);
    // Recompute lifetimes and check pairwise disjointness of live intervals.
    struct Range {
      int64_t begin, end;
      int first, last;
    };
    std::vector<Range> ranges;
    const int n = static_cast<int>(g.ops.size());
    for (int t = 0; t < n; ++t) {
      const ir::Op& op = g.ops[static_cast<size_t>(t)];
      const ir::Value& v = g.value(op.outputs[0]);
      int last = t;
      for (int u = t + 1; u < n; ++u)
        for (int in : g.ops[static_cast<size_t>(u)].inputs)
          if (in == v.id) last = u;
      if (g.outputs[0].value == v.id) last = n;
      REQUIRE(v.arena_offset >= 0);
      CHECK(v.arena_offset % 64 == 0);
      ranges.push_back({v.arena_offset, v.arena_offset + v.bytes(), t, last});
      if (op.scratch_bytes) {
        REQUIRE(op.scratch_offset >= 0);
        ranges.push_back({op.scratch_offset, op.scratch_offset + op.scratch_bytes, t, t});
      }
    }
    for (size_t a = 0; a < ranges.size(); ++a) {
      CHECK(ranges[a].end <= g.arena_bytes);
      for (size_t b = a + 1; b < ranges.size(); ++b) {
        const bool same_time = ranges[a].first <= ranges[b].last && ranges[b].first <= ranges[a].last;
        const bool same_bytes = ranges[a].begin < ranges[b].end && ranges[b].begin < ranges[a].end;
        CHECK_FALSE((same_time && same_bytes));
      }
    }
  }
}

TEST_CASE("plan_memory: optional scratch only where the arena has room anyway") {
  // a = f(x), b = g(a), c = h(b): a and b are live together (8192 bytes) while g runs, a alone
  // while f runs. f's optional 2048 bytes fit beside a; g's optional 4096 bytes would grow
  // the arena to 12288, so g gets none (and runs without).
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {10}, "x");
  const int a = g.add_value(ir::DType::Float32, {1024});
  const int b = g.add_value(ir::DType::Float32, {1024});
  const int c = g.add_value(ir::DType::Float32, {25});
  ir::Op& f = g.add_op(ir::kind::unary, {x}, {a});
  f.scratch_bytes = 2048;
  f.scratch_optional = true;
  ir::Op& gop = g.add_op(ir::kind::unary, {a}, {b});
  gop.scratch_bytes = 4096;
  gop.scratch_optional = true;
  g.add_op(ir::kind::unary, {b}, {c});
  g.outputs.push_back({c, "y"});
  passes::plan_memory(g);
  CHECK(g.arena_bytes == 8192);
  CHECK(g.arena_lower_bound == 8192);
  CHECK(g.ops[0].scratch_bytes == 2048);
  REQUIRE(g.ops[0].scratch_offset >= 0);
  const int64_t a_begin = g.value(a).arena_offset, a_end = a_begin + 4096;
  const int64_t s_begin = g.ops[0].scratch_offset, s_end = s_begin + 2048;
  CHECK((s_end <= a_begin || a_end <= s_begin));
  CHECK(s_end <= g.arena_bytes);
  CHECK(g.ops[1].scratch_bytes == 0);
  CHECK(g.ops[1].scratch_offset == -1);
}

TEST_CASE("plan_memory: a chain reuses memory (arena well below the sum of all buffers)") {
  ir::Graph g;
  int prev = g.add_input(ir::DType::Float32, {1000}, "x");
  for (int i = 0; i < 10; ++i) {
    const int out = g.add_value(ir::DType::Float32, {1000});
    g.add_op(ir::kind::unary, {prev}, {out});
    prev = out;
  }
  g.outputs.push_back({prev, "y"});
  passes::plan_memory(g);
  CHECK(g.arena_lower_bound == 8000);
  CHECK(g.arena_bytes == 2 * 4032);  // two buffers of 4000 bytes, each rounded up to 64
}

TEST_CASE("plan_memory: aliases keep their storage alive") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {4, 4}, "x");
  const int a = g.add_value(ir::DType::Float32, {4, 4});
  g.add_op(ir::kind::unary, {x}, {a});
  const int view = g.add_alias(a, {16});
  const int b = g.add_value(ir::DType::Float32, {16});
  g.add_op(ir::kind::unary, {x}, {b});
  const int c = g.add_value(ir::DType::Float32, {16});
  g.add_op(ir::kind::binary, {view, b}, {c});
  g.outputs.push_back({c, "y"});
  passes::plan_memory(g);
  // a (through its view) is read by the third op, so a and b must not share bytes.
  CHECK(g.value(a).arena_offset != g.value(b).arena_offset);
}

TEST_CASE("plan_memory: the plan is deterministic (reproducible .so files)") {
  for (unsigned seed = 100; seed < 110; ++seed) {
    ir::Graph a = random_graph(seed, 30), b = random_graph(seed, 30);
    passes::plan_memory(a);
    passes::plan_memory(b);
    REQUIRE(a.arena_bytes == b.arena_bytes);
    for (size_t i = 0; i < a.ops.size(); ++i) {
      CHECK(a.value(a.ops[i].outputs[0]).arena_offset == b.value(b.ops[i].outputs[0]).arena_offset);
      CHECK(a.ops[i].scratch_offset == b.ops[i].scratch_offset);
    }
  }
}

TEST_CASE("plan_memory: the order search never makes the arena larger, and shrinks it on some graphs") {
  int64_t with_search = 0, without = 0;
  int improved = 0;
  for (unsigned seed = 200; seed < 260; ++seed) {
    ir::Graph a = random_graph(seed, 10 + static_cast<int>(seed % 50)), b = a;
    passes::plan_memory(a, true);
    passes::plan_memory(b, false);
    CHECK(a.arena_bytes <= b.arena_bytes);
    CHECK(a.arena_bytes >= a.arena_lower_bound);
    if (a.arena_bytes < b.arena_bytes) ++improved;
    with_search += a.arena_bytes;
    without += b.arena_bytes;
  }
  MESSAGE("arena bytes over 60 graphs: " << with_search << " with the search, " << without << " without; "
                                         << improved << " graphs improved");
  CHECK(improved > 0);
  CHECK(with_search < without);
}
