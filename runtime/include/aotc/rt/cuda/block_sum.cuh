// block_sum.cuh - sums across a warp and across a block, in a fixed order (every run adds
// the same values the same way: results do not vary from run to run).
#pragma once

namespace aotc::rt::cuda {

// The sum of v over the warp, for every lane.
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The sum of v over the block (blockDim.x a multiple of 32, at most 1024), for every thread;
// shared holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float* shared) {
  v = warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads();  // shared may still be read by the previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  return warp_sum(lane < warps ? shared[lane] : 0.0f);
}

}  // namespace aotc::rt::cuda
