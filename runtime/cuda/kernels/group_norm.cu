// group_norm.cu - group normalisation (GroupNormParams, as the CPU kernel takes it; instance
// normalisation is groups == c): per image and group, the mean and biased variance of its
// c / groups x spatial contiguous values, then y = (x - mean) * rstd * gamma[c] + beta[c],
// clamped. Float32 throughout; the variance is a sum of squares about the mean (the CPU's
// two passes), never E[x^2] - E[x]^2, which cancels badly when the mean is large against
// the spread.
//
// A group of up to kGroupNormChunk values is one block: it holds the values in registers,
// reduces the sum, then the centred squares, and writes the result. A larger group is split
// into chunks (group_norm_plan.h), one block each, in two launches: the first writes each
// chunk's sum and its sum of squares about the chunk's own mean to the scratch; the second
// merges a group's chunks (mean = sum / count, M2 = sum over chunks of M2_k + n_k (mean_k -
// mean)^2, Chan et al.'s exact combination) and normalises its chunk. So 32 groups of 512
// channels x 64 x 64 run as 256 blocks, not 32.
#include <aotc/rt/cuda/group_norm_plan.h>
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/block_sum.cuh>
#include <aotc/rt/cuda/fast_div.cuh>

namespace aotc::rt::cuda {
namespace {

constexpr int kBlock = 512;  // threads of a split group's blocks, and the most of a whole one
constexpr int kPerThread = static_cast<int>(kGroupNormChunk) / kBlock;  // values in registers
static_assert(kPerThread * kBlock == kGroupNormChunk, "a chunk is kPerThread values per thread");

// The channel (within its group) of the value at `offset` of a group: 32-bit division by
// multiplication where a group's offsets fit 32 bits.
struct ChannelOf {
  FastDiv spatial32;
  int64_t spatial;
  bool narrow;
  __device__ __forceinline__ int64_t operator()(int64_t offset) const {
    return narrow ? static_cast<int64_t>(spatial32.div(static_cast<uint32_t>(offset))) : offset / spatial;
  }
};

ChannelOf channel_of(const GroupNormParams& p) {
  const int64_t count = p.c / p.groups * p.spatial;
  const bool narrow = count <= int64_t{0xffffffff};
  return {narrow ? FastDiv(static_cast<uint32_t>(p.spatial)) : FastDiv(), p.spatial, narrow};
}

// y = (x - mean) * (rstd * gamma) + beta, fused as the CPU's compiler fuses it, then the
// clamp (a NaN stays NaN).
__device__ __forceinline__ float normalise(float v, float mean, float rstd, const float* gamma,
                                           const float* beta, int64_t channel, const GroupNormParams& p) {
  const float scale = rstd * (gamma ? gamma[channel] : 1.0f);
  const float shift = beta ? beta[channel] : 0.0f;
  float r = fmaf(v - mean, scale, shift);
  r = r < p.clamp_lo ? p.clamp_lo : r;
  return r > p.clamp_hi ? p.clamp_hi : r;
}

// The `len` values of a chunk, value k of thread t at t + k * blockDim.x (0 past the end).
__device__ __forceinline__ void load_chunk(const float* __restrict__ x, int len, float (&v)[kPerThread]) {
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int j = threadIdx.x + k * blockDim.x;
    v[k] = j < len ? x[j] : 0.0f;
  }
}

// The chunk's sum and its sum of squares about sum / len, for every thread.
__device__ __forceinline__ void chunk_stats(const float (&v)[kPerThread], int len, float* shared, float& sum,
                                            float& m2) {
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) s += v[k];
  sum = block_sum(s, shared);
  const float mean = sum / static_cast<float>(len);
  float sq = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k)
    if (static_cast<int>(threadIdx.x + k * blockDim.x) < len) {
      const float d = v[k] - mean;
      sq += d * d;
    }
  m2 = block_sum(sq, shared);
}

// One block per (image, group) of at most kGroupNormChunk values.
__global__ void group_norm_kernel(GroupNormParams p, ChannelOf channel_of, const float* __restrict__ x,
                                  const float* __restrict__ gamma, const float* __restrict__ beta,
                                  float* __restrict__ y) {
  __shared__ float shared[32];
  const int64_t item = blockIdx.x;
  const int64_t channels = p.c / p.groups;
  const int len = static_cast<int>(channels * p.spatial);
  float v[kPerThread];
  load_chunk(x + item * len, len, v);
  float sum, m2;
  chunk_stats(v, len, shared, sum, m2);
  const float mean = sum / static_cast<float>(len);
  const float rstd = 1.0f / sqrtf(m2 / static_cast<float>(len) + p.eps);
  const int64_t c0 = (item % p.groups) * channels;
  float* yg = y + item * len;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int j = threadIdx.x + k * blockDim.x;
    if (j < len) yg[j] = normalise(v[k], mean, rstd, gamma, beta, c0 + channel_of(j), p);
  }
}

// Split groups, first launch: block b = item * chunks + chunk writes partial[2 b] (the
// chunk's sum) and partial[2 b + 1] (its squares about its own mean).
__global__ void group_norm_partial_kernel(GroupNormParams p, int64_t chunks, const float* __restrict__ x,
                                          float* __restrict__ partial) {
  __shared__ float shared[32];
  const int64_t block = blockIdx.x;
  const int64_t count = p.c / p.groups * p.spatial;
  const int64_t begin = (block % chunks) * kGroupNormChunk;
  const int len = static_cast<int>(min(kGroupNormChunk, count - begin));
  float v[kPerThread];
  load_chunk(x + (block / chunks) * count + begin, len, v);
  float sum, m2;
  chunk_stats(v, len, shared, sum, m2);
  if (threadIdx.x == 0) {
    partial[2 * block] = sum;
    partial[2 * block + 1] = m2;
  }
}

// Split groups, second launch: the group's statistics from its chunks' (the first warp),
// then the block's chunk normalised.
__global__ void group_norm_apply_kernel(GroupNormParams p, int64_t chunks, ChannelOf channel_of,
                                        const float* __restrict__ x, const float* __restrict__ gamma,
                                        const float* __restrict__ beta, const float* __restrict__ partial,
                                        float* __restrict__ y) {
  __shared__ float stats[2];
  const int64_t block = blockIdx.x, item = block / chunks;
  const int64_t channels = p.c / p.groups, count = channels * p.spatial;
  const float* part = partial + 2 * item * chunks;
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    float s = 0.0f;
    for (int64_t k = lane; k < chunks; k += 32) s += part[2 * k];
    const float mean = warp_sum(s) / static_cast<float>(count);
    float m2 = 0.0f;
    for (int64_t k = lane; k < chunks; k += 32) {
      const float n_k = static_cast<float>(min(kGroupNormChunk, count - k * kGroupNormChunk));
      const float d = part[2 * k] / n_k - mean;
      m2 += part[2 * k + 1] + n_k * d * d;
    }
    m2 = warp_sum(m2);
    if (lane == 0) {
      stats[0] = mean;
      stats[1] = 1.0f / sqrtf(m2 / static_cast<float>(count) + p.eps);
    }
  }
  __syncthreads();
  const float mean = stats[0], rstd = stats[1];
  const int64_t begin = (block % chunks) * kGroupNormChunk;
  const int len = static_cast<int>(min(kGroupNormChunk, count - begin));
  const int64_t c0 = (item % p.groups) * channels;
  const float* xc = x + item * count + begin;
  float* yc = y + item * count + begin;
  for (int j = threadIdx.x; j < len; j += blockDim.x)
    yc[j] = normalise(xc[j], mean, rstd, gamma, beta, c0 + channel_of(begin + j), p);
}

}  // namespace

void group_norm_f32(cudaStream_t stream, const GroupNormParams& p, const float* x, const float* gamma,
                    const float* beta, float* y, float* scratch) {
  const int64_t chunks = group_norm_chunks(p);
  if (chunks <= 0) return;
  const int64_t items = p.n * p.groups;
  if (items * chunks > 0x7fffffff) {
    note_error("group_norm", "more blocks than a grid holds");
    return;
  }
  const ChannelOf channels = channel_of(p);
  if (chunks == 1) {
    // Enough warps for kPerThread values each.
    const int64_t count = p.c / p.groups * p.spatial;
    const int threads = static_cast<int>((count + 32 * kPerThread - 1) / (32 * kPerThread) * 32);
    group_norm_kernel<<<static_cast<unsigned>(items), threads, 0, stream>>>(p, channels, x, gamma, beta, y);
    check_launch("group_norm_kernel");
    return;
  }
  if (!scratch) {
    note_error("group_norm", "split groups need the scratch of group_norm_scratch_bytes");
    return;
  }
  const auto blocks = static_cast<unsigned>(items * chunks);
  group_norm_partial_kernel<<<blocks, kBlock, 0, stream>>>(p, chunks, x, scratch);
  check_launch("group_norm_partial_kernel");
  group_norm_apply_kernel<<<blocks, kBlock, 0, stream>>>(p, chunks, channels, x, gamma, beta, scratch, y);
  check_launch("group_norm_apply_kernel");
}

}  // namespace aotc::rt::cuda
