// place_arena.cpp - see place_arena.h.
#include "place_arena.h"

#include <algorithm>
#include <cstdlib>

namespace aotc::rt {
namespace {

constexpr int64_t kAlignment = 64;

int64_t align_up(int64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

struct Interval {
  int64_t begin, end;
};

}  // namespace

int64_t place_arena(const DynamicDesc& dyn, const int64_t* limits, int64_t* offsets) {
  size_t most = 0;
  for (size_t p = 0; p < dyn.num_arena_plans; ++p) most = std::max(most, dyn.arena_plans[p].num_buffers);
  // Sizes and the intervals taken, for the largest bucket: allocated once, freed at the end.
  auto* sizes = static_cast<int64_t*>(std::calloc(most + 1, sizeof(int64_t)));
  auto* taken = static_cast<Interval*>(std::calloc(most + 1, sizeof(Interval)));
  if (!sizes || !taken) {
    std::free(sizes);
    std::free(taken);
    return -1;
  }
  int64_t arena = 0;
  int64_t* table = offsets;
  for (size_t p = 0; p < dyn.num_arena_plans; ++p) {
    const ArenaPlan& plan = dyn.arena_plans[p];
    int64_t dims[kMaxNamedDims] = {};
    bool serves = true;
    for (size_t k = 0; k < dyn.num_dims; ++k) {
      const int64_t step = dyn.dims[k].multiple_of > 0 ? dyn.dims[k].multiple_of : 1;
      const int64_t largest = std::min(limits[k], plan.max_dims[k]) / step * step;
      serves = serves && largest >= plan.min_dims[k];
      dims[k] = largest;
    }
    if (!serves) {
      std::fill(table, table + plan.num_buffers, int64_t{0});
      table += plan.num_buffers;
      continue;
    }
    plan.sizes(dims, sizes);
    for (size_t i = 0; i < plan.num_buffers; ++i) {
      const ArenaBuffer& b = plan.buffers[i];
      // Never above the plan's own size (the bound the offsets' proof rests on).
      const int64_t size = align_up(std::clamp(sizes[i], int64_t{0}, b.size));
      size_t count = 0;
      for (size_t j = 0; j < i; ++j) {
        const ArenaBuffer& o = plan.buffers[j];
        if (o.first <= b.last && b.first <= o.last && sizes[j] > 0)
          taken[count++] = {table[j], table[j] + sizes[j]};
      }
      std::sort(taken, taken + count, [](const Interval& x, const Interval& y) { return x.begin < y.begin; });
      int64_t offset = 0;
      for (size_t t = 0; t < count; ++t) {
        if (offset + size <= taken[t].begin) break;
        offset = std::max(offset, taken[t].end);
      }
      table[i] = offset;
      sizes[i] = size;  // aligned, as the later buffers see it
      arena = std::max(arena, offset + size);
    }
    table += plan.num_buffers;
  }
  std::free(sizes);
  std::free(taken);
  return arena;
}

}  // namespace aotc::rt
