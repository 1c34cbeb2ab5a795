// scatter_plan.h - how the CUDA scatter (scatter.cu) keeps the CPU's "last write in index
// order wins" for repeated indices, and the arena scratch that needs: shared by the runtime
// and the compiler, which plans the scratch (compiler/ops/cuda/scatter_cuda.cpp), so the two
// cannot disagree. No CUDA headers.
//
// Only index positions of one line (all coordinates but dim equal) can write the same
// element of y. Short lines are written by one thread each, in order: no scratch. Longer
// ones take two passes over the index: the first records in scratch, per line and
// destination along dim, the largest position of the line that writes it (atomicMax of
// position + 1 into a zeroed slot); the second writes only those winners.
//
// scatter_reduce (scatter_reduce.cu) folds each element's contributions in index order, as
// the CPU does. Short lines: a thread a line. Longer ones: each line's wrapped indices are
// sorted with their positions (sort.cu, stable: equal indices keep index order), and the
// first position of each run of equal indices folds the run; lines of an index broadcast
// over some dims (index_add's) are sorted once. Its scratch: the wrapped indices of the
// index's own lines (int32 where y's dim allows, else int64), the sorted indices, the sorted
// positions (int64), then the sort's own scratch, each part 256-byte aligned.
#pragma once

#include <aotc/rt/cuda/sort_plan.h>
#include <aotc/rt/kernels.h>

#include <cstdint>

namespace aotc::rt::cuda {

// Lines at most this long are written by one thread each.
constexpr int64_t kScatterLineScanMax = 32;

inline bool scatter_scans_lines(const ScatterParams& p) {
  return p.rank < 1 || p.rank > 8 || p.dim < 0 || p.dim >= p.rank || p.dims[p.dim] <= kScatterLineScanMax;
}

// A slot holds position + 1 within a line (0: no writer): 4 bytes unless a line is longer
// than uint32 can count.
inline int64_t scatter_slot_bytes(const ScatterParams& p) { return p.dims[p.dim] < 0xFFFFFFFFll ? 4 : 8; }

// One slot per line and destination along dim: lines * y_dim_size slots.
inline int64_t scatter_scratch_bytes(const ScatterParams& p) {
  if (scatter_scans_lines(p) || p.y_dim_size <= 0) return 0;
  int64_t lines = 1;
  for (int d = 0; d < p.rank; ++d)
    if (d != p.dim) lines *= p.dims[d];
  return lines * p.y_dim_size * scatter_slot_bytes(p);
}

// --- scatter_reduce ---
inline int64_t scatter_reduce_index_bytes(const ScatterParams& p) {
  return p.y_dim_size <= 0x7FFFFFFFll ? 4 : 8;
}
inline int64_t scatter_reduce_align(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// The index's distinct lines: a dim the index is broadcast over (stride 0) counts once, so
// that index_add's 1-d index is sorted once, not once per feature.
struct ScatterReduceIndexLines {
  int64_t outer = 1, inner = 1;  // the index's own extents before and after dim
};
inline ScatterReduceIndexLines scatter_reduce_index_lines(const ScatterReduceParams& p) {
  const ScatterParams& g = p.geometry;
  ScatterReduceIndexLines l;
  for (int d = 0; d < g.rank; ++d) {
    const int64_t own = p.index_strides[d] == 0 ? 1 : g.dims[d];
    if (d < g.dim) l.outer *= own;
    if (d > g.dim) l.inner *= own;
  }
  return l;
}

struct ScatterReduceScratch {
  int64_t wrapped = 0, sorted = 0, positions = 0, sort = 0;  // offsets
  int64_t bytes = 0;
};

inline ScatterReduceScratch scatter_reduce_scratch_of(const ScatterReduceParams& p) {
  const ScatterParams& g = p.geometry;
  ScatterReduceScratch s;
  if (scatter_scans_lines(g) || g.y_dim_size <= 0) return s;
  const ScatterReduceIndexLines lines = scatter_reduce_index_lines(p);
  const int64_t vb = scatter_reduce_index_bytes(g), axis = g.dims[g.dim];
  const int64_t n = lines.outer * axis * lines.inner;
  s.sorted = scatter_reduce_align(n * vb);
  s.positions = s.sorted + scatter_reduce_align(n * vb);
  s.sort = s.positions + scatter_reduce_align(n * 8);
  s.bytes = s.sort + scatter_reduce_align(sort_lines_scratch_bytes(vb, lines.outer, axis, lines.inner, axis));
  return s;
}

}  // namespace aotc::rt::cuda
