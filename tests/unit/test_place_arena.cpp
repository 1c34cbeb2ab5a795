// Tests of place_arena (runtime/src/place_arena.cpp): a context's arena for a model with
// dynamic dims, placed again for its own largest sizes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "../../runtime/src/place_arena.h"

namespace {

int64_t align_up(int64_t v) { return (v + 63) / 64 * 64; }

// What arena_sizes_<b> would compute: buffer i's bytes at the sizes dims[0] chooses.
std::vector<std::vector<int64_t>> g_sizes;
void table_sizes(const int64_t* dims, int64_t* sizes) {
  const std::vector<int64_t>& row = g_sizes[static_cast<size_t>(dims[0])];
  std::copy(row.begin(), row.end(), sizes);
}

struct Case {
  std::vector<aotc::rt::ArenaBuffer> buffers;  // in the order of plan_offsets
  std::vector<int64_t> plan_offsets;
  int64_t plan_bytes = 0;
};

// A random valid plan: buffers with random lifetimes and sizes, placed first-fit in a
// random order (as aotc's planner may), then listed in the order of their offsets.
Case random_plan(std::mt19937_64& rng, int count, int ops) {
  struct Raw {
    int first, last;
    int64_t size, offset = -1;
  };
  std::vector<Raw> raw;
  for (int i = 0; i < count; ++i) {
    const int first = static_cast<int>(rng() % static_cast<uint64_t>(ops));
    const int last = std::min(ops, first + static_cast<int>(rng() % 6));
    raw.push_back({first, last, static_cast<int64_t>(rng() % 5000) + (rng() % 7 == 0 ? 0 : 1)});
  }
  std::vector<size_t> order(raw.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  Case c;
  std::vector<size_t> placed;
  for (size_t i : order) {
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed)
      if (raw[j].first <= raw[i].last && raw[i].first <= raw[j].last)
        taken.emplace_back(raw[j].offset, raw[j].offset + align_up(raw[j].size));
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + align_up(raw[i].size) <= begin) break;
      offset = std::max(offset, end);
    }
    raw[i].offset = offset;
    c.plan_bytes = std::max(c.plan_bytes, offset + align_up(raw[i].size));
    placed.push_back(i);
  }
  std::stable_sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) { return a.offset < b.offset; });
  for (const Raw& r : raw) {
    c.buffers.push_back({r.first, r.last, r.size});
    c.plan_offsets.push_back(r.offset);
  }
  return c;
}

}  // namespace

TEST_CASE("place_arena: buffers alive together never overlap, and no offset grows") {
  std::mt19937_64 rng(35);
  for (int trial = 0; trial < 300; ++trial) {
    CAPTURE(trial);
    const Case c = random_plan(rng, 1 + static_cast<int>(rng() % 60), 1 + static_cast<int>(rng() % 40));
    // Row 0: every buffer at its plan size; rows 1..3: each at most that, some empty.
    g_sizes.assign(4, {});
    for (const aotc::rt::ArenaBuffer& b : c.buffers) {
      g_sizes[0].push_back(b.size);
      for (int r = 1; r < 4; ++r)
        g_sizes[static_cast<size_t>(r)].push_back(
            b.size ? static_cast<int64_t>(rng() % static_cast<uint64_t>(b.size + 1)) : 0);
    }
    const int64_t min_dims[] = {0}, max_dims[] = {3};
    const aotc::rt::ArenaPlan plan{min_dims, max_dims, c.buffers.data(), c.buffers.size(), &table_sizes};
    const aotc::rt::DimDesc dim{"R", 0, 3, 1, ""};
    const aotc::rt::DynamicDesc dyn{&dim, 1, nullptr, nullptr, nullptr, &plan, 1, c.buffers.size()};
    for (int64_t row = 0; row < 4; ++row) {
      CAPTURE(row);
      std::vector<int64_t> offsets(c.buffers.size() + 1, -1);
      const int64_t bytes = aotc::rt::place_arena(dyn, &row, offsets.data());
      CHECK(bytes <= c.plan_bytes);
      if (row == 0) CHECK(bytes == c.plan_bytes);  // the plan's own sizes: no larger arena
      const std::vector<int64_t>& sizes = g_sizes[static_cast<size_t>(row)];
      for (size_t i = 0; i < c.buffers.size(); ++i) {
        CHECK(offsets[i] % 64 == 0);
        CHECK(offsets[i] <= c.plan_offsets[i]);
        CHECK(offsets[i] + sizes[i] <= bytes);
        for (size_t j = 0; j < i; ++j) {
          const aotc::rt::ArenaBuffer &a = c.buffers[i], &b = c.buffers[j];
          if (a.first > b.last || b.first > a.last || !sizes[i] || !sizes[j]) continue;
          const bool apart = offsets[i] + sizes[i] <= offsets[j] || offsets[j] + sizes[j] <= offsets[i];
          CHECK_MESSAGE(apart, "buffers ", i, " and ", j, " overlap");
        }
      }
    }
  }
}

TEST_CASE("place_arena: a bucket that serves no size within the limits gets no room") {
  const aotc::rt::ArenaBuffer buffers[] = {{0, 1, 1000}, {1, 2, 500}};
  g_sizes = {{1000, 500}, {1000, 500}, {1000, 500}, {1000, 500}};
  const int64_t one[] = {1}, big_min[] = {2}, big_max[] = {3};
  const aotc::rt::ArenaPlan plans[] = {{big_min, big_max, buffers, 2, &table_sizes},
                                       {one, one, buffers, 2, &table_sizes}};
  const aotc::rt::DimDesc dim{"R", 1, 3, 1, ""};
  const aotc::rt::DynamicDesc dyn{&dim, 1, nullptr, nullptr, nullptr, plans, 2, 4};
  int64_t offsets[4] = {-1, -1, -1, -1};
  const int64_t limit = 1;
  CHECK(aotc::rt::place_arena(dyn, &limit, offsets) == 1024 + 512);
  CHECK(offsets[0] == 0);  // the first bucket (R in 2..3) never runs
  CHECK(offsets[1] == 0);
  CHECK(offsets[2] == 0);
  CHECK(offsets[3] == 1024);
}
