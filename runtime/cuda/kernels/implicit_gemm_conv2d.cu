// implicit_gemm_conv2d.cu - an ungrouped 2-d convolution as one implicit GEMM on tensor
// cores (WMMA), for --precision tf32, fp16 and bf16.
//
// C (c_out x n * h_out * w_out) = W (c_out x K) X' (K x n * h_out * w_out), K = c_in * kh *
// kw, where X' is the unfolded input: a block gathers its tile of X' from the input as it
// goes, so there is no im2col pass and no unfolded copy in memory, and it adds the bias and
// the residual and clamps as it writes C in NCHW, so there is no epilogue pass either. The
// im2col + cuBLAS path does both as separate passes over memory, which at batch 32 cost more
// than the products (bench/results_gpu.md).
//
// Blocks of 128 threads (4 warps, 2 x 2, each 32 x 32 of the 64 x 64 tile) step through K 32
// at a time: the next step's operands are loaded into registers while the tensor cores work
// on this one's in shared memory. Weights come in the precision's type (16-bit ones were
// converted at compile time); the float32 input is rounded to it as it is staged. With a
// split K (conv2d_plan.h: too few tiles to fill the GPU) each split writes its partial
// sums to scratch and a second kernel adds them up, in a fixed order (reproducible), and
// applies the epilogue.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

namespace aotc::rt::cuda {
namespace {

using namespace nvcuda;

constexpr int kBM = static_cast<int>(kImplicitTileM);
constexpr int kBN = static_cast<int>(kImplicitTileN);
constexpr int kBK = static_cast<int>(kImplicitTileK);
constexpr int kBlock = 128;
// Row padding of the shared tiles, in elements: keeps every fragment pointer 32-byte
// aligned (as WMMA requires) and moves rows off the same banks.
constexpr int kLdA = kBK + 8;
constexpr int kLdB = kBN + 8;
constexpr int kLdC = kBN + 4;
constexpr int kALoads = kBM * kBK / kBlock;  // 16 weights per thread per step
constexpr int kBLoads = kBK * kBN / kBlock;  // 16 input values per thread per step
static_assert(kBM == 64 && kBN == 64 && kBK == 32, "the thread mapping below assumes 64 x 64 x 32 tiles");

// Per precision: the type in shared memory (and of the fragments), of the weights, the
// WMMA depth, and the rounding of a float32 input value.
template <Precision P>
struct Math;
template <>
struct Math<Precision::Tf32> {
  using Smem = float;
  using Frag = wmma::precision::tf32;
  using Weight = float;
  static constexpr int kK = 8;
  __device__ static float from_float(float v) { return wmma::__float_to_tf32(v); }
  __device__ static float from_weight(float v) { return wmma::__float_to_tf32(v); }
  __device__ static float zero_weight() { return 0.0f; }
};
template <>
struct Math<Precision::Fp16> {
  using Smem = __half;
  using Frag = __half;
  using Weight = __half;
  static constexpr int kK = 16;
  __device__ static __half from_float(float v) { return __float2half_rn(v); }
  __device__ static __half from_weight(__half v) { return v; }
  __device__ static __half zero_weight() { return __float2half_rn(0.0f); }
};
template <>
struct Math<Precision::Bf16> {
  using Smem = __nv_bfloat16;
  using Frag = __nv_bfloat16;
  using Weight = __nv_bfloat16;
  static constexpr int kK = 16;
  __device__ static __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
  __device__ static __nv_bfloat16 from_weight(__nv_bfloat16 v) { return v; }
  __device__ static __nv_bfloat16 zero_weight() { return __float2bfloat16_rn(0.0f); }
};

// The convolution's geometry in 32-bit integers (implicit_gemm_fits checked the sizes).
struct Geometry {
  int m, n, k;  // the GEMM: c_out, images * h_out * w_out, c_in * kh * kw
  int h_in, w_in, hw_out, w_out, khw, kw;
  int stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  int in_image, out_image;  // elements of one input image, one output image
  int k_tiles_per_split;
};

__device__ __forceinline__ float epilogue(float v, int row, int64_t at, const float* __restrict__ bias,
                                          const float* __restrict__ residual, float lo, float hi) {
  if (bias) v += bias[row];
  if (residual) v += residual[at];
  return fminf(fmaxf(v, lo), hi);
}

template <Precision P>
__global__ void __launch_bounds__(kBlock)
    implicit_gemm_kernel(Geometry g, const float* __restrict__ x,
                         const typename Math<P>::Weight* __restrict__ w, const float* __restrict__ bias,
                         const float* __restrict__ residual, float lo, float hi, float* __restrict__ y,
                         float* __restrict__ partial) {
  using M = Math<P>;
  using S = typename M::Smem;
  using Weight = typename M::Weight;
  constexpr int kABytes = kBM * kLdA * static_cast<int>(sizeof(S));
  constexpr int kBBytes = kBK * kLdB * static_cast<int>(sizeof(S));
  constexpr int kCBytes = kBM * kLdC * static_cast<int>(sizeof(float));
  constexpr int kSmem = kABytes + kBBytes > kCBytes ? kABytes + kBBytes : kCBytes;
  __shared__ __align__(128) unsigned char smem[kSmem];
  S* const as = reinterpret_cast<S*>(smem);
  S* const bs = reinterpret_cast<S*>(smem + kABytes);

  const int tid = threadIdx.x;
  const int m0 = blockIdx.y * kBM;
  const int n0 = blockIdx.x * kBN;

  // This thread's weights: column a_col of the K tile, rows a_row + 4 i.
  const int a_col = tid % kBK;
  const int a_row = tid / kBK;
  // This thread's input values: column b_col of the tile (one output pixel of one image),
  // K rows b_row + 2 i. Where the pixel's window starts in the input:
  const int b_col = tid % kBN;
  const int b_row = tid / kBN;
  const int col = n0 + b_col;
  const bool col_ok = col < g.n;
  const int image = col_ok ? col / g.hw_out : 0;
  const int pixel = col - image * g.hw_out;
  const int oh = pixel / g.w_out;
  const int ih0 = oh * g.stride_h - g.pad_h;
  const int iw0 = (pixel - oh * g.w_out) * g.stride_w - g.pad_w;
  const float* const x_image = x + static_cast<int64_t>(image) * g.in_image;

  Weight ra[kALoads];
  float rb[kBLoads];
  auto load = [&](int tile) {
    const int k0 = tile * kBK;
#pragma unroll
    for (int i = 0; i < kALoads; ++i) {
      const int row = m0 + a_row + 4 * i, kk = k0 + a_col;
      ra[i] = row < g.m && kk < g.k ? w[static_cast<int64_t>(row) * g.k + kk] : M::zero_weight();
    }
#pragma unroll
    for (int i = 0; i < kBLoads; ++i) {
      const int kk = k0 + b_row + 2 * i;
      float v = 0.0f;
      if (col_ok && kk < g.k) {
        int c = kk, r = 0, s = 0;
        if (g.khw != 1) {
          c = kk / g.khw;
          const int rs = kk - c * g.khw;
          r = rs / g.kw;
          s = rs - r * g.kw;
        }
        const int ih = ih0 + r * g.dil_h, iw = iw0 + s * g.dil_w;
        if (static_cast<unsigned>(ih) < static_cast<unsigned>(g.h_in) &&
            static_cast<unsigned>(iw) < static_cast<unsigned>(g.w_in))
          v = __ldg(x_image + (c * g.h_in + ih) * g.w_in + iw);
      }
      rb[i] = v;
    }
  };

  const int warp = tid / 32;
  const int warp_m = (warp / 2) * 32, warp_n = (warp % 2) * 32;
  wmma::fragment<wmma::accumulator, 16, 16, M::kK, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int k_tiles = (g.k + kBK - 1) / kBK;
  const int first = blockIdx.z * g.k_tiles_per_split;
  const int last = min(first + g.k_tiles_per_split, k_tiles);
  if (first < last) load(first);
  for (int tile = first; tile < last; ++tile) {
    __syncthreads();  // the previous step's fragments are read
#pragma unroll
    for (int i = 0; i < kALoads; ++i) as[(a_row + 4 * i) * kLdA + a_col] = M::from_weight(ra[i]);
#pragma unroll
    for (int i = 0; i < kBLoads; ++i) bs[(b_row + 2 * i) * kLdB + b_col] = M::from_float(rb[i]);
    __syncthreads();
    if (tile + 1 < last) load(tile + 1);  // in flight while the tensor cores work
#pragma unroll
    for (int kk = 0; kk < kBK; kk += M::kK) {
      wmma::fragment<wmma::matrix_a, 16, 16, M::kK, typename M::Frag, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, M::kK, typename M::Frag, wmma::row_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], as + (warp_m + 16 * i) * kLdA + kk, kLdA);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], bs + kk * kLdB + warp_n + 16 * j, kLdB);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
  }

  __syncthreads();  // the tiles' memory becomes the output tile
  float* const cs = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(cs + (warp_m + 16 * i) * kLdC + warp_n + 16 * j, acc[i][j], kLdC,
                              wmma::mem_row_major);
  __syncthreads();
  if (!col_ok) return;
  // Column b_col of the tile, rows b_row + 2 i: consecutive threads write consecutive
  // pixels of a channel plane.
  const int64_t out_base = static_cast<int64_t>(image) * g.out_image + pixel;
  for (int i = 0; i < kBM / 2; ++i) {
    const int r = b_row + 2 * i, row = m0 + r;
    if (row >= g.m) break;
    const float v = cs[r * kLdC + b_col];
    if (partial) {
      partial[(static_cast<int64_t>(blockIdx.z) * g.m + row) * g.n + col] = v;
    } else {
      const int64_t at = out_base + static_cast<int64_t>(row) * g.hw_out;
      y[at] = epilogue(v, row, at, bias, residual, lo, hi);
    }
  }
}

// Adds the splits' partial sums (split 0 first) and applies the epilogue.
__global__ void split_k_reduce_kernel(Geometry g, int splits, const float* __restrict__ partial,
                                      const float* __restrict__ bias, const float* __restrict__ residual,
                                      float lo, float hi, float* __restrict__ y) {
  const int64_t total = static_cast<int64_t>(g.m) * g.n;
  const int64_t plane = total;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int row = static_cast<int>(idx / g.n),
              col = static_cast<int>(idx - static_cast<int64_t>(row) * g.n);
    float v = 0.0f;
    for (int s = 0; s < splits; ++s) v += partial[s * plane + idx];
    const int image = col / g.hw_out, pixel = col - image * g.hw_out;
    const int64_t at =
        static_cast<int64_t>(image) * g.out_image + static_cast<int64_t>(row) * g.hw_out + pixel;
    y[at] = epilogue(v, row, at, bias, residual, lo, hi);
  }
}

}  // namespace

void implicit_gemm_conv2d(const Exec& ex, const Conv2dParams& p, Precision precision, const float* x,
                          const void* w, const float* bias, const float* residual, float* y, float* scratch) {
  if (!implicit_gemm_fits(p)) {
    note_error("implicit_gemm_conv2d", "the convolution does not fit the kernel's 32-bit indices");
    return;
  }
  const ImplicitGemmShape shape = implicit_gemm_shape(p);
  const int64_t splits = implicit_gemm_splits(p);
  const int64_t k_tiles = (shape.k + kBK - 1) / kBK;
  Geometry g;
  g.m = static_cast<int>(shape.m);
  g.n = static_cast<int>(shape.n);
  g.k = static_cast<int>(shape.k);
  g.h_in = static_cast<int>(p.h_in);
  g.w_in = static_cast<int>(p.w_in);
  g.hw_out = static_cast<int>(p.h_out * p.w_out);
  g.w_out = static_cast<int>(p.w_out);
  g.khw = static_cast<int>(p.kernel_h * p.kernel_w);
  g.kw = static_cast<int>(p.kernel_w);
  g.stride_h = static_cast<int>(p.stride_h);
  g.stride_w = static_cast<int>(p.stride_w);
  g.pad_h = static_cast<int>(p.pad_h);
  g.pad_w = static_cast<int>(p.pad_w);
  g.dil_h = static_cast<int>(p.dilation_h);
  g.dil_w = static_cast<int>(p.dilation_w);
  g.in_image = static_cast<int>(p.c_in * p.h_in * p.w_in);
  g.out_image = static_cast<int>(p.c_out * p.h_out * p.w_out);
  g.k_tiles_per_split = static_cast<int>((k_tiles + splits - 1) / splits);
  if (!p.has_bias) bias = nullptr;
  float* const partial = splits > 1 ? scratch : nullptr;
  if (splits > 1 && !scratch) {
    note_error("implicit_gemm_conv2d", "a split K needs scratch");
    return;
  }
  const dim3 grid(static_cast<unsigned>((shape.n + kBN - 1) / kBN),
                  static_cast<unsigned>((shape.m + kBM - 1) / kBM), static_cast<unsigned>(splits));
  switch (precision) {
    case Precision::Tf32:
      implicit_gemm_kernel<Precision::Tf32><<<grid, kBlock, 0, ex.stream>>>(
          g, x, static_cast<const float*>(w), bias, residual, p.clamp_lo, p.clamp_hi, y, partial);
      break;
    case Precision::Fp16:
      implicit_gemm_kernel<Precision::Fp16><<<grid, kBlock, 0, ex.stream>>>(
          g, x, static_cast<const __half*>(w), bias, residual, p.clamp_lo, p.clamp_hi, y, partial);
      break;
    case Precision::Bf16:
      implicit_gemm_kernel<Precision::Bf16><<<grid, kBlock, 0, ex.stream>>>(
          g, x, static_cast<const __nv_bfloat16*>(w), bias, residual, p.clamp_lo, p.clamp_hi, y, partial);
      break;
    default:
      note_error("implicit_gemm_conv2d", "exact float32 has no tensor-core path");
      return;
  }
  check_launch("implicit_gemm_kernel");
  if (splits > 1) {
    const int64_t total = shape.m * shape.n;
    const int64_t blocks = (total + kThreads - 1) / kThreads;
    split_k_reduce_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads, 0, ex.stream>>>(
        g, static_cast<int>(splits), partial, bias, residual, p.clamp_lo, p.clamp_hi, y);
    check_launch("split_k_reduce_kernel");
  }
}

}  // namespace aotc::rt::cuda
