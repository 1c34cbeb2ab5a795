// gemm_3xtf32.cu - float32 linear layers (C = A B^T, B stored n x k) on tf32 tensor cores at
// float32's accuracy ("3xTF32", as CUTLASS names it).
//
// Each float32 operand x is split into big = tf32(x) and small = x - big, which the tensor
// cores read as a tf32 number (truncated): 11 + 11 significant bits against float32's 24.
// The product is
//   A B^T ~ As Bb^T + Ab Bs^T + Ab Bb^T
// (the dropped As Bs^T is below 2^-22 of each term), three mma.sync m16n8k8 tf32 products per
// step, exact for operands that are tf32 numbers.
//
// Why not cuBLASLt's tf32 GEMM over the split operands: the tensor cores accumulate with
// truncation, so the error of a long tf32 accumulation grows with k. Measured over
// 197 x 768 x 768-3072 (bench/cuda/sgemm_3xtf32_bench.cu): split operands through one cuBLASLt
// tf32 GEMM were 6-8e-6 from float64, 20-30x cuBLAS's float32 SIMT GEMM (2-4e-7). Here each
// 32-deep slice of k accumulates in tensor cores from zero and is then added into float32
// registers by ordinary (rounded) additions: long sums round as float32 sums do.
//
// Tiles: a block of WarpsM x WarpsN warps computes BM x BN of C, k in slices of 32 staged by
// cp.async in three stages. The mma's k positions t and t + 4 of a thread are read from
// columns 2t and 2t + 1 of the slice (the same permutation of k for A and B leaves the
// product unchanged), so each pair is one 64-bit shared-memory load. Several configurations
// (tile, split of k) are enumerated for the tuning (gemm_cublas.cu times them against
// cuBLAS). With a split of k, the parts add their sums in a fixed order, so the result does
// not depend on timing: on sm_90 as one thread-block cluster through distributed shared
// memory, elsewhere through the workspace and one more kernel (sum_parts_kernel).
//
// The same loop serves convolutions over NHWC inputs as an implicit GEMM (implicit_conv_nhwc):
// A's rows are output pixels and its k the receptive field (tap, then channel), gathered
// from the input as each slice is staged, so the unfolded columns are never written (at
// batch 32 resnet50's 3x3 layers unfold into 1.87 GB that im2col writes and the GEMM reads
// back). With c_in a multiple of 32 a slice is one tap's 32 channels: each row's chunk is
// 16 contiguous bytes of one input pixel, or zeros where the tap reads padding. At
// --precision tf32 the product is one tf32 mma per step (Split false): A is rounded to
// tf32 as it is read, B was rounded at compile time (convert_to_channels_last.cpp), and the
// tensor cores accumulate as cuBLAS's tf32 GEMMs do. On compute capability 9.0 the tf32
// convolution also has a loop on Hopper's warpgroup MMA (implicit_conv_wgmma_kernel, below):
// the tuning times its tiles with the others'.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/f16x2_split.cuh>
#include <aotc/rt/cuda/pointwise.cuh>
#include <aotc/rt/cuda/tf32_mma.cuh>

#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdlib>

namespace aotc::rt::cuda {
namespace {

constexpr int kBK = 32;     // k per stage
constexpr int kStages = 3;  // cp.async pipeline depth
// A shared-memory row: k padded by 8 floats, which puts the 64-bit fragment loads of a half
// warp (rows g = 0..3, columns 2t) on 32 distinct banks.
constexpr int kRowFloats = kBK + 8;

// x = big + small, both tf32, and `cross`, the big part as the two small products take it.
// Infinities, NaNs, and the finite values within 2^-12 of float32's largest (whose rounding
// would overflow) are their own big part (those few finite values keep 10 mantissa bits:
// the tensor cores truncate them), with 0 as small and as cross: the small products stay
// finite (an infinite big part times a zero small part of the other operand would be a
// NaN), and infinities and NaNs propagate through the big product as in float32.
// The small part is left unrounded: the tensor cores truncate it to tf32. Rounding it takes
// 2 more instructions in 7 and measured 5% slower for 2.49-2.59e-7 of relative error
// against 2.55-2.64e-7 (bench/results_gpu.md).
__device__ __forceinline__ void split(float x, uint32_t& big, uint32_t& cross, uint32_t& small) {
  const bool rounds = fabsf(x) < 0x1.ffep127f;
  const uint32_t rounded = tf32_bits(__float_as_uint(x));
  const float rest = x - __uint_as_float(rounded);
  big = rounds ? rounded : __float_as_uint(x);
  cross = rounds ? rounded : 0u;
  small = rounds ? __float_as_uint(rest) : 0u;
}

// ---- Two fp16 parts ("2xFP16", gemm_f16x2) ----
// x * s = big + small, both fp16, where s is a power of two that puts the largest magnitude
// of x's row (B: the whole row, once, split_b_f16x2_kernel; A: the row's 32 values in a
// slice of k, in the loop) in [2^14, 2^15): fp16's 11 significant bits twice, as tf32's,
// and fp16's narrow exponent range moved to where the row's values are. The values far
// below the row's largest lose the small part's low bits (fp16 subnormals): an error under
// 2^-39 of the largest. The products As Bb + Ab Bs + Ab Bb are three m16n8k16 fp16 mma a
// 16-deep step, against six m16n8k8 tf32 mma for the 3xTF32 split, and B's split is not
// redone by every block. The slice's sums are unscaled by A's row factor as they are
// added (exact: powers of two), B's column factor in the epilogue (Args::col_scale).
enum class Product {
  OneTf32,    // one tf32 product (--precision tf32), A rounded as read
  ThreeTf32,  // float32's accuracy, both operands split in the loop
  TwoF16,     // float32's accuracy, B split beforehand (split_b_f16x2_kernel), A by each warp
};

template <int N>
__device__ __forceinline__ uint32_t max_of(const uint32_t (&v)[N][2]) {
  uint32_t m = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) m = max(m, max(v[i][0], v[i][1]));
  return m;
}

// A's fragments of a slice split (a, top: the gemm kernel's): each row's largest magnitude
// over its quad, the row's factor, the parts as m16n8k16 A fragments (a[mt][h][s][j] is
// register h + 2 j of step s), and the factors' inverses.
template <int MT, bool Careful>
__device__ __forceinline__ void split_rows_f16x2(const float2 (&a)[MT][2][2][2], const uint32_t (&top)[MT][2],
                                                 uint32_t (&big)[MT][2][4], uint32_t (&cross)[MT][2][4],
                                                 uint32_t (&small)[MT][2][4], float (&unscale)[MT][2]) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint32_t m = top[mt][h];
      m = max(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = max(m, __shfl_xor_sync(0xffffffffu, m, 2));
      const int field = f16x2_scale_field(m);
      const float scale = __uint_as_float(static_cast<uint32_t>(field) << 23);
      unscale[mt][h] = __uint_as_float(static_cast<uint32_t>(254 - field) << 23);
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int j = 0; j < 2; ++j)
          split_pair_f16x2<Careful>(a[mt][h][s][j], scale, big[mt][s][h + 2 * j], cross[mt][s][h + 2 * j],
                                    small[mt][s][h + 2 * j]);
    }
}

__device__ __forceinline__ void cp_async16(void* smem, const void* global, bool valid) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(global), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

struct Args {
  int64_t m, n, k;
  const float* a;
  int64_t lda;
  const float* b;  // n x k
  int64_t ldb;
  int64_t k_per_part;  // a multiple of kBK
  // Epilogue, applied where the whole sum is known: c = clamp(alpha * AB^T + beta * bias +
  // residual).
  float alpha, beta, clamp_lo, clamp_hi;
  const float* col_scale;     // TwoF16: each column's sum times its factor first (B's unscale)
  GemmActivation activation;  // after the bias, before the residual
  BiasKind bias_kind;
  const float* bias;
  const float* residual;
  int64_t ldr;
  float* c;
  int64_t ldc;
  float* partial;  // parts > 1 without a cluster: part p's sums at partial + p * m * n, rows n apart
  int parts;
  // Gather (implicit_conv_nhwc): A is the convolution's NHWC input `a`, row r the output
  // pixel (image, oy, ox) in row-major order, k = (ky * kernel_w + kx) * c_in + channel.
  int h_in, w_in, c_in, h_out, w_out, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
};

__device__ __forceinline__ float epilogue(const Args& p, int64_t row, int64_t col, float sum) {
  float v = p.alpha * (p.col_scale ? sum * p.col_scale[col] : sum);
  if (p.bias_kind == BiasKind::PerColumn)
    v += p.beta * p.bias[col];
  else if (p.bias_kind == BiasKind::PerRow)
    v += p.beta * p.bias[row];
  else if (p.bias_kind == BiasKind::Full)
    v += p.beta * p.bias[row * p.n + col];
  v = activation_apply(p.activation, v);
  if (p.residual) v += p.residual[row * p.ldr + col];
  return clamp_apply(v, p.clamp_lo, p.clamp_hi);
}

// The k range of a block's part of the product: [begin, end), in `tiles` slices of kBK.
struct PartK {
  int64_t begin, end;
  int tiles;
};
__device__ __forceinline__ PartK part_k(const Args& p, int part) {
  const int64_t begin = part * p.k_per_part, end = min(p.k, begin + p.k_per_part);
  return {begin, end, static_cast<int>((end - begin + kBK - 1) / kBK)};
}

// Gather: row gr's output pixel as the input position of its first tap (iy0, ix0; far out of
// range past the last row), and that position's chunk `chunk` in the input.
__device__ __forceinline__ const float* gather_row(const Args& p, int64_t gr, int chunk, int& iy0, int& ix0) {
  const int r = static_cast<int>(gr < p.m ? gr : 0);
  const int ox = r % p.w_out, oy = r / p.w_out % p.h_out, image = r / (p.w_out * p.h_out);
  iy0 = gr < p.m ? oy * p.stride_h - p.pad_h : -(1 << 29);
  ix0 = ox * p.stride_w - p.pad_w;
  return p.a + ((static_cast<int64_t>(image) * p.h_in + iy0) * p.w_in + ix0) * p.c_in + chunk * 4;
}

// Gather: the slice starting at k = kk is one tap's 32 channels (c_in % 32 == 0; parts
// start on slices): the tap's offsets (dy, dx) and the slice's shift from a row's source.
__device__ __forceinline__ int64_t gather_slice(const Args& p, int kk, int& dy, int& dx) {
  const int tap = kk / p.c_in, channel = kk - tap * p.c_in;
  const int ky = tap / p.kernel_w, kx = tap - ky * p.kernel_w;
  dy = ky * p.dilation_h;
  dx = kx * p.dilation_w;
  return (static_cast<int64_t>(dy) * p.w_in + dx) * p.c_in + channel;
}

// Whether the gathered row at (iy0, ix0) reads the input (not its padding) at tap (dy, dx).
__device__ __forceinline__ bool gather_inside(const Args& p, int iy0, int ix0, int dy, int dx) {
  return static_cast<unsigned>(iy0 + dy) < static_cast<unsigned>(p.h_in) &&
         static_cast<unsigned>(ix0 + dx) < static_cast<unsigned>(p.w_in);
}

// The block's tile of C out of its accumulators (acc[mt][nt]: rows g and g + 8, columns 2t
// and 2t + 1 of each 16 x 8 tile of the warp's), through the epilogue; with k in parts, to
// the workspace, or, as a cluster, summed over the parts through distributed shared memory
// (`smem`: the block's, free, at least BM x (BN + 8) floats).
template <int BM, int BN, int WarpsM, int WarpsN, bool Cluster>
__device__ __forceinline__ void store_tile(const Args& p,
                                           const float (&acc)[BM / WarpsM / 16][BN / WarpsN / 8][4],
                                           float* smem, int64_t m0, int64_t n0, int part) {
  constexpr int TM = BM / WarpsM, TN = BN / WarpsN;
  constexpr int MT = TM / 16, NT = TN / 8;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int warp_m = warp / WarpsN, warp_n = warp % WarpsN;
  if constexpr (Cluster) {
#if __CUDA_ARCH__ >= 900
    constexpr int kThreadsPerBlock = WarpsM * WarpsN * 32;
    // Each block's sums into its shared memory (the stages are done with), then each adds a
    // share of the tile's elements over every block of the cluster, in rank order: the
    // result does not depend on timing.
    constexpr int kSumRow = BN + 8;  // 64-bit stores of a half warp on distinct banks
    __syncthreads();
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int row = warp_m * TM + mt * 16 + g + 8 * half, col = warp_n * TN + nt * 8 + 2 * t;
          *reinterpret_cast<float2*>(smem + row * kSumRow + col) =
              make_float2(acc[mt][nt][2 * half], acc[mt][nt][2 * half + 1]);
        }
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    cluster.sync();
    const int parts = static_cast<int>(cluster.num_blocks()), rank = static_cast<int>(cluster.block_rank());
    for (int i = rank * kThreadsPerBlock + threadIdx.x; i < BM * BN; i += parts * kThreadsPerBlock) {
      const int row = i / BN, col = i % BN;
      float sum = 0.0f;
      for (int r = 0; r < parts; ++r) sum += cluster.map_shared_rank(smem, r)[row * kSumRow + col];
      if (m0 + row < p.m && n0 + col < p.n)
        p.c[(m0 + row) * p.ldc + n0 + col] = epilogue(p, m0 + row, n0 + col, sum);
    }
    cluster.sync();  // no block leaves while another reads its shared memory
#else
    __trap();  // launched only on sm_90 and later (gemm_3xtf32)
#endif
  } else {
    // acc[mt][nt]: rows g and g + 8, columns 2t and 2t + 1 of the 16 x 8 tile.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t row = m0 + warp_m * TM + mt * 16 + g + (e >= 2 ? 8 : 0);
          const int64_t col = n0 + warp_n * TN + nt * 8 + 2 * t + (e & 1);
          if (row >= p.m || col >= p.n) continue;
          if (p.parts > 1)
            p.partial[part * p.m * p.n + row * p.n + col] = acc[mt][nt][e];
          else
            p.c[row * p.ldc + col] = epilogue(p, row, col, acc[mt][nt][e]);
        }
  }
}

// Cluster: the parts of one tile of C run as one thread-block cluster (sm_90) and add their
// sums through distributed shared memory; otherwise through p.partial and sum_parts_kernel.
// Kind: the products of a step (Product).
// Gather: A gathered from a convolution's NHWC input (Args' geometry).
template <int BM, int BN, int WarpsM, int WarpsN, bool Cluster, Product Kind, bool Gather>
__global__ void __launch_bounds__(WarpsM* WarpsN * 32) gemm_3xtf32_kernel(Args p) {
  static_assert(!(Gather && Kind == Product::TwoF16), "the split weights are a linear layer's");
  constexpr int kThreadsPerBlock = WarpsM * WarpsN * 32;
  constexpr int TM = BM / WarpsM, TN = BN / WarpsN;  // the warp's tile
  constexpr int MT = TM / 16, NT = TN / 8;           // its mma tiles
  static_assert(TM % 16 == 0 && TN % 8 == 0);
  static_assert(BM * (BN + 8) <= kStages * (BM + BN) * kRowFloats);  // room for store_tile's sums
  extern __shared__ float4 smem4[];
  float* const smem = reinterpret_cast<float*>(smem4);
  float* const a_tiles = smem;                              // [kStages][BM][kRowFloats]
  float* const b_tiles = smem + kStages * BM * kRowFloats;  // [kStages][BN][kRowFloats]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int warp_m = warp / WarpsN, warp_n = warp % WarpsN;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * BM, n0 = static_cast<int64_t>(blockIdx.x) * BN;
  const int part = blockIdx.z;
  const PartK range = part_k(p, part);
  const int64_t k_begin = range.begin, k_end = range.end;
  const int k_tiles = range.tiles;

  // One stage: BM + BN rows of 8 sixteen-byte chunks. A thread copies the same column of
  // chunks (its index % 8) in rows kRowStep apart, the first kChunksA of them from A: their
  // sources are found once. Past the edges of A and B, zeros (k % 4 == 0, so a chunk is all
  // in or all out).
  constexpr int kRowStep = kThreadsPerBlock / 8;
  constexpr int kChunksA = BM / kRowStep, kChunksB = BN / kRowStep;
  static_assert(BM % kRowStep == 0 && BN % kRowStep == 0);
  const int first_row = threadIdx.x / 8, chunk = threadIdx.x % 8;
  const int64_t chunk_k = k_begin + chunk * 4;
  const float* src[kChunksA + kChunksB];
  // Gather: row j's first tap (gather_row).
  int iy0[Gather ? kChunksA : 1], ix0[Gather ? kChunksA : 1];
#pragma unroll
  for (int j = 0; j < kChunksA; ++j) {
    const int64_t gr = m0 + first_row + j * kRowStep;
    if constexpr (Gather) {
      src[j] = gather_row(p, gr, chunk, iy0[j], ix0[j]);
    } else {
      src[j] = gr < p.m ? p.a + gr * p.lda + chunk_k : nullptr;
    }
  }
#pragma unroll
  for (int j = 0; j < kChunksB; ++j) {
    const int64_t gr = n0 + first_row + j * kRowStep;
    src[kChunksA + j] = gr < p.n ? p.b + gr * p.ldb + chunk_k : nullptr;
  }
  auto load = [&](int stage, int tile) {
    const int k0 = tile * kBK;
    const bool k_in = chunk_k + k0 < k_end;
    // TwoF16: B's split rows hold k rounded up to slices, zeros past k, in an order of their
    // own (a chunk is not 4 consecutive k): whole slices are copied.
    const bool k_in_b = Kind == Product::TwoF16 ? chunk_k + k0 < (k_end + kBK - 1) / kBK * kBK : k_in;
    float* const as = a_tiles + stage * BM * kRowFloats + first_row * kRowFloats + chunk * 4;
    float* const bs = b_tiles + stage * BN * kRowFloats + first_row * kRowFloats + chunk * 4;
    if constexpr (Gather) {
      int dy, dx;
      const int64_t shift = gather_slice(p, static_cast<int>(k_begin) + k0, dy, dx);
#pragma unroll
      for (int j = 0; j < kChunksA; ++j) {
        const bool valid = k_in && gather_inside(p, iy0[j], ix0[j], dy, dx);
        cp_async16(as + j * kRowStep * kRowFloats, valid ? src[j] + shift : p.a, valid);
      }
    } else {
#pragma unroll
      for (int j = 0; j < kChunksA; ++j) {
        const bool valid = k_in && src[j] != nullptr;
        cp_async16(as + j * kRowStep * kRowFloats, valid ? src[j] + k0 : p.a, valid);
      }
    }
#pragma unroll
    for (int j = kChunksA; j < kChunksA + kChunksB; ++j) {
      const bool valid = k_in_b && src[j] != nullptr;
      cp_async16(bs + (j - kChunksA) * kRowStep * kRowFloats, valid ? src[j] + k0 : p.b, valid);
    }
  };

  float acc[MT][NT][4] = {};
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load(s, s);
    cp_async_commit();
  }
  for (int tile = 0; tile < k_tiles; ++tile) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    if (tile + kStages - 1 < k_tiles) load((tile + kStages - 1) % kStages, tile + kStages - 1);
    cp_async_commit();

    const float* const as = a_tiles + (tile % kStages) * BM * kRowFloats + (warp_m * TM) * kRowFloats;
    const float* const bs = b_tiles + (tile % kStages) * BN * kRowFloats + (warp_n * TN) * kRowFloats;
    if constexpr (Kind == Product::OneTf32) {
      // One tf32 product a step, accumulated in the tensor cores (as cuBLAS's tf32 GEMMs).
#pragma unroll
      for (int k8 = 0; k8 < kBK; k8 += 8) {
        uint32_t a[MT][4], b[NT][2];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const float* r = as + (mt * 16 + g) * kRowFloats + k8 + 2 * t;
          const uint2 upper = *reinterpret_cast<const uint2*>(r);
          const uint2 lower = *reinterpret_cast<const uint2*>(r + 8 * kRowFloats);
          a[mt][0] = tf32_round_any(upper.x);
          a[mt][1] = tf32_round_any(lower.x);
          a[mt][2] = tf32_round_any(upper.y);
          a[mt][3] = tf32_round_any(lower.y);
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const uint2 v = *reinterpret_cast<const uint2*>(bs + (nt * 8 + g) * kRowFloats + k8 + 2 * t);
          b[nt][0] = v.x;
          b[nt][1] = v.y;
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) mma_tf32(acc[mt][nt], a[mt], b[nt]);
      }
    } else if constexpr (Kind == Product::ThreeTf32) {
      float slice[MT][NT][4] = {};  // this 32-deep slice, accumulated in the tensor cores
#pragma unroll
      for (int k8 = 0; k8 < kBK; k8 += 8) {
        // This step's fragments: rows g and g + 8 of each 16-row tile of A, columns 2t and
        // 2t + 1 of the 8-deep step (the mma's k positions t and t + 4).
        float a[MT][4], b[NT][2];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const float* r = as + (mt * 16 + g) * kRowFloats + k8 + 2 * t;
          const float2 upper = *reinterpret_cast<const float2*>(r);
          const float2 lower = *reinterpret_cast<const float2*>(r + 8 * kRowFloats);
          a[mt][0] = upper.x;
          a[mt][1] = lower.x;
          a[mt][2] = upper.y;
          a[mt][3] = lower.y;
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const float2 v = *reinterpret_cast<const float2*>(bs + (nt * 8 + g) * kRowFloats + k8 + 2 * t);
          b[nt][0] = v.x;
          b[nt][1] = v.y;
        }
        // The small terms first (added before the sum has grown); each product over all tiles
        // before the next, so that no mma waits for the one before it.
        const auto products = [&](const uint32_t(&a_big)[MT][4], const uint32_t(&a_cross)[MT][4],
                                  const uint32_t(&a_small)[MT][4], const uint32_t(&b_big)[NT][2],
                                  const uint32_t(&b_cross)[NT][2], const uint32_t(&b_small)[NT][2]) {
#pragma unroll
          for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) mma_tf32(slice[mt][nt], a_small[mt], b_cross[nt]);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) mma_tf32(slice[mt][nt], a_cross[mt], b_small[nt]);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) mma_tf32(slice[mt][nt], a_big[mt], b_big[nt]);
        };
        // The common case in 4 instructions an element (split's 7): every value of the warp's
        // fragments rounds, so big and cross are the rounded value. The sum of the rests'
        // magnitudes is finite exactly then: a value that does not round (infinite, NaN, or
        // within 2^-12 of float32's largest) leaves a NaN or infinite rest, and the rests of
        // those that round are below 2^-12 of them.
        uint32_t a_big[MT][4], a_small[MT][4], b_big[NT][2], b_small[NT][2];
        float rests = 0.0f;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            a_big[mt][e] = tf32_bits(__float_as_uint(a[mt][e]));
            const float rest = a[mt][e] - __uint_as_float(a_big[mt][e]);
            a_small[mt][e] = __float_as_uint(rest);
            rests += fabsf(rest);
          }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            b_big[nt][e] = tf32_bits(__float_as_uint(b[nt][e]));
            const float rest = b[nt][e] - __uint_as_float(b_big[nt][e]);
            b_small[nt][e] = __float_as_uint(rest);
            rests += fabsf(rest);
          }
        if (__all_sync(0xffffffffu, rests < __builtin_inff())) {
          products(a_big, a_big, a_small, b_big, b_big, b_small);
        } else {
          uint32_t a_cross[MT][4], b_cross[NT][2];
#pragma unroll
          for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int e = 0; e < 4; ++e) split(a[mt][e], a_big[mt][e], a_cross[mt][e], a_small[mt][e]);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) split(b[nt][e], b_big[nt][e], b_cross[nt][e], b_small[nt][e]);
          products(a_big, a_cross, a_small, b_big, b_cross, b_small);
        }
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[mt][nt][e] += slice[mt][nt][e];
    } else {
      // Two fp16 parts (split_b_f16x2_kernel, below): B's came split, A's rows are scaled
      // per slice so that their largest magnitude lies in [2^14, 2^15), then split as B's:
      // by each warp for its rows.
      float slice[MT][NT][4] = {};
      // The slice's products from A's parts (cross: the big parts that meet B's small ones).
      const auto products = [&](const uint32_t(&a_big)[MT][2][4], const uint32_t(&a_cross)[MT][2][4],
                                const uint32_t(&a_small)[MT][2][4]) {
#pragma unroll
        for (int s2 = 0; s2 < 2; ++s2) {
          // B's fragments: row g of each 8-row tile, words 16 s + 2t (the big parts of k =
          // 2t, 2t + 1 and 2t + 8, 2t + 9) and 16 s + 8 + 2t (their small parts).
          uint32_t b_big[NT][2], b_small[NT][2];
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            const auto* r =
                reinterpret_cast<const uint32_t*>(bs + (nt * 8 + g) * kRowFloats + 16 * s2 + 2 * t);
            const uint2 big = *reinterpret_cast<const uint2*>(r);
            const uint2 small = *reinterpret_cast<const uint2*>(r + 8);
            b_big[nt][0] = big.x;
            b_big[nt][1] = big.y;
            b_small[nt][0] = small.x;
            b_small[nt][1] = small.y;
          }
          // The small terms first, each product over all tiles before the next (as above).
#pragma unroll
          for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) mma_f16(slice[mt][nt], a_small[mt][s2], b_big[nt]);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) mma_f16(slice[mt][nt], a_cross[mt][s2], b_small[nt]);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) mma_f16(slice[mt][nt], a_big[mt][s2], b_big[nt]);
        }
      };
      float unscale[MT][2];
      // The fragments of both 16-deep steps: a[mt][h][s][j] holds row g + 8 h of tile mt,
      // columns 16 s + 8 j + 2t and + 1 (the m16n8k16 A fragment's, in k's own order).
      float2 a[MT][2][2][2];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int s2 = 0; s2 < 2; ++s2)
#pragma unroll
            for (int j = 0; j < 2; ++j)
              a[mt][h][s2][j] = *reinterpret_cast<const float2*>(as + (mt * 16 + g + 8 * h) * kRowFloats +
                                                                 16 * s2 + 8 * j + 2 * t);
      // Each row's largest magnitude over the slice (its 32 values lie in the 4 threads of a
      // quad; split_rows_f16x2 combines them), as bits: nonnegative floats order as their
      // bits do. `magnitude` maps a value to the value whose magnitude counts.
      uint32_t top[MT][2];
      const auto row_tops = [&](auto magnitude) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            float m = 0.0f;
#pragma unroll
            for (int s2 = 0; s2 < 2; ++s2)
#pragma unroll
              for (int j = 0; j < 2; ++j)
                m = fmaxf(m, fmaxf(fabsf(magnitude(a[mt][h][s2][j].x)), fabsf(magnitude(a[mt][h][s2][j].y))));
            top[mt][h] = __float_as_uint(m);
          }
      };
      // (fmaxf skips NaNs: a row with one goes the fast way, and its results are NaNs either
      // way; an infinity is a largest magnitude past float32's finite ones.)
      row_tops([](float x) { return x; });
      if (__all_sync(0xffffffffu, max_of(top) < 0x7f800000u)) {
        uint32_t a_big[MT][2][4], a_small[MT][2][4];
        split_rows_f16x2<MT, false>(a, top, a_big, a_big, a_small, unscale);
        products(a_big, a_big, a_small);
      } else {
        // Infinities and NaNs: the scale from the finite values; a non-finite value is its
        // own big part, with 0 as small part and as the big part that meets B's small parts
        // (an infinity times a zero small part would be a NaN that float32 has not).
        row_tops([](float x) { return __uint_as_float(finite_magnitude(x)); });
        uint32_t a_big[MT][2][4], a_cross[MT][2][4], a_small[MT][2][4];
        split_rows_f16x2<MT, true>(a, top, a_big, a_cross, a_small, unscale);
        products(a_big, a_cross, a_small);
      }
      // The slice unscaled by its rows' factors (powers of two: exact) into the sums.
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            acc[mt][nt][e] = fmaf(slice[mt][nt][e], unscale[mt][e / 2], acc[mt][nt][e]);
    }
  }
  cp_async_wait<0>();
  store_tile<BM, BN, WarpsM, WarpsN, Cluster>(p, acc, smem, m0, n0, part);
}

// ---- The tf32 implicit convolution on Hopper's warpgroup MMA (wgmma, sm_90a) ----
//
// The mma.sync loop above reaches 73-80 TFLOP/s on resnet50's 3x3 layers at batch 32, so
// the later stages stayed on im2col + cuBLASLt (bench/results_gpu.md). Here the tf32
// product (one per step, no split) runs on wgmma, which reads both operands from shared
// memory and runs asynchronously. A block is one warpgroup (128 threads) computing BM x BN
// of C, BM = 64 or 128 (one or two m64 products per step):
// - Each 32-deep slice of A (output pixels gathered from the NHWC input, one tap's 32
//   channels per slice, as in the mma.sync loop) and of B is copied by cp.async straight
//   into the tiles wgmma reads: rows of 128 bytes, 16-byte chunks swizzled by the row
//   (chunk c of row r at c ^ (r % 8)), 8 rows a 1024-byte atom; kWgStages slices in flight.
// - A's rows are stored so that the accumulators of warp w hold rows 32 w .. 32 w + 31 of
//   the block (as store_tile expects; rows 16 w + 64 i of product i otherwise).
// - The products of a slice are issued, then the block waits for the slice before's and
//   refills its stage: copies, products and the wait overlap.
// - A is not rounded (that would be a pass over each staged slice): wgmma reads its float32
//   values as tf32, dropping the 13 low bits; B was rounded at compile time. Measured on
//   bench/cuda/implicit_conv_check.cu's shapes: worst 4.2e-4 relative to cuBLAS float32,
//   as the mma.sync loop that rounds A. CUDA's NaN (0x7fffffff) stays a NaN; a NaN whose
//   payload lies only in the dropped bits would read as an infinity.
// Only on sm_90 (wgmma exists on sm_90a alone): this file is built for sm_90a
// (runtime/cuda/build_cuda_runtime.py), the configs are offered only on a device of compute
// capability 9.0 (implicit_conv_nhwc_supported), and elsewhere the kernel traps.
constexpr int kWgThreads = 128;  // one warpgroup
constexpr int kWgStages = 4;

template <int BM, int BN>
struct WgLayout {  // a stage in bytes, from a 1024-byte aligned base: A's tile, then B's
  static constexpr int kATile = BM * kBK * 4;
  static constexpr int kStage = kATile + BN * kBK * 4;
  static constexpr int kBytes = kWgStages * kStage;
  static_assert((BN * kBK * 4) % 1024 == 0 && kATile % 1024 == 0);
  static_assert(BM * (BN + 8) * 4 <= kBytes);  // room for store_tile's sums
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // (unused elsewhere)
// The matrix descriptor of a K-major tile with the 128-byte swizzle: start address, leading
// byte offset 16 (unused with this swizzle), 1024 bytes from one 8-row atom to the next.
__device__ __forceinline__ uint64_t wg_descriptor(uint32_t smem_address) {
  return static_cast<uint64_t>((smem_address & 0x3ffff) >> 4) | (uint64_t{16 >> 4} << 16) |
         (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}

// d = a b^T (+ d where accumulate), for 64 x 8 of A and BN x 8 of B.
template <int BN>
__device__ __forceinline__ void wgmma_tf32(float (&d)[BN / 2], uint64_t a, uint64_t b, bool accumulate);
template <>
__device__ __forceinline__ void wgmma_tf32<64>(float (&d)[32], uint64_t a, uint64_t b, bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
        "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
        "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}
template <>
__device__ __forceinline__ void wgmma_tf32<128>(float (&d)[64], uint64_t a, uint64_t b, bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
        "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
        "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
        "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
        "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),
        "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]),
        "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

// The registers that wgmma writes asynchronously, fenced for the compiler (the asm
// statements above write them when issued, as far as it knows).
template <int N>
__device__ __forceinline__ void wg_fence_registers(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
#endif

template <int BM, int BN, bool Cluster>
__global__ void __launch_bounds__(kWgThreads) implicit_conv_wgmma_kernel(Args p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using L = WgLayout<BM, BN>;
  constexpr int kProducts = BM / 64;  // per step
  static_assert(kProducts == 1 || kProducts == 2);
  extern __shared__ float4 smem4[];
  // The swizzle is of address bits: the tiles start on 1024 bytes (kBytes + 1024 launched).
  const uint32_t raw_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem4));
  const uint32_t base = (raw_base + 1023) & ~1023u;
  char* const smem = reinterpret_cast<char*>(smem4) + (base - raw_base);

  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * BM, n0 = static_cast<int64_t>(blockIdx.x) * BN;
  const int part = blockIdx.z;
  const PartK range = part_k(p, part);
  const int64_t k_begin = range.begin, k_end = range.end;
  const int k_tiles = range.tiles;

  // A thread copies the same column of chunks (its index % 8) in rows kRowStep apart: A's row
  // first_row + kRowStep j (gather_row) and B's.
  constexpr int kRowStep = kWgThreads / 8;
  constexpr int kChunksA = BM / kRowStep, kChunksB = BN / kRowStep;
  const int first_row = threadIdx.x / 8, chunk = threadIdx.x % 8;
  const float* src[kChunksA + kChunksB];
  int iy0[kChunksA], ix0[kChunksA];
  uint32_t dst[kChunksA + kChunksB];  // offsets in a stage
#pragma unroll
  for (int j = 0; j < kChunksA; ++j) {
    src[j] = gather_row(p, m0 + first_row + j * kRowStep, chunk, iy0[j], ix0[j]);
    // Block row first_row + 16 j: product j % kProducts, its row 16 (j / kProducts) +
    // first_row, so that warp w's accumulators are the block's rows 32 w .. 32 w + 31 (with
    // two products).
    const int row = (j / kProducts) * kRowStep + first_row;
    dst[j] = (j % kProducts) * 64 * 128 + row * 128 + ((chunk ^ (row % 8)) << 4);
  }
#pragma unroll
  for (int j = 0; j < kChunksB; ++j) {
    const int64_t gr = n0 + first_row + j * kRowStep;
    src[kChunksA + j] = gr < p.n ? p.b + gr * p.ldb + k_begin + chunk * 4 : nullptr;
    const int row = first_row + j * kRowStep;
    dst[kChunksA + j] = L::kATile + row * 128 + ((chunk ^ (row % 8)) << 4);
  }
  auto load = [&](int tile) {
    const int k0 = tile * kBK;
    const bool k_in = k_begin + chunk * 4 + k0 < k_end;
    char* const stage = smem + (tile % kWgStages) * L::kStage;
    int dy, dx;
    const int64_t shift = gather_slice(p, static_cast<int>(k_begin) + k0, dy, dx);
#pragma unroll
    for (int j = 0; j < kChunksA; ++j) {
      const bool valid = k_in && gather_inside(p, iy0[j], ix0[j], dy, dx);
      cp_async16(stage + dst[j], valid ? src[j] + shift : p.a, valid);
    }
#pragma unroll
    for (int j = kChunksA; j < kChunksA + kChunksB; ++j) {
      const bool valid = k_in && src[j] != nullptr;
      cp_async16(stage + dst[j], valid ? src[j] + k0 : p.b, valid);
    }
  };

  float acc[kProducts][BN / 2];
  for (int s = 0; s < kWgStages - 1; ++s) {
    if (s < k_tiles) load(s);
    cp_async_commit();
  }
  for (int tile = 0; tile < k_tiles; ++tile) {
    cp_async_wait<kWgStages - 2>();
    // The slice's copies made visible to wgmma (the async proxy), then to the whole block;
    // every thread has also waited for the products of the slice before the last, whose
    // stage the next copies refill.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (tile + kWgStages - 1 < k_tiles) load(tile + kWgStages - 1);
    cp_async_commit();
    const uint32_t a_tile = base + (tile % kWgStages) * L::kStage, b_tile = a_tile + L::kATile;
#pragma unroll
    for (int i = 0; i < kProducts; ++i) wg_fence_registers(acc[i]);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int step = 0; step < kBK / 8; ++step)
#pragma unroll
      for (int i = 0; i < kProducts; ++i)
        wgmma_tf32<BN>(acc[i], wg_descriptor(a_tile + i * 64 * 128 + step * 32),
                       wg_descriptor(b_tile + step * 32), tile > 0 || step > 0);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  cp_async_wait<0>();
  // acc[i]: product i's columns 8 nt + 2 t (+ 1) of rows g and g + 8 of the warp's 16.
  float out[kProducts][BN / 8][4];
#pragma unroll
  for (int i = 0; i < kProducts; ++i) {
    wg_fence_registers(acc[i]);
#pragma unroll
    for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) out[i][nt][e] = acc[i][nt * 4 + e];
  }
  store_tile<BM, BN, 4, 1, Cluster>(p, out, reinterpret_cast<float*>(smem), m0, n0, part);
#else
  __trap();    // offered only on compute capability 9.0 (implicit_conv_nhwc_supported)
#endif
}

// The parts' sums added in order, then the epilogue.
__global__ void sum_parts_kernel(Args p) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= p.m * p.n) return;
  float sum = p.partial[i];
  for (int part = 1; part < p.parts; ++part) sum += p.partial[part * p.m * p.n + i];
  const int64_t row = i / p.n, col = i % p.n;
  p.c[row * p.ldc + col] = epilogue(p, row, col, sum);
}

// B (n x k, rows ldb apart) split for gemm_f16x2, a block per row: the row's factor from its
// largest magnitude, then per 16-deep block of k 16 words: words 2t and 2t + 1 the big
// parts of k = 2t, 2t + 1 and 2t + 8, 2t + 9 (t < 4), words 8 + 2t and 9 + 2t their small
// parts, as the loop reads them (one 64-bit load each); zeros past k up to kp (a multiple
// of kBK). Then each row's inverse factor (n floats). A row with an infinity or a NaN sets
// *non_finite (the split has no room for their cross parts: such weights stay on the other
// GEMMs).
__global__ void split_b_f16x2_kernel(int64_t k, const float* b, int64_t ldb, int64_t kp, uint32_t* split,
                                     float* unscale, int* non_finite) {
  const int64_t row = blockIdx.x;
  const float* src = b + row * ldb;
  uint32_t top = 0;
  bool finite = true;
  for (int64_t i = threadIdx.x; i < k; i += blockDim.x) {
    top = max(top, finite_magnitude(src[i]));
    finite = finite && isfinite(src[i]);
  }
  __shared__ uint32_t tops[32];
  top = max(top, __shfl_xor_sync(0xffffffffu, top, 16));
  top = max(top, __shfl_xor_sync(0xffffffffu, top, 8));
  top = max(top, __shfl_xor_sync(0xffffffffu, top, 4));
  top = max(top, __shfl_xor_sync(0xffffffffu, top, 2));
  top = max(top, __shfl_xor_sync(0xffffffffu, top, 1));
  if (threadIdx.x % 32 == 0) tops[threadIdx.x / 32] = top;
  if (__syncthreads_or(!finite) && threadIdx.x == 0) atomicOr(non_finite, 1);
  top = 0;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) top = max(top, tops[w]);
  const int field = f16x2_scale_field(top);
  const float scale = __uint_as_float(static_cast<uint32_t>(field) << 23);
  if (threadIdx.x == 0) unscale[row] = __uint_as_float(static_cast<uint32_t>(254 - field) << 23);
  // A thread per pair of words (big and small of one k pair).
  for (int64_t i = threadIdx.x; i < kp / 2; i += blockDim.x) {
    const int64_t block16 = i / 8, q = i % 8;  // q = 2t + j: k = 16 block16 + 8 j + 2t
    const int64_t kk = block16 * 16 + 8 * (q % 2) + 2 * (q / 2);
    const float2 v = make_float2(kk < k ? src[kk] : 0.0f, kk + 1 < k ? src[kk + 1] : 0.0f);
    uint32_t big, cross, small;
    split_pair_f16x2<false>(v, scale, big, cross, small);
    keep_tiny_f16x2(v, big, small);
    split[row * kp + block16 * 16 + q] = big;
    split[row * kp + block16 * 16 + 8 + q] = small;
  }
}

// One launch: with k in parts and a cluster, the parts of a tile as one cluster
// (sum_parts_kernel not needed).
void launch_parts(void (*cluster_kernel)(Args), void (*plain_kernel)(Args), dim3 grid, int threads, int smem,
                  cudaStream_t stream, const Args& args, int parts, bool cluster) {
  auto* kernel = cluster && parts > 1 ? cluster_kernel : plain_kernel;
  // Set on every call (cheap). The limit belongs to the function; its value here is the
  // same for every context, so contexts created at once cannot lower it for each other.
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (cluster && parts > 1) {
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = 1;
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = static_cast<unsigned>(parts);
    config.attrs = &attribute;
    config.numAttrs = 1;
    cudaLaunchKernelEx(&config, kernel, args);
    return;
  }
  kernel<<<grid, threads, smem, stream>>>(args);
}

dim3 grid_of(const Args& args, int bm, int bn, int parts) {
  return dim3(static_cast<unsigned>((args.n + bn - 1) / bn), static_cast<unsigned>((args.m + bm - 1) / bm),
              static_cast<unsigned>(parts));
}

template <int BM, int BN, int WarpsM, int WarpsN, Product Kind, bool Gather>
void launch(cudaStream_t stream, const Args& args, int parts, bool cluster) {
  constexpr int kSmem = kStages * (BM + BN) * kRowFloats * static_cast<int>(sizeof(float));
  launch_parts(gemm_3xtf32_kernel<BM, BN, WarpsM, WarpsN, true, Kind, Gather>,
               gemm_3xtf32_kernel<BM, BN, WarpsM, WarpsN, false, Kind, Gather>, grid_of(args, BM, BN, parts),
               WarpsM * WarpsN * 32, kSmem, stream, args, parts, cluster);
}

template <int BM, int BN>
void launch_wgmma(cudaStream_t stream, const Args& args, int parts, bool cluster) {
  constexpr int kSmem = WgLayout<BM, BN>::kBytes + 1024;  // and the alignment of the base
  launch_parts(implicit_conv_wgmma_kernel<BM, BN, true>, implicit_conv_wgmma_kernel<BM, BN, false>,
               grid_of(args, BM, BN, parts), kWgThreads, kSmem, stream, args, parts, cluster);
}
// The tiles: block rows and columns, warps along each. With the three products every warp
// computes 32 x 32 of C: for the float32 linear layers 64 x 32 and 32 x 64 warp tiles
// (tried: 64 x 64 / 1 x 2, 128 x 64 / 2 x 2, 64 x 128 / 2 x 2, 128 x 128 / 2 x 4) were never
// the fastest at 128-197 rows (bench/results_gpu.md). The tf32 convolutions have tens of
// thousands of rows at batch 32 and no split registers: larger blocks, and 32 x 64 warp
// tiles besides 32 x 32.
// wgmma: the warpgroup kernel's (the tf32 convolution's last three tiles; two-warpgroup
// tiles of 256 x 64, 256 x 128 and 128 x 256 were measured and not kept: within 5% of these
// on resnet50's layers at batch 32, and stage 4 still faster through im2col).
struct Tile {
  int bm, bn, warps_m, warps_n;
  void (*launch)(cudaStream_t, const Args&, int, bool);
  bool wgmma = false;
};
#define AOTC_TILE(bm, bn, wm, wn, kind, gather) \
  { bm, bn, wm, wn, launch<bm, bn, wm, wn, Product::kind, gather> }
#define AOTC_WGMMA_TILE(bm, bn) \
  { bm, bn, 4, 1, launch_wgmma<bm, bn>, true }
const Tile kTiles[] = {AOTC_TILE(64, 64, 2, 2, ThreeTf32, false), AOTC_TILE(32, 64, 1, 2, ThreeTf32, false),
                       AOTC_TILE(32, 128, 1, 4, ThreeTf32, false),
                       AOTC_TILE(128, 64, 4, 2, ThreeTf32, false)};
// The fp16 parts: also warp tiles of 16 x 64 (fewer rows wasted past m = 197, and A's split,
// which every warp along n repeats, shared by twice the products).
const Tile kTilesF16x2[] = {AOTC_TILE(64, 64, 2, 2, TwoF16, false),  AOTC_TILE(32, 64, 1, 2, TwoF16, false),
                            AOTC_TILE(32, 128, 1, 4, TwoF16, false), AOTC_TILE(128, 64, 4, 2, TwoF16, false),
                            AOTC_TILE(16, 128, 1, 2, TwoF16, false), AOTC_TILE(16, 256, 1, 4, TwoF16, false),
                            AOTC_TILE(32, 128, 2, 2, TwoF16, false), AOTC_TILE(64, 128, 4, 2, TwoF16, false),
                            AOTC_TILE(16, 64, 1, 1, TwoF16, false),  AOTC_TILE(32, 64, 2, 1, TwoF16, false),
                            AOTC_TILE(32, 256, 2, 4, TwoF16, false)};
const Tile kConvTiles3x[] = {
    AOTC_TILE(64, 64, 2, 2, ThreeTf32, true), AOTC_TILE(32, 64, 1, 2, ThreeTf32, true),
    AOTC_TILE(32, 128, 1, 4, ThreeTf32, true), AOTC_TILE(128, 64, 4, 2, ThreeTf32, true)};
// One product a step leaves registers for 32 x 64 warp tiles, which round A's fragments
// (the instructions besides the mma) once for twice the products.
const Tile kConvTilesTf32[] = {AOTC_TILE(64, 64, 2, 2, OneTf32, true),
                               AOTC_TILE(128, 64, 4, 2, OneTf32, true),
                               AOTC_TILE(128, 64, 4, 1, OneTf32, true),
                               AOTC_TILE(128, 128, 4, 2, OneTf32, true),
                               AOTC_TILE(64, 128, 2, 2, OneTf32, true),
                               AOTC_WGMMA_TILE(128, 128),
                               AOTC_WGMMA_TILE(128, 64),
                               AOTC_WGMMA_TILE(64, 128)};
#undef AOTC_TILE
#undef AOTC_WGMMA_TILE
constexpr int kParts[] = {1, 2, 3, 4, 6, 8};  // at most 8: a portable cluster size
constexpr int kTileCount = sizeof kTiles / sizeof kTiles[0];
constexpr int kPartCount = sizeof kParts / sizeof kParts[0];
constexpr int kF16x2TileCount = sizeof kTilesF16x2 / sizeof kTilesF16x2[0];
constexpr int kConv3xTileCount = sizeof kConvTiles3x / sizeof kConvTiles3x[0];
constexpr int kConvTf32TileCount = sizeof kConvTilesTf32 / sizeof kConvTilesTf32[0];

// Whether the parts of a tile add their sums as a cluster: on sm_90 and later, unless
// AOTC_CUDA_3XTF32_NO_CLUSTER=1 (for comparisons; read when a GEMM is planned).
bool sums_in_clusters() {
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return major >= 9 && !std::getenv("AOTC_CUDA_3XTF32_NO_CLUSTER");
}

// Whether the warpgroup kernel runs here: built for sm_90a (build_cuda_runtime.py), on a
// device of compute capability 9.0, unless AOTC_CUDA_NO_WGMMA=1 (for comparisons; read when
// a convolution is planned).
bool wgmma_runs() {
#ifndef AOTC_WGMMA_BUILT  // (the runtime built without sm_90 among its architectures)
  return false;
#endif
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return major == 9 && minor == 0 && !std::getenv("AOTC_CUDA_NO_WGMMA");
}

bool aligned16(const float* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

size_t workspace_bytes(const GemmParams& p, int config) {
  const int parts = kParts[config % kPartCount];
  return parts > 1 && !sums_in_clusters() ? static_cast<size_t>(parts) * p.m * p.n * sizeof(float) : 0;
}

// What every config needs: B's rows in 16-byte chunks, sizes in 32 bits, enough slices of
// k for the parts, and few enough row tiles for the grid.
bool fits(const GemmParams& p, const float* b, const Tile* tiles, int config) {
  const int parts = kParts[config % kPartCount];
  const int bm = tiles[config / kPartCount].bm;
  return p.trans_b && p.m > 0 && p.n > 0 && p.k > 0 && p.k % 4 == 0 && p.ldb % 4 == 0 && aligned16(b) &&
         p.m <= INT32_MAX && p.n <= INT32_MAX && (p.k + kBK - 1) / kBK >= parts &&
         (p.m + bm - 1) / bm <= 65535;
}

// The product through `tile`, k split into the config's parts.
void run(cudaStream_t stream, const Tile& tile, const GemmParams& p, Args& args, const float* bias, float* c,
         int config, void* workspace) {
  const int parts = kParts[config % kPartCount];
  args.m = p.m;
  args.n = p.n;
  args.k = p.k;
  args.lda = p.lda;
  args.ldb = p.ldb;
  const int64_t k_tiles = (p.k + kBK - 1) / kBK;
  args.k_per_part = (k_tiles + parts - 1) / parts * kBK;
  // Fewer parts than asked when the tiles do not divide (no part may be empty).
  const int used_parts = static_cast<int>((p.k + args.k_per_part - 1) / args.k_per_part);
  args.alpha = p.alpha;
  args.beta = p.beta;
  args.clamp_lo = p.clamp_lo;
  args.clamp_hi = p.clamp_hi;
  args.bias_kind = bias ? p.bias_kind : BiasKind::None;
  args.activation = p.activation;
  args.bias = bias;
  args.residual = p.residual;
  args.ldr = p.ldr;
  args.c = c;
  args.ldc = p.ldc;
  args.partial = static_cast<float*>(workspace);
  args.parts = used_parts;
  const bool cluster = used_parts > 1 && sums_in_clusters();
  tile.launch(stream, args, used_parts, cluster);
  check_launch("gemm_3xtf32");
  if (used_parts > 1 && !cluster) {
    sum_parts_kernel<<<blocks_for(p.m * p.n), kThreads, 0, stream>>>(args);
    check_launch("gemm_3xtf32 (sum of parts)");
  }
}

}  // namespace

int gemm_3xtf32_configs() { return kTileCount * kPartCount; }

size_t gemm_3xtf32_workspace_bytes(const GemmParams& p, int config) { return workspace_bytes(p, config); }

bool gemm_3xtf32_supported(const GemmParams& p, const float* a, const float* b, int config) {
  if (config < 0 || config >= gemm_3xtf32_configs()) return false;
  // Sixteen-byte loads along k: k, the row strides and the operands' starts in fours.
  return !p.trans_a && p.lda % 4 == 0 && aligned16(a) && fits(p, b, kTiles, config);
}

void gemm_3xtf32(cudaStream_t stream, const GemmParams& p, const float* a, const float* b, const float* bias,
                 float* c, int config, void* workspace) {
  Args args{};
  args.a = a;
  args.b = b;
  run(stream, kTiles[config / kPartCount], p, args, bias, c, config, workspace);
}

int gemm_f16x2_configs() { return kF16x2TileCount * kPartCount; }

namespace {
// Words from one row of B's split to the next: k rounded up to whole slices.
int64_t gemm_f16x2_split_stride(int64_t k) { return (k + kBK - 1) / kBK * kBK; }
}  // namespace

size_t gemm_f16x2_split_bytes(int64_t n, int64_t k) {
  return static_cast<size_t>(n) * (gemm_f16x2_split_stride(k) + 1) * sizeof(float);
}

void gemm_f16x2_split_b(cudaStream_t stream, int64_t n, int64_t k, const float* b, int64_t ldb, void* split,
                        int* non_finite) {
  const int64_t kp = gemm_f16x2_split_stride(k);
  auto* words = static_cast<uint32_t*>(split);
  split_b_f16x2_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(
      k, b, ldb, kp, words, reinterpret_cast<float*>(words + n * kp), non_finite);
  check_launch("gemm_f16x2 (split of B)");
}

size_t gemm_f16x2_workspace_bytes(const GemmParams& p, int config) { return workspace_bytes(p, config); }

namespace {
// p with B's split rows (gemm_f16x2_split_stride(k) words apart) for B.
GemmParams with_split_rows(const GemmParams& p) {
  GemmParams q = p;
  q.ldb = gemm_f16x2_split_stride(p.k);
  return q;
}
}  // namespace

bool gemm_f16x2_supported(const GemmParams& p, const float* a, const void* split_b, int config) {
  if (config < 0 || config >= gemm_f16x2_configs()) return false;
  return !p.trans_a && p.lda % 4 == 0 && aligned16(a) &&
         fits(with_split_rows(p), static_cast<const float*>(split_b), kTilesF16x2, config);
}

void gemm_f16x2(cudaStream_t stream, const GemmParams& p, const float* a, const void* split_b,
                const float* bias, float* c, int config, void* workspace) {
  const GemmParams q = with_split_rows(p);
  Args args{};
  args.a = a;
  args.b = static_cast<const float*>(split_b);
  args.col_scale = args.b + p.n * q.ldb;
  run(stream, kTilesF16x2[config / kPartCount], q, args, bias, c, config, workspace);
}

int implicit_conv_nhwc_configs(Precision precision) {
  return precision == Precision::Fp32   ? kConv3xTileCount * kPartCount
         : precision == Precision::Tf32 ? kConvTf32TileCount * kPartCount
                                        : 0;
}

size_t implicit_conv_nhwc_workspace_bytes(const GemmParams& p, int config) {
  return workspace_bytes(p, config);
}

bool implicit_conv_nhwc_supported(const Conv2dParams& conv, const GemmParams& p, Precision precision,
                                  const float* x, const float* w, int config) {
  if (config < 0 || config >= implicit_conv_nhwc_configs(precision)) return false;
  const int64_t taps = conv.kernel_h * conv.kernel_w;
  const auto int32 = [](int64_t v) { return v > 0 && v <= (1 << 28); };  // room for index sums
  return conv.groups == 1 && conv.c_in % kBK == 0 && p.m == conv.n * conv.h_out * conv.w_out &&
         p.n == conv.c_out && p.k == taps * conv.c_in && !p.trans_a && aligned16(x) && int32(conv.h_in) &&
         int32(conv.w_in) && int32(conv.c_in) && int32(conv.h_out * conv.w_out) && int32(conv.stride_h) &&
         int32(conv.stride_w) && int32(conv.dilation_h * conv.kernel_h) &&
         int32(conv.dilation_w * conv.kernel_w) && conv.pad_h >= 0 && conv.pad_h < (1 << 28) &&
         conv.pad_w >= 0 && conv.pad_w < (1 << 28) &&
         fits(p, w, precision == Precision::Tf32 ? kConvTilesTf32 : kConvTiles3x, config) &&
         (precision != Precision::Tf32 || !kConvTilesTf32[config / kPartCount].wgmma || wgmma_runs());
}

void implicit_conv_nhwc(cudaStream_t stream, Precision precision, const Conv2dParams& conv,
                        const GemmParams& p, const float* x, const float* w, const float* bias, float* c,
                        int config, void* workspace) {
  Args args{};
  args.a = x;
  args.b = w;
  args.h_in = static_cast<int>(conv.h_in);
  args.w_in = static_cast<int>(conv.w_in);
  args.c_in = static_cast<int>(conv.c_in);
  args.h_out = static_cast<int>(conv.h_out);
  args.w_out = static_cast<int>(conv.w_out);
  args.kernel_w = static_cast<int>(conv.kernel_w);
  args.stride_h = static_cast<int>(conv.stride_h);
  args.stride_w = static_cast<int>(conv.stride_w);
  args.pad_h = static_cast<int>(conv.pad_h);
  args.pad_w = static_cast<int>(conv.pad_w);
  args.dilation_h = static_cast<int>(conv.dilation_h);
  args.dilation_w = static_cast<int>(conv.dilation_w);
  const Tile* tiles = precision == Precision::Tf32 ? kConvTilesTf32 : kConvTiles3x;
  run(stream, tiles[config / kPartCount], p, args, bias, c, config, workspace);
}

}  // namespace aotc::rt::cuda
