// pool2d_plan.h - the arena scratch of the CUDA adaptive average pooling of NHWC tensors:
// shared by the runtime (runtime/cuda/kernels/adaptive_avg_pool2d_nhwc.cu) and the compiler,
// which plans it (compiler/ops/cuda/adaptive_avg_pool2d_cuda.cpp). No CUDA headers.
#pragma once

#include <cstdint>

namespace aotc::rt::cuda {

// Global pooling (a 1x1 output) runs as blocks that each add a chunk of up to
// kGlobalPoolChunk pixels for a group of channels, where the tensor's offsets fit 31 bits;
// a plane of more pixels than one chunk then adds its chunks' sums, kept in the scratch, in
// a second step.
constexpr int64_t kGlobalPoolChunk = 64;

inline bool adaptive_avg_pool2d_nhwc_global(int64_t n, int64_t c, int64_t h_in, int64_t w_in, int64_t h_out,
                                            int64_t w_out) {
  return h_out == 1 && w_out == 1 && n > 0 && c > 0 && h_in > 0 && w_in > 0 &&
         n * h_in * w_in * c < (int64_t{1} << 31);
}

// The scratch bytes; 0 where the pooling needs none.
inline int64_t adaptive_avg_pool2d_nhwc_scratch_bytes(int64_t n, int64_t c, int64_t h_in, int64_t w_in,
                                                      int64_t h_out, int64_t w_out) {
  if (!adaptive_avg_pool2d_nhwc_global(n, c, h_in, w_in, h_out, w_out) || h_in * w_in <= kGlobalPoolChunk)
    return 0;
  return n * ((h_in * w_in + kGlobalPoolChunk - 1) / kGlobalPoolChunk) * c *
         static_cast<int64_t>(sizeof(float));
}

}  // namespace aotc::rt::cuda
