// sort_plan.h - how the CUDA sort (runtime/cuda/kernels/sort.cu) splits a line and the arena
// scratch that takes: shared by the runtime and the compiler, which plans the scratch
// (compiler/ops/cuda/sort_cuda.cpp), so the two cannot disagree. No CUDA headers.
//
// A line of at most kSortRankAxis values is ranked by one block (a thread per value, axis^2
// comparisons: cheap at that length, and a block of lines needs no scratch). A longer line
// is cut into chunks of sort_chunk(value_bytes) values; a block sorts a chunk in shared memory and
// keeps its first min(k, chunk) items (an item: the value's order key and its index), and
// merge passes pair the runs up, each keeping its first k, until one run is left, which the
// last pass writes out. The runs of a pass sit in one of two scratch buffers, a line's
// sort_run_slots items apart; a line of one chunk needs none.
#pragma once

#include <algorithm>
#include <cstdint>

namespace aotc::rt::cuda {

inline constexpr int64_t kSortRankAxis = 256;
// A chunk's items fill 32 KB of shared memory: 8-byte items (a 32-bit key and a 32-bit
// index) for values of 32 bits or fewer, 16-byte ones for int64.
inline constexpr int64_t kSortChunkBytes = 32768;

// value_bytes: the size of a sorted value (8 for int64, 4 or 1 for the others).
inline int64_t sort_item_bytes(int64_t value_bytes) { return value_bytes > 4 ? 16 : 8; }
inline int64_t sort_chunk(int64_t value_bytes) { return kSortChunkBytes / sort_item_bytes(value_bytes); }

// Chunks a line of axis values is cut into (1 where the rank kernel takes it).
inline int64_t sort_chunks(int64_t value_bytes, int64_t axis) {
  if (axis <= kSortRankAxis) return 1;
  return (axis + sort_chunk(value_bytes) - 1) / sort_chunk(value_bytes);
}

// Items a line holds in one scratch buffer: the most over the passes that store their runs
// (every pass but the last), each run of a pass at most min(k, the values it covers).
inline int64_t sort_run_slots(int64_t value_bytes, int64_t axis, int64_t k) {
  int64_t runs = sort_chunks(value_bytes, axis), span = sort_chunk(value_bytes), most = 0;
  while (runs > 1) {
    most = std::max(most, runs * std::min(k, span));
    runs = (runs + 1) / 2;
    span *= 2;
  }
  return most;
}

inline int64_t sort_lines_scratch_bytes(int64_t value_bytes, int64_t outer, int64_t axis, int64_t inner,
                                        int64_t k) {
  if (outer <= 0 || axis <= 0 || inner <= 0 || k <= 0) return 0;
  return 2 * outer * inner * sort_run_slots(value_bytes, axis, std::min(k, axis)) *
         sort_item_bytes(value_bytes);
}

}  // namespace aotc::rt::cuda
