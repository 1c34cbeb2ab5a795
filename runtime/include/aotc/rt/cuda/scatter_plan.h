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
#pragma once

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

}  // namespace aotc::rt::cuda
