// group_norm_plan.h - how the CUDA group normalisation splits its groups over blocks and the
// arena scratch that takes: shared by the runtime (runtime/cuda/kernels/group_norm.cu) and
// the compiler, which plans the scratch (compiler/ops/cuda/group_norm_cuda.cpp), so the two
// cannot disagree. No CUDA headers.
#pragma once

#include <aotc/rt/kernels.h>

#include <cstdint>

namespace aotc::rt::cuda {

// Values of a group (c / groups channels x spatial) per block: a larger group is split into
// chunks of this many, one block each, so that a few large groups still fill the GPU.
inline constexpr int64_t kGroupNormChunk = 8192;

// Chunks per group (0 for an empty tensor).
inline int64_t group_norm_chunks(const GroupNormParams& p) {
  if (p.n <= 0 || p.c <= 0 || p.groups <= 0 || p.spatial <= 0) return 0;
  const int64_t count = p.c / p.groups * p.spatial;
  return (count + kGroupNormChunk - 1) / kGroupNormChunk;
}

// Split groups keep two floats per chunk (its sum and its sum of squares about its own
// mean); groups of one chunk need none.
inline int64_t group_norm_scratch_bytes(const GroupNormParams& p) {
  const int64_t chunks = group_norm_chunks(p);
  return chunks > 1 ? p.n * p.groups * chunks * 2 * static_cast<int64_t>(sizeof(float)) : 0;
}

}  // namespace aotc::rt::cuda
