// plan_memory: static placement of every intermediate in one arena.
// Each buffer lives from the op that first writes it to the last op that reads it (graph
// outputs live to the end, when they are copied out); kernel scratch lives during its op.
// Optional scratch (Op::scratch_optional) is placed last, only where the arena already has
// room: placed like the rest, the shared packing buffers of resnet50's 1x1 convolutions on
// the implicit GEMM made the arena well above its lower bound (bench/results_cpu.md).
// Buffers are placed largest first at the lowest 64-byte-aligned offset that does not
// overlap any placed buffer whose lifetime intersects (several orders, then a short
// seeded local search over the order); the result is compared with the lower bound, the
// peak of bytes live at the same time.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>

#include "passes.h"

namespace aotc::passes {
namespace {

constexpr int64_t kAlignment = 64;

int64_t align_up(int64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

struct Buffer {
  int64_t size = 0;
  int first = 0, last = 0;  // op indices, inclusive
  int value = -1;           // value id, or -1 for an op's scratch
  int op = -1;              // op index for scratch
  int64_t offset = -1;
};

// The lowest offset at which b fits beside the placed buffers whose lifetimes meet its own.
int64_t lowest_free_offset(const Buffer& b, const std::vector<Buffer>& placed) {
  std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, end)
  for (const Buffer& o : placed)
    if (o.first <= b.last && b.first <= o.last) taken.emplace_back(o.offset, o.offset + align_up(o.size));
  std::sort(taken.begin(), taken.end());
  int64_t offset = 0;
  for (const auto& [start, stop] : taken) {
    if (offset + align_up(b.size) <= start) break;
    offset = std::max(offset, stop);
  }
  return offset;
}

// The most bytes alive at any one step of [0, end].
int64_t peak_live_bytes(const std::vector<Buffer>& buffers, int end) {
  int64_t peak = 0;
  for (int t = 0; t <= end; ++t) {
    int64_t live = 0;
    for (const Buffer& b : buffers)
      if (b.first <= t && t <= b.last) live += b.size;
    peak = std::max(peak, live);
  }
  return peak;
}

// Places buffers in the given order, each at the lowest offset free during its lifetime;
// returns the arena size.
int64_t place(const std::vector<Buffer>& buffers, const std::vector<size_t>& order,
              std::vector<int64_t>& offsets) {
  int64_t arena = 0;
  std::vector<size_t> placed;
  for (size_t i : order) {
    const Buffer& b = buffers[i];
    std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, end) of overlapping lifetimes
    for (size_t j : placed) {
      const Buffer& o = buffers[j];
      if (o.first <= b.last && b.first <= o.last)
        taken.emplace_back(offsets[j], offsets[j] + align_up(o.size));
    }
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [start, stop] : taken) {
      if (offset + align_up(b.size) <= start) break;
      offset = std::max(offset, stop);
    }
    offsets[i] = offset;
    arena = std::max(arena, offset + align_up(b.size));
    placed.push_back(i);
  }
  return arena;
}

}  // namespace

namespace {

// Every arena buffer of the graph with its lifetime; scratch the kernel can do without
// (Op::scratch_optional) goes to `optional`.
void collect_buffers(const ir::Graph& graph, std::vector<Buffer>& buffers, std::vector<Buffer>& optional) {
  const int end = static_cast<int>(graph.ops.size());
  std::map<int, Buffer> by_root;
  for (int t = 0; t < end; ++t) {
    const ir::Op& op = graph.ops[static_cast<size_t>(t)];
    for (int out : op.outputs) {
      const int root = graph.storage_root(out);
      if (graph.value(root).storage != ir::Storage::Arena) continue;
      auto [it, fresh] = by_root.try_emplace(root);
      if (fresh) {
        it->second.first = it->second.last = t;
        it->second.value = root;
        it->second.size = graph.value(root).bytes();
      }
      it->second.last = std::max(it->second.last, t);
    }
    for (int in : op.inputs) {
      if (in < 0) continue;
      auto it = by_root.find(graph.storage_root(in));
      if (it != by_root.end()) it->second.last = std::max(it->second.last, t);
    }
    if (op.scratch_bytes > 0) {
      Buffer scratch;
      scratch.size = op.scratch_bytes;
      scratch.first = scratch.last = t;
      scratch.op = t;
      (op.scratch_optional ? optional : buffers).push_back(scratch);
    }
  }
  for (const ir::GraphOutput& out : graph.outputs) {
    auto it = by_root.find(graph.storage_root(out.value));
    if (it != by_root.end()) it->second.last = end;
  }
  for (auto& [root, b] : by_root) buffers.push_back(b);
}

}  // namespace

std::vector<PlannedBuffer> planned_buffers(const ir::Graph& graph) {
  std::vector<Buffer> buffers, optional;
  collect_buffers(graph, buffers, optional);
  // Optional scratch the plan dropped has scratch_bytes 0 and is not collected.
  buffers.insert(buffers.end(), optional.begin(), optional.end());
  std::vector<PlannedBuffer> planned;
  for (const Buffer& b : buffers) {
    const int64_t offset = b.value >= 0 ? graph.value(b.value).arena_offset
                                        : graph.ops[static_cast<size_t>(b.op)].scratch_offset;
    planned.push_back({b.value, b.op, b.first, b.last, b.size, offset});
  }
  return planned;
}

void plan_memory(ir::Graph& graph, bool order_search) {
  const int end = static_cast<int>(graph.ops.size());
  std::vector<Buffer> buffers, optional;
  collect_buffers(graph, buffers, optional);

  // Lower bound: the most bytes alive at any one step.
  int64_t lower_bound = peak_live_bytes(buffers, end);

  // Greedy placement is order-sensitive; a few classic orders are tried and the smallest
  // arena wins (largest first, longest-lived first, largest size x lifetime first).
  using Less = bool (*)(const Buffer&, const Buffer&);
  const Less orders[] = {
      [](const Buffer& a, const Buffer& b) { return a.size != b.size ? a.size > b.size : a.first < b.first; },
      [](const Buffer& a, const Buffer& b) {
        const int la = a.last - a.first, lb = b.last - b.first;
        return la != lb ? la > lb : a.size > b.size;
      },
      [](const Buffer& a, const Buffer& b) {
        const int64_t ka = a.size * (a.last - a.first + 1), kb = b.size * (b.last - b.first + 1);
        return ka != kb ? ka > kb : a.first < b.first;
      },
  };
  std::vector<int64_t> best_offsets;
  std::vector<size_t> best_order;
  int64_t arena = -1;
  for (Less less : orders) {
    std::vector<size_t> order(buffers.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return less(buffers[a], buffers[b]); });
    std::vector<int64_t> offsets(buffers.size(), -1);
    const int64_t size = place(buffers, order, offsets);
    if (arena < 0 || size < arena) {
      arena = size;
      best_offsets = offsets;
      best_order = order;
    }
  }
  // Then a short local search from the best order while the arena is above the lower
  // bound: move one buffer to another place in the order, keep the result when it is no
  // worse (accepting equal ones lets the search drift across plateaus). The generator is
  // seeded and read raw (no std distributions, whose results differ between standard
  // libraries), so the plan, and therefore the .so, is reproducible. The effort is capped
  // by the graph's size: place() is quadratic in the number of buffers.
  const size_t n = buffers.size();
  if (order_search && n > 2 && arena > lower_bound) {
    const uint64_t budget = 40'000'000;  // buffer pairs compared, about 0.1 s
    const uint64_t tries = std::min<uint64_t>(400, budget / (static_cast<uint64_t>(n) * n));
    std::mt19937_64 rng(0x61657463);  // fixed: reproducible plans
    for (uint64_t t = 0; t < tries && arena > lower_bound; ++t) {
      std::vector<size_t> order = best_order;
      const size_t from = static_cast<size_t>(rng() % n), to = static_cast<size_t>(rng() % n);
      const size_t moved = order[from];
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(from));
      order.insert(order.begin() + static_cast<std::ptrdiff_t>(to), moved);
      std::vector<int64_t> offsets(n, -1);
      const int64_t size = place(buffers, order, offsets);
      if (size <= arena) {
        arena = size;
        best_offsets = offsets;
        best_order = std::move(order);
      }
    }
  }
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i].offset = best_offsets[i];
  if (arena < 0) arena = 0;

  // Optional scratch, largest first, where it fits below the arena's end; the others go.
  std::stable_sort(optional.begin(), optional.end(),
                   [](const Buffer& a, const Buffer& b) { return a.size > b.size; });
  for (Buffer& b : optional) {
    b.offset = lowest_free_offset(b, buffers);
    if (b.offset + align_up(b.size) <= arena) {
      buffers.push_back(b);
    } else {
      ir::Op& op = graph.ops[static_cast<size_t>(b.op)];
      op.scratch_bytes = 0;
      op.scratch_offset = -1;
    }
  }
  if (!optional.empty()) lower_bound = peak_live_bytes(buffers, end);

  for (const Buffer& b : buffers) {
    if (b.value >= 0)
      graph.value(b.value).arena_offset = b.offset;
    else
      graph.ops[static_cast<size_t>(b.op)].scratch_offset = b.offset;
  }
  graph.arena_bytes = arena;
  graph.arena_lower_bound = lower_bound;
}

}  // namespace aotc::passes
