// sgemm_tiles.cuh - an EXPERIMENT, not part of the runtime: an exact-float32 split-K GEMM
// meant for the products on which cuBLAS leaves an H100 mostly idle (transformer-sized:
// M = 128-197 rows give cuBLAS's SIMT kernels a few dozen tiles for 132 multiprocessors).
// It measured 1.8-3.3x SLOWER than cuBLAS on every transformer shape (bench/results_gpu.md,
// "An own float32 GEMM: measured, not adopted"), so the runtime keeps cuBLASLt; it stays
// here, with bench/cuda/sgemm_tiles_bench.cu, as the record of what was tried.
//
// What it does: K split over up to 16 blocks per output tile; the last block of a tile
// (an atomic counter) adds the partial sums in split order (deterministic) and applies the
// whole epilogue (alpha, bias of any kind, residual, clamp). Both operands k-contiguous
// (A m x k, B n x k: a linear layer), staged by cp.async kStages slices deep; 8 x kTN
// outputs per thread at interleaved rows and columns (conflict-free shared memory reads).
// Loads are 16-byte vectors: k, the row strides and the pointers must be multiples of 4.
#pragma once

#include <aotc/rt/kernels.h>
#include <aotc/rt/cuda/pointwise.cuh>

#include <cstdint>

namespace aotc::rt::cuda::sgemm_tiles {

struct Problem {
  int m, n, k, batch;
  const float* a;
  int64_t lda, stride_a;
  const float* b;
  int64_t ldb, stride_b;
  float* c;
  int64_t ldc, stride_c;
  float alpha, beta;
  BiasKind bias_kind;
  const float* bias;  // null with BiasKind::None
  int64_t stride_bias;
  const float* residual;  // null or m x n, row stride ldr, batch stride stride_c
  int64_t ldr;
  float lo, hi;
  int splits;          // blocks per output tile along k
  int k_per_split;     // a multiple of the tile depth
  float* partials;     // splits > 1: splits * tiles * kBM * kBN floats
  unsigned* counters;  // splits > 1: one per output tile (all tiles of all matrices), zero
};

// The epilogue of one output: alpha * sum + beta * bias + residual, clamped.
__device__ __forceinline__ float finish(const Problem& p, const float* bias, const float* residual, int row,
                                        int col, float sum) {
  float x = p.alpha * sum;
  if (p.bias_kind == BiasKind::PerColumn)
    x += p.beta * bias[col];
  else if (p.bias_kind == BiasKind::PerRow)
    x += p.beta * bias[row];
  else if (p.bias_kind == BiasKind::Full)
    x += p.beta * bias[static_cast<int64_t>(row) * p.n + col];
  if (residual) x += residual[static_cast<int64_t>(row) * p.ldr + col];
  return clamp_apply(x, p.lo, p.hi);
}

// 16 bytes from global to shared memory without passing through registers (sm_80+);
// `bytes` 0 fills the 16 bytes with zeros (an element past the matrix's edge).
__device__ __forceinline__ void copy_16_async(void* shared, const void* global, int bytes) {
#if __CUDA_ARCH__ >= 800
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(global), "r"(bytes));
#endif
}
__device__ __forceinline__ void async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int kPending>
__device__ __forceinline__ void async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

// kBM x (16 * kTN) outputs per block of 16 * kBM / 8 threads; thread (tx, ty) owns rows
// ty + kRowThreads * i (i < 8) and columns tx + 16 * j (j < kTN): interleaved, so that the
// 8 threads of a shared-memory phase read 8 consecutive rows of B's slice (no bank
// conflicts with rows padded to kBK + 4 floats) and one row of A's (a broadcast).
// Both operands are k-contiguous (A m x k, B n x k) and staged as they are stored: kStages
// slices of kBK deep in flight through cp.async, so that the latency of memory (weights
// come from HBM in a run) is hidden behind the products of the slices before.
constexpr int kBK = 16;
constexpr int kPad = 4;  // floats after each kBK-long row in shared memory

template <int kBM, int kTN>
__host__ __device__ constexpr int threads_of() {
  return 16 * (kBM / 8);
}
template <int kBM, int kTN, int kStages>
constexpr int shared_bytes_of() {
  return kStages * (kBM + 16 * kTN) * (kBK + kPad) * 4;
}

template <int kBM, int kTN, int kStages>
__global__ void __launch_bounds__(threads_of<kBM, kTN>()) sgemm_tiles_kernel(Problem p) {
  constexpr int kBN = 16 * kTN;
  constexpr int kThreadsPerBlock = threads_of<kBM, kTN>();
  constexpr int kRowThreads = kBM / 8;
  constexpr int kRow = kBK + kPad;  // floats per staged row
  constexpr int kChunksPerRow = kBK / 4;
  constexpr int kAChunks = kBM * kChunksPerRow / kThreadsPerBlock;
  constexpr int kBChunks = kBN * kChunksPerRow / kThreadsPerBlock;
  static_assert(kAChunks * kThreadsPerBlock == kBM * kChunksPerRow &&
                    kBChunks * kThreadsPerBlock == kBN * kChunksPerRow,
                "every thread copies the same number of 16-byte chunks");
  extern __shared__ __align__(16) float staged[];  // kStages x (A's kBM rows, B's kBN rows)
  __shared__ int last_block;

  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int tile_n = blockIdx.x, tile_m = blockIdx.y;
  const int mat = blockIdx.z / p.splits, split = blockIdx.z % p.splits;
  const int m0 = tile_m * kBM, n0 = tile_n * kBN;
  const int k_begin = split * p.k_per_split;
  const int k_end = min(p.k, k_begin + p.k_per_split);
  const int slices = k_end > k_begin ? (k_end - k_begin + kBK - 1) / kBK : 0;

  const float* const a = p.a + mat * p.stride_a;
  const float* const b = p.b + mat * p.stride_b;

  // Slice s (k from k_begin + s * kBK) into stage s % kStages.
  auto load_slice = [&](int s) {
    float* const stage = staged + (s % kStages) * (kBM + kBN) * kRow;
    const int k0 = k_begin + s * kBK;
#pragma unroll
    for (int i = 0; i < kAChunks; ++i) {
      const int f = tid + i * kThreadsPerBlock;
      const int row = f / kChunksPerRow, kq = f % kChunksPerRow;
      const int gm = m0 + row, gk = k0 + kq * 4;
      const bool inside = gm < p.m && gk < k_end;
      copy_16_async(stage + row * kRow + kq * 4, inside ? a + gm * p.lda + gk : a, inside ? 16 : 0);
    }
#pragma unroll
    for (int i = 0; i < kBChunks; ++i) {
      const int f = tid + i * kThreadsPerBlock;
      const int col = f / kChunksPerRow, kq = f % kChunksPerRow;
      const int gn = n0 + col, gk = k0 + kq * 4;
      const bool inside = gn < p.n && gk < k_end;
      copy_16_async(stage + (kBM + col) * kRow + kq * 4, inside ? b + gn * p.ldb + gk : b, inside ? 16 : 0);
    }
  };

  float acc[8][kTN];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < slices) load_slice(s);
    async_commit();
  }
  for (int s = 0; s < slices; ++s) {
    async_wait<kStages - 2>();
    __syncthreads();  // slice s is in for everyone, and everyone is done with slice s - 1
    if (s + kStages - 1 < slices) load_slice(s + kStages - 1);
    async_commit();
    const float* const as = staged + (s % kStages) * (kBM + kBN) * kRow;
    const float* const bs = as + kBM * kRow;
#pragma unroll
    for (int k4 = 0; k4 < kBK; k4 += 4) {
      float4 av[8], bv[kTN];
#pragma unroll
      for (int i = 0; i < 8; ++i)
        av[i] = *reinterpret_cast<const float4*>(as + (ty + kRowThreads * i) * kRow + k4);
#pragma unroll
      for (int j = 0; j < kTN; ++j) bv[j] = *reinterpret_cast<const float4*>(bs + (tx + 16 * j) * kRow + k4);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) {
          acc[i][j] = fmaf(av[i].x, bv[j].x, acc[i][j]);
          acc[i][j] = fmaf(av[i].y, bv[j].y, acc[i][j]);
          acc[i][j] = fmaf(av[i].z, bv[j].z, acc[i][j]);
          acc[i][j] = fmaf(av[i].w, bv[j].w, acc[i][j]);
        }
    }
  }
  async_wait<0>();

  if (p.splits > 1) {
    // Publish this block's partial sums (each thread its own, laid out so that a warp's
    // stores are contiguous), then count the block in; the last of the tile's blocks goes
    // on to the epilogue with everyone's sums.
    const int tiles_n = gridDim.x, tiles_m = gridDim.y;
    const int64_t tile = (static_cast<int64_t>(mat) * tiles_m + tile_m) * tiles_n + tile_n;
    constexpr int kValues = 8 * kTN;
    float* const all = p.partials + tile * p.splits * (kValues * kThreadsPerBlock);
    float* const mine = all + split * (kValues * kThreadsPerBlock);
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < kTN; ++j) __stcg(mine + (i * kTN + j) * kThreadsPerBlock + tid, acc[i][j]);
    __threadfence();
    __syncthreads();
    if (tid == 0) {
      const unsigned before = atomicAdd(p.counters + tile, 1u);
      last_block = before == static_cast<unsigned>(p.splits - 1);
      if (last_block) p.counters[tile] = 0;  // ready for the next launch (graph replay)
    }
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    // The sum in split order, whichever block came last.
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < kTN; ++j) {
        float sum = 0.0f;
        for (int other = 0; other < p.splits; ++other)
          sum += other == split ? acc[i][j]
                                : __ldcg(all + (other * kValues + i * kTN + j) * kThreadsPerBlock + tid);
        acc[i][j] = sum;
      }
  }

  // The epilogue; 16 consecutive threads store 16 consecutive columns.
  float* const c = p.c + mat * p.stride_c;
  const float* const bias = p.bias ? p.bias + mat * p.stride_bias : nullptr;
  const float* const residual = p.residual ? p.residual + mat * p.stride_c : nullptr;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = m0 + ty + kRowThreads * i;
    if (row >= p.m) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int col = n0 + tx + 16 * j;
      if (col < p.n)
        c[static_cast<int64_t>(row) * p.ldc + col] = finish(p, bias, residual, row, col, acc[i][j]);
    }
  }
}

}  // namespace aotc::rt::cuda::sgemm_tiles
