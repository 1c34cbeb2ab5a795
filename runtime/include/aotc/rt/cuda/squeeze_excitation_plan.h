// squeeze_excitation_plan.h - which squeeze-and-excitation gates the CUDA kernel
// (runtime/cuda/kernels/squeeze_excitation.cu) computes in one launch: shared by the runtime
// and the compiler, which fuses only those (compiler/passes/cuda/fuse_squeeze_excitation.cpp),
// so the two cannot disagree. No CUDA headers.
#pragma once

#include <cstdint>

namespace aotc::rt::cuda {

// The hidden layer (r values an image) sits in shared memory; the grid's y dimension takes
// blocks of 1024 channels; offsets stay in 32 bits.
inline constexpr int64_t kSqueezeExcitationMaxHidden = 4096;

inline bool squeeze_excitation_fits(int64_t n, int64_t c, int64_t r) {
  return n > 0 && c > 0 && r > 0 && r <= kSqueezeExcitationMaxHidden && c <= 65535 * int64_t{1024} &&
         n * c <= INT32_MAX && r * c <= INT32_MAX;
}

}  // namespace aotc::rt::cuda
