// depthwise_conv2d_nhwc.cu - one filter per channel (groups == c_in == c_out) on NHWC
// tensors (convert_to_channels_last.cpp), weights (kh, kw, c). A thread computes one vector
// of channels (4 as a float4 where the channel count and the pointers allow) for `Tile`
// neighbouring output pixels of a row; consecutive threads take consecutive channel
// vectors, so a warp reads each input pixel's channels as one run. For the common windows
// (3, 5 and 7 wide, stride 1 or 2, no horizontal dilation) a row's input span sits in
// registers and each tap's weight is loaded once for the tile; other geometries take a
// thread per output. Taps that fall on the padding are skipped, as in depthwise_conv2d.cu.
// With an input epilogue (fold_depthwise_input.cpp), each loaded value is first taken
// through the bias and clamp of the GEMM that wrote it; skipped padding stays zero, as it
// would after that epilogue. These kernels are near their arithmetic limit at batch 1 (a
// load and an FMA a tap), so the common epilogue, relu6's upper bound alone (cuBLASLt
// applied the bias and relu), is one NaN-keeping min a value.
// Tensors kept in the 16-bit type of --precision fp16 / bf16 (store_activations_16bit.cpp)
// are read and written in it, four channels as 8 bytes, with the same float32 arithmetic
// and one rounding a value; a SiLU after the bias (fuse_epilogue_silu.cpp) saves the pass
// over the output that would apply it. A float32 input may give a 16-bit output: a window 7
// or more wide, bound by its instructions, reads float32 rather than widen 17.5 loaded values
// an output (store_activations_16bit.cpp), but for the 7x7 windows at stride 1 that the
// taps kernels below take, which widen each value once.
// A SiLU as the input epilogue (the expansion's, moved here by fold_depthwise_input.cpp so
// that its GEMM writes the tensor once): computed per value read, the register-tiled
// kernels would take it 4.5 (3x3) to 10 (5x5) times an input value and become bound by its
// two special-function instructions. For the common windows a block instead loads its
// input tile with the halo into shared memory once, applying the SiLU (rounded to the
// stored type, as the GEMM's epilogue wrote it before) as it stores, and computes 8 rows of
// 8 outputs (4 at stride 2) for 128 bytes of channels from there; other geometries, and
// grids of tiles too small to fill the GPU, apply it per value read.
// Asked for the mean of its output per image and channel as well (a squeeze-and-excitation
// block's pooling, fuse_depthwise_pool.cpp), the tile kernel adds each block's outputs per
// channel as it stores them, and a second step adds the tiles' sums in order (no atomics, the
// same result every run); the other paths pool after the convolution.
// 32-bit unsigned index arithmetic (a 64-bit division is a software loop on the GPU).
#include <aotc/rt/cuda/conv2d_plan.h>
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/lowp.cuh>
#include <aotc/rt/cuda/pointwise.cuh>

#include <cstdint>
#include <cstdlib>
#include <type_traits>

namespace aotc::rt::cuda {
namespace {

struct Geometry {
  unsigned vectors, h_in, w_in, h_out, w_out, tiles_w;  // vectors: channels / the vector width
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  unsigned total;  // n * h_out * tiles_w * vectors
};

__device__ inline float fma_v(float a, float b, float c) { return fmaf(a, b, c); }
__device__ inline float4 fma_v(float4 a, float4 b, float4 c) {
  return {fmaf(a.x, b.x, c.x), fmaf(a.y, b.y, c.y), fmaf(a.z, b.z, c.z), fmaf(a.w, b.w, c.w)};
}
__device__ inline float add_v(float a, float b) { return a + b; }
__device__ inline float4 add_v(float4 a, float4 b) { return {a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w}; }
__device__ inline float clamp_v(float v, float lo, float hi) { return clamp_apply(v, lo, hi); }
__device__ inline float4 clamp_v(float4 v, float lo, float hi) {
  return {clamp_apply(v.x, lo, hi), clamp_apply(v.y, lo, hi), clamp_apply(v.z, lo, hi),
          clamp_apply(v.w, lo, hi)};
}
// min(v, hi) that keeps a NaN v a NaN, as clamp_apply does (pointwise.cuh).
__device__ inline float min_keep_nan_v(float v, float hi) { return min_keep_nan(v, hi); }
__device__ inline float4 min_keep_nan_v(float4 v, float hi) {
  return {min_keep_nan(v.x, hi), min_keep_nan(v.y, hi), min_keep_nan(v.z, hi), min_keep_nan(v.w, hi)};
}
template <class V>
__device__ inline V zero_v() {
  if constexpr (sizeof(V) == sizeof(float))
    return 0.0f;
  else
    return {0.0f, 0.0f, 0.0f, 0.0f};
}

// How a vector V of channels is stored in memory: as V itself in float32, as four 16-bit
// values in 8 bytes (V = float4) or one (V = float) in the 16-bit type S.
template <class V, class S>
using Stored = std::conditional_t<std::is_same_v<S, float>, V, Pack<S, sizeof(V) / sizeof(float)>>;

template <class V, class S>
__device__ inline V widen_v(const Stored<V, S>& s) {
  if constexpr (std::is_same_v<S, float>)
    return s;
  else if constexpr (sizeof(V) == sizeof(float))
    return widen(s.v[0]);
  else
    return {widen(s.v[0]), widen(s.v[1]), widen(s.v[2]), widen(s.v[3])};
}
template <class V, class S>
__device__ inline Stored<V, S> narrow_v(V v) {
  if constexpr (std::is_same_v<S, float>) {
    return v;
  } else if constexpr (sizeof(V) == sizeof(float)) {
    return {{round_to<S>(v)}};
  } else {
    return {{round_to<S>(v.x), round_to<S>(v.y), round_to<S>(v.z), round_to<S>(v.w)}};
  }
}

// The activation after the bias: float32 outputs compute the SiLU as the unary op does;
// outputs rounded to 16 bits take silu_fast, whose error is far below that rounding.
template <class S, GemmActivation A>
__device__ inline float activate(float v) {
  if constexpr (A == GemmActivation::Silu)
    return std::is_same_v<S, float> ? unary_apply<UnaryOp::Silu>(v, 0.0f, 0.0f) : silu_fast(v);
  else
    return v;
}
template <class S, GemmActivation A>
__device__ inline float4 activate(float4 v) {
  return {activate<S, A>(v.x), activate<S, A>(v.y), activate<S, A>(v.z), activate<S, A>(v.w)};
}

// The input SiLU per value read takes silu_fast in float32 too (a few ulp where the unary
// op's formula has 1, far inside float32's model tolerance): at 9 to 25 reads a value, that
// formula's expf and division cost more than the pass the fold removed (efficientnet_b0 at
// batch 1, bench/results_gpu.md).
__device__ inline float silu_fast_v(float v) { return silu_fast(v); }
__device__ inline float4 silu_fast_v(float4 v) {
  return {silu_fast(v.x), silu_fast(v.y), silu_fast(v.z), silu_fast(v.w)};
}

// What is applied to each input value read.
enum class Input { AsIs, UpperBound, BiasClamp, Silu };

// Kernel > 0: a Kernel-wide window at horizontal stride Stride, the row's span of
// (Tile - 1) * Stride + Kernel input pixels loaded once. Kernel == 0: any geometry, Tile 1.
// V: the vector of channels computed (float4 or float); SX and S: the stored element types
// (float, __half, __nv_bfloat16) of x and of y (the same, or x float32 and y 16-bit); A: the
// activation after the bias.
template <class V, class SX, class S, int Kernel, int Stride, int Tile, Input In, GemmActivation A>
__device__ __forceinline__ void depthwise_conv2d_nhwc(Geometry g, bool has_bias, float lo, float hi,
                                                      const Stored<V, SX>* __restrict__ x,
                                                      const V* __restrict__ w, const V* __restrict__ bias,
                                                      Stored<V, S>* __restrict__ y,
                                                      const V* __restrict__ in_bias, float in_lo,
                                                      float in_hi) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= g.total) return;
  const unsigned cv = i % g.vectors;
  unsigned rest = i / g.vectors;
  const unsigned tile = rest % g.tiles_w;
  rest /= g.tiles_w;
  const unsigned oh = rest % g.h_out, image = rest / g.h_out;
  const int ow0 = static_cast<int>(tile) * Tile;
  const int iw0 = ow0 * (Kernel > 0 ? Stride : g.stride_w) - g.pad_w;
  V in_b = zero_v<V>();
  if constexpr (In == Input::BiasClamp)
    if (in_bias) in_b = in_bias[cv];
  // An input value as the convolution reads it.
  const auto load = [&](const Stored<V, SX>* at) {
    const V v = widen_v<V, SX>(*at);
    if constexpr (In == Input::UpperBound)
      return min_keep_nan_v(v, in_hi);
    else if constexpr (In == Input::BiasClamp)
      return clamp_v(in_bias ? add_v(v, in_b) : v, in_lo, in_hi);
    else if constexpr (In == Input::Silu)
      return silu_fast_v(v);
    else
      return v;
  };
  V acc[Tile];
#pragma unroll
  for (int t = 0; t < Tile; ++t) acc[t] = zero_v<V>();
  for (int kh = 0; kh < g.kernel_h; ++kh) {
    const int ih = static_cast<int>(oh) * g.stride_h - g.pad_h + kh * g.dilation_h;
    if (ih < 0 || ih >= static_cast<int>(g.h_in)) continue;
    const Stored<V, SX>* row =
        x + (static_cast<size_t>(image) * g.h_in + static_cast<unsigned>(ih)) * g.w_in * g.vectors + cv;
    const V* taps = w + static_cast<size_t>(kh) * g.kernel_w * g.vectors + cv;
    if constexpr (Kernel > 0) {
      constexpr int kSpan = (Tile - 1) * Stride + Kernel;
      V span[kSpan];
      bool inside[kSpan];
#pragma unroll
      for (int j = 0; j < kSpan; ++j) {
        const int iw = iw0 + j;
        inside[j] = iw >= 0 && iw < static_cast<int>(g.w_in);
        span[j] = inside[j] ? load(row + static_cast<unsigned>(iw) * g.vectors) : zero_v<V>();
      }
#pragma unroll
      for (int kw = 0; kw < Kernel; ++kw) {
        const V tap = taps[static_cast<unsigned>(kw) * g.vectors];
#pragma unroll
        for (int t = 0; t < Tile; ++t)
          if (inside[t * Stride + kw]) acc[t] = fma_v(span[t * Stride + kw], tap, acc[t]);
      }
    } else {
      for (int kw = 0; kw < g.kernel_w; ++kw) {
        const int iw = iw0 + kw * g.dilation_w;
        if (iw < 0 || iw >= static_cast<int>(g.w_in)) continue;
        acc[0] = fma_v(load(row + static_cast<unsigned>(iw) * g.vectors),
                       taps[static_cast<unsigned>(kw) * g.vectors], acc[0]);
      }
    }
  }
  const V b = has_bias ? bias[cv] : zero_v<V>();
  Stored<V, S>* out =
      y + ((static_cast<size_t>(image) * g.h_out + oh) * g.w_out + static_cast<unsigned>(ow0)) * g.vectors +
      cv;
#pragma unroll
  for (int t = 0; t < Tile; ++t)
    if (ow0 + t < static_cast<int>(g.w_out))
      out[static_cast<unsigned>(t) * g.vectors] =
          narrow_v<V, S>(clamp_v(activate<S, A>(add_v(acc[t], b)), lo, hi));
}

// The register-tiled kernels (float4 channels, Tile outputs a thread) at six blocks of 128
// threads a multiprocessor, so at most 80 registers a thread: left to itself the compiler
// gives the 7-wide one 82, which fits five, and at 31% occupancy its loads' latency shows.
template <class V, class SX, class S, int Kernel, int Stride, int Tile, Input In, GemmActivation A>
__global__ void __launch_bounds__(128, 6)
    depthwise_tiled_kernel(Geometry g, bool has_bias, float lo, float hi, const Stored<V, SX>* __restrict__ x,
                           const V* __restrict__ w, const V* __restrict__ bias, Stored<V, S>* __restrict__ y,
                           const V* __restrict__ in_bias, float in_lo, float in_hi) {
  depthwise_conv2d_nhwc<V, SX, S, Kernel, Stride, Tile, In, A>(g, has_bias, lo, hi, x, w, bias, y, in_bias,
                                                               in_lo, in_hi);
}
template <class V, class SX, class S, int Kernel, int Stride, int Tile, Input In, GemmActivation A>
__global__ void depthwise_conv2d_nhwc_kernel(Geometry g, bool has_bias, float lo, float hi,
                                             const Stored<V, SX>* __restrict__ x, const V* __restrict__ w,
                                             const V* __restrict__ bias, Stored<V, S>* __restrict__ y,
                                             const V* __restrict__ in_bias, float in_lo, float in_hi) {
  depthwise_conv2d_nhwc<V, SX, S, Kernel, Stride, Tile, In, A>(g, has_bias, lo, hi, x, w, bias, y, in_bias,
                                                               in_lo, in_hi);
}

// The shared-memory tile for an input SiLU (see the top of the file; its size in
// conv2d_plan.h), float4 channels: CB vectors (128 bytes) a block, TOH x TOW outputs, a
// thread Tw outputs of a row for each of Rows rows.
template <class S, int Stride>
struct SiluTile {
  static constexpr int CB = 128 / static_cast<int>(sizeof(Stored<float4, S>));
  static constexpr int TOW = static_cast<int>(depthwise_silu_tile_width(Stride));
  static constexpr int TOH = static_cast<int>(kDepthwiseSiluTileRows), Tw = TOW / 2;
  static constexpr int TY = 128 / CB / 2, Rows = TOH / TY;  // two threads across a tile row
  static constexpr int chunk_vectors = 16 / static_cast<int>(sizeof(Stored<float4, S>));  // a 16-byte load
};

// Pool: each block also adds its outputs per channel, as stored, and writes the sums divided
// by pool_divisor to pool_partial[(block * vectors + channel vector)] (blocks in image-major
// order: an image's tiles are consecutive); a plane of one tile divides by its pixels there.
template <class S, int Kernel, int Stride, GemmActivation A, bool Pool>
__global__ void __launch_bounds__(128)
    depthwise_silu_input_tile_kernel(Geometry g, bool has_bias, float lo, float hi,
                                     const Stored<float4, S>* __restrict__ x, const float4* __restrict__ w,
                                     const float4* __restrict__ bias, Stored<float4, S>* __restrict__ y,
                                     float4* __restrict__ pool_partial, float pool_divisor) {
  using T = SiluTile<S, Stride>;
  using Chunk = Pack<Stored<float4, S>, T::chunk_vectors>;
  constexpr int IH = (T::TOH - 1) * Stride + Kernel, IW = (T::TOW - 1) * Stride + Kernel;
  constexpr int kSpan = (T::Tw - 1) * Stride + Kernel;
  __shared__ Chunk tile[IH * IW * T::CB / T::chunk_vectors];
  __shared__ float4 taps[Kernel * Kernel * T::CB];
  const unsigned tiles_x = (g.w_out + T::TOW - 1) / T::TOW, tiles_y = (g.h_out + T::TOH - 1) / T::TOH;
  const unsigned tx = blockIdx.x % tiles_x, ty = blockIdx.x / tiles_x % tiles_y;
  const unsigned image = blockIdx.x / tiles_x / tiles_y, cv0 = blockIdx.y * T::CB;
  const int ih0 = static_cast<int>(ty * T::TOH) * Stride - g.pad_h;
  const int iw0 = static_cast<int>(tx * T::TOW) * Stride - g.pad_w;
  constexpr unsigned chunks_per_pixel = T::CB / T::chunk_vectors;
  for (unsigned k = threadIdx.x; k < IH * IW * chunks_per_pixel; k += blockDim.x) {
    const unsigned px = k / chunks_per_pixel, cv = cv0 + k % chunks_per_pixel * T::chunk_vectors;
    const int ih = ih0 + static_cast<int>(px / IW), iw = iw0 + static_cast<int>(px % IW);
    Chunk c{};  // the padding, and channels past the last, stay zero
    if (ih >= 0 && ih < static_cast<int>(g.h_in) && iw >= 0 && iw < static_cast<int>(g.w_in) &&
        cv < g.vectors) {
      c = *reinterpret_cast<const Chunk*>(
          x +
          ((static_cast<size_t>(image) * g.h_in + static_cast<unsigned>(ih)) * g.w_in +
           static_cast<unsigned>(iw)) *
              g.vectors +
          cv);
#pragma unroll
      for (int j = 0; j < T::chunk_vectors; ++j)
        c.v[j] = narrow_v<float4, S>(activate<S, GemmActivation::Silu>(widen_v<float4, S>(c.v[j])));
    }
    tile[k] = c;
  }
  for (unsigned k = threadIdx.x; k < Kernel * Kernel * T::CB; k += blockDim.x) {
    const unsigned cv = cv0 + k % T::CB;
    taps[k] = cv < g.vectors ? w[k / T::CB * g.vectors + cv] : zero_v<float4>();
  }
  __syncthreads();
  const unsigned lane_cv = threadIdx.x % T::CB, cv = cv0 + lane_cv;
  const bool active = cv < g.vectors;
  if (!Pool && !active) return;  // (pooling threads all reach its barrier)
  const unsigned across = threadIdx.x / T::CB % 2, down = threadIdx.x / T::CB / 2;
  const auto* pixels = reinterpret_cast<const Stored<float4, S>*>(tile);
  const float4 b = has_bias && active ? bias[cv] : zero_v<float4>();
  const unsigned ow0 = tx * T::TOW + across * T::Tw;
  float4 sum = zero_v<float4>();
#pragma unroll 1
  for (int r = 0; r < T::Rows; ++r) {
    const unsigned row_in_tile = down + static_cast<unsigned>(r) * T::TY, oh = ty * T::TOH + row_in_tile;
    if (oh >= g.h_out || !active) break;
    float4 acc[T::Tw];
#pragma unroll
    for (int t = 0; t < T::Tw; ++t) acc[t] = zero_v<float4>();
#pragma unroll
    for (int kh = 0; kh < Kernel; ++kh) {
      const Stored<float4, S>* row =
          pixels + ((row_in_tile * Stride + kh) * IW + across * T::Tw * Stride) * T::CB + lane_cv;
      float4 span[kSpan];
#pragma unroll
      for (int j = 0; j < kSpan; ++j) span[j] = widen_v<float4, S>(row[j * T::CB]);
#pragma unroll
      for (int kw = 0; kw < Kernel; ++kw) {
        const float4 tap = taps[(kh * Kernel + kw) * T::CB + lane_cv];
#pragma unroll
        for (int t = 0; t < T::Tw; ++t) acc[t] = fma_v(span[t * Stride + kw], tap, acc[t]);
      }
    }
    Stored<float4, S>* out =
        y + ((static_cast<size_t>(image) * g.h_out + oh) * g.w_out + ow0) * g.vectors + cv;
#pragma unroll
    for (int t = 0; t < T::Tw; ++t)
      if (ow0 + t < g.w_out) {
        const Stored<float4, S> v = narrow_v<float4, S>(clamp_v(activate<S, A>(add_v(acc[t], b)), lo, hi));
        out[static_cast<unsigned>(t) * g.vectors] = v;
        if constexpr (Pool) sum = add_v(sum, widen_v<float4, S>(v));
      }
  }
  if constexpr (Pool) {
    // The block's threads of one channel vector add their sums in a fixed order.
    __shared__ float4 sums[128];
    sums[threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.x < T::CB && active) {
      float4 total = sums[threadIdx.x];
#pragma unroll
      for (int k = 1; k < 128 / T::CB; ++k) total = add_v(total, sums[k * T::CB + threadIdx.x]);
      pool_partial[static_cast<size_t>(blockIdx.x) * g.vectors + cv] = {
          total.x / pool_divisor, total.y / pool_divisor, total.z / pool_divisor, total.w / pool_divisor};
    }
  }
}

template <class S, int Kernel, int Stride>
void launch_silu_input_tile(cudaStream_t stream, const Geometry& g, const Conv2dParams& p,
                            GemmActivation activation, const void* x, const void* w, const void* bias,
                            void* y, float* pool_partial, float pool_divisor) {
  using T = SiluTile<S, Stride>;
  const dim3 grid(static_cast<unsigned>(depthwise_silu_tiles_per_image(p) * p.n),
                  (g.vectors + T::CB - 1) / T::CB);
  const auto run = [&](auto kernel) {
    kernel<<<grid, 128, 0, stream>>>(g, p.has_bias, p.clamp_lo, p.clamp_hi,
                                     static_cast<const Stored<float4, S>*>(x), static_cast<const float4*>(w),
                                     static_cast<const float4*>(bias), static_cast<Stored<float4, S>*>(y),
                                     reinterpret_cast<float4*>(pool_partial), pool_divisor);
  };
  const auto with_pool = [&](auto act) {
    constexpr GemmActivation A = decltype(act)::value;
    if (pool_partial)
      run(depthwise_silu_input_tile_kernel<S, Kernel, Stride, A, true>);
    else
      run(depthwise_silu_input_tile_kernel<S, Kernel, Stride, A, false>);
  };
  if (activation == GemmActivation::Silu)
    with_pool(std::integral_constant<GemmActivation, GemmActivation::Silu>{});
  else
    with_pool(std::integral_constant<GemmActivation, GemmActivation::None>{});
}

template <class V, class SX, class S, int Kernel, int Stride, int Tile, Input In, GemmActivation A>
constexpr auto kernel_for() {
  if constexpr (sizeof(V) == sizeof(float4) && Kernel > 0 && Tile > 1)
    return depthwise_tiled_kernel<V, SX, S, Kernel, Stride, Tile, In, A>;
  else
    return depthwise_conv2d_nhwc_kernel<V, SX, S, Kernel, Stride, Tile, In, A>;
}

// Enough blocks of 128 threads to keep every multiprocessor busy with two.
bool grid_fills_gpu(int64_t threads) {
  static const int sms = [] {
    int device = 0, count = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      cudaGetLastError();
      return 132;
    }
    return count;
  }();
  return (threads + 127) / 128 >= 2 * static_cast<int64_t>(sms);
}

// The taps kernels for 7x7 windows at stride 1 (ConvNeXt), no input epilogue. The
// register-tiled kernel reads a 7-wide window's input span for each of its rows and its taps
// from L1, about 30 16-byte loads for 4 outputs of 4 channels, and widens 17.5 values an
// output from 16 bits: bound by those loads and conversions rather than by its 49 FMAs an
// output. Here a thread takes one channel, with its K x K taps in registers, and computes R
// rows of T outputs, reading each of the (R + K - 1) x (T + K - 1) input values it needs
// once, widened once. Consecutive threads take consecutive channels, so a warp reads a
// pixel's channels as one run. On grids that fill the GPU with tiles of 8 x 8 outputs, a
// block stages such a tile's input for 32 channels in shared memory first, widened to
// float32 as it is stored, every load of it issued before the first is used, and each of
// its four warps computes 4 x 4 outputs of it, a channel a lane, from conflict-free shared
// loads (6.25 an output); smaller grids take a thread a tile of 2 x 4, 1 x 4 or 1 x 2 outputs
// read from global memory (more threads). Padding is read as zero (its product with a finite
// tap adds nothing; the other kernels skip it). ptxas keeps the tile kernel's registers low by
// loading its taps again from L1 where they are used; taps pinned in registers (80 of them a
// thread, fewer blocks a multiprocessor) measured slower.
struct TapsGeometry {
  unsigned c, h_in, w_in, h_out, w_out, tiles_w, tiles_h, total;  // total: threads (depthwise_taps_kernel)
  int pad_h, pad_w;
};

template <int K>
__device__ __forceinline__ void load_taps(const float* __restrict__ w, unsigned c, unsigned channels,
                                          float (&tap)[K * K]) {
#pragma unroll
  for (int j = 0; j < K * K; ++j) tap[j] = c < channels ? w[static_cast<unsigned>(j) * channels + c] : 0.0f;
}

// Input row j of a thread's tile (its span of T + K - 1 values) into the R x T sums: it is
// output row r's tap row j - r.
template <int K, int R, int T>
__device__ __forceinline__ void accumulate_row(int j, const float (&span)[T + K - 1],
                                               const float (&tap)[K * K], float (&acc)[R][T]) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int kh = j - r;
    if (kh < 0 || kh >= K) continue;
#pragma unroll
    for (int kw = 0; kw < K; ++kw)
#pragma unroll
      for (int t = 0; t < T; ++t) acc[r][t] = fmaf(span[t + kw], tap[kh * K + kw], acc[r][t]);
  }
}

// The R x T outputs of channel c from output (oh0, ow0): bias, clamp, rounding to S.
template <class S, int R, int T>
__device__ __forceinline__ void store_taps_outputs(const TapsGeometry& g, const float (&acc)[R][T], float b,
                                                   float lo, float hi, unsigned image, unsigned oh0,
                                                   unsigned ow0, unsigned c, S* __restrict__ y) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const unsigned oh = oh0 + static_cast<unsigned>(r);
    if (oh >= g.h_out) break;
    S* out = y + ((static_cast<size_t>(image) * g.h_out + oh) * g.w_out + ow0) * g.c + c;
#pragma unroll
    for (int t = 0; t < T; ++t)
      if (ow0 + static_cast<unsigned>(t) < g.w_out)
        out[static_cast<unsigned>(t) * g.c] = round_to<S>(clamp_apply(acc[r][t] + b, lo, hi));
  }
}

// A thread a channel and R x T outputs, read from global memory.
template <class SX, class S, int K, int R, int T>
__global__ void __launch_bounds__(128)
    depthwise_taps_kernel(TapsGeometry g, bool has_bias, float lo, float hi, const SX* __restrict__ x,
                          const float* __restrict__ w, const float* __restrict__ bias, S* __restrict__ y) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= g.total) return;
  const unsigned c = i % g.c;
  unsigned rest = i / g.c;
  const unsigned tx = rest % g.tiles_w;
  rest /= g.tiles_w;
  const unsigned ty = rest % g.tiles_h, image = rest / g.tiles_h;
  float tap[K * K];
  load_taps<K>(w, c, g.c, tap);
  float acc[R][T] = {};
  const int ih0 = static_cast<int>(ty) * R - g.pad_h, iw0 = static_cast<int>(tx) * T - g.pad_w;
  constexpr int kSpan = T + K - 1;
  bool inside[kSpan];
#pragma unroll
  for (int j = 0; j < kSpan; ++j) inside[j] = iw0 + j >= 0 && iw0 + j < static_cast<int>(g.w_in);
  const SX* plane = x + static_cast<size_t>(image) * g.h_in * g.w_in * g.c + c;
#pragma unroll
  for (int j = 0; j < R + K - 1; ++j) {
    const int ih = ih0 + j;
    if (ih < 0 || ih >= static_cast<int>(g.h_in)) continue;
    const SX* row = plane + static_cast<unsigned>(ih) * g.w_in * g.c;
    float span[kSpan];
#pragma unroll
    for (int s = 0; s < kSpan; ++s)
      span[s] = inside[s] ? widen(row[static_cast<unsigned>(iw0 + s) * g.c]) : 0.0f;
    accumulate_row<K, R, T>(j, span, tap, acc);
  }
  store_taps_outputs<S, R, T>(g, acc, has_bias ? bias[c] : 0.0f, lo, hi, image, ty * R,
                              tx * static_cast<unsigned>(T), c, y);
}

constexpr int kTapsTileChannels = 32;  // a tile block's channels: a warp's lanes

// A block of four warps a tile of 8 x 8 outputs for 32 channels, staged in shared memory. Vec:
// x's channels are read four at a time (a channel count of 4k, x aligned to 4 values).
template <class SX, class S, int K, bool Vec>
__global__ void __launch_bounds__(128)
    depthwise_taps_tile_kernel(TapsGeometry g, bool has_bias, float lo, float hi, const SX* __restrict__ x,
                               const float* __restrict__ w, const float* __restrict__ bias,
                               S* __restrict__ y) {
  constexpr int CB = kTapsTileChannels, R = 4, T = 4, IH = 2 * R + K - 1, IW = 2 * T + K - 1;
  constexpr int per_load = Vec ? 4 : 1, loads = IH * IW * CB / per_load;
  constexpr int rounds = (loads + 127) / 128;  // a thread's loads (blockDim.x == 128)
  using Load = std::conditional_t<Vec, Pack<SX, 4>, SX>;
  __shared__ float4 tile4[IH * IW * CB / 4];
  float* const tile = reinterpret_cast<float*>(tile4);
  const unsigned tx = blockIdx.x % g.tiles_w, ty = blockIdx.x / g.tiles_w % g.tiles_h;
  const unsigned image = blockIdx.x / g.tiles_w / g.tiles_h, c0 = blockIdx.y * CB;
  const int ih0 = static_cast<int>(ty) * 2 * R - g.pad_h, iw0 = static_cast<int>(tx) * 2 * T - g.pad_w;
  const SX* plane = x + static_cast<size_t>(image) * g.h_in * g.w_in * g.c;
  // Every load is issued before the first is stored: the tile's latency is paid once.
  Load v[rounds];
#pragma unroll
  for (int round = 0; round < rounds; ++round) {
    const unsigned k = threadIdx.x + static_cast<unsigned>(round) * 128;
    constexpr unsigned per_pixel = CB / per_load;
    const unsigned px = k / per_pixel, c = c0 + k % per_pixel * per_load;
    const int ih = ih0 + static_cast<int>(px / IW), iw = iw0 + static_cast<int>(px % IW);
    // (a chunk of four channels is all in or all past the last)
    const bool inside = k < loads && ih >= 0 && ih < static_cast<int>(g.h_in) && iw >= 0 &&
                        iw < static_cast<int>(g.w_in) && c < g.c;
    v[round] = inside
                   ? *reinterpret_cast<const Load*>(
                         plane + (static_cast<unsigned>(ih) * g.w_in + static_cast<unsigned>(iw)) * g.c + c)
                   : Load{};
  }
#pragma unroll
  for (int round = 0; round < rounds; ++round) {
    const unsigned k = threadIdx.x + static_cast<unsigned>(round) * 128;
    if (k >= loads) break;
    if constexpr (!Vec)
      tile[k] = widen(v[round]);
    else if constexpr (std::is_same_v<SX, float>)
      tile4[k] = {v[round].v[0], v[round].v[1], v[round].v[2], v[round].v[3]};
    else
      tile4[k] = {widen(v[round].v[0]), widen(v[round].v[1]), widen(v[round].v[2]), widen(v[round].v[3])};
  }
  const unsigned lane = threadIdx.x % CB, c = c0 + lane;
  float tap[K * K];
  load_taps<K>(w, c, g.c, tap);
  __syncthreads();
  const unsigned gy = threadIdx.x / CB / 2, gx = threadIdx.x / CB % 2;  // the warp's 4 x 4 outputs
  float acc[R][T] = {};
#pragma unroll
  for (int j = 0; j < R + K - 1; ++j) {
    const float* row = tile + ((gy * R + static_cast<unsigned>(j)) * IW + gx * T) * CB + lane;
    float span[T + K - 1];
#pragma unroll
    for (int s = 0; s < T + K - 1; ++s) span[s] = row[s * CB];
    accumulate_row<K, R, T>(j, span, tap, acc);
  }
  if (c >= g.c) return;
  store_taps_outputs<S, R, T>(g, acc, has_bias ? bias[c] : 0.0f, lo, hi, image, ty * 2 * R + gy * R,
                              tx * 2 * T + gx * T, c, y);
}

// depthwise_taps_kernel_applies (conv2d_plan.h); AOTC_CUDA_DEPTHWISE_NO_TAPS (read when the
// kernels are chosen: at a context's capture) keeps the register-tiled kernel, for comparisons.
bool taps_kernel_applies(const Conv2dParams& p, GemmActivation activation, const DepthwiseInputEpilogue* in) {
  return depthwise_taps_kernel_applies(p, activation != GemmActivation::None, in != nullptr) &&
         !std::getenv("AOTC_CUDA_DEPTHWISE_NO_TAPS");
}

// The shared-memory tiles where their grid fills the GPU, else the largest tile of a thread
// whose grid does (the smallest where none does).
template <class SX, class S>
void launch_taps(cudaStream_t stream, const Conv2dParams& p, const void* x, const float* w, const float* bias,
                 void* y) {
  TapsGeometry g{};
  g.c = static_cast<unsigned>(p.c_out);
  g.h_in = static_cast<unsigned>(p.h_in);
  g.w_in = static_cast<unsigned>(p.w_in);
  g.h_out = static_cast<unsigned>(p.h_out);
  g.w_out = static_cast<unsigned>(p.w_out);
  g.pad_h = static_cast<int>(p.pad_h);
  g.pad_w = static_cast<int>(p.pad_w);
  const auto tiles = [&](int64_t rows, int64_t cols) {
    return p.n * ((p.h_out + rows - 1) / rows) * ((p.w_out + cols - 1) / cols);
  };
  const int64_t channel_blocks = (p.c_out + kTapsTileChannels - 1) / kTapsTileChannels;
  if (grid_fills_gpu(tiles(8, 8) * channel_blocks * 128)) {
    g.tiles_h = (g.h_out + 7) / 8;
    g.tiles_w = (g.w_out + 7) / 8;
    const dim3 grid(static_cast<unsigned>(tiles(8, 8)), static_cast<unsigned>(channel_blocks));
    const auto run = [&](auto kernel) {
      kernel<<<grid, 128, 0, stream>>>(g, p.has_bias, p.clamp_lo, p.clamp_hi, static_cast<const SX*>(x), w,
                                       bias, static_cast<S*>(y));
    };
    if (p.c_out % 4 == 0 && pack_aligned(x, 4 * sizeof(SX)))
      run(depthwise_taps_tile_kernel<SX, S, 7, true>);
    else
      run(depthwise_taps_tile_kernel<SX, S, 7, false>);
    return;
  }
  const auto run = [&](auto kernel, unsigned rows, unsigned cols) {
    g.tiles_h = (g.h_out + rows - 1) / rows;
    g.tiles_w = (g.w_out + cols - 1) / cols;
    g.total = static_cast<unsigned>(tiles(rows, cols) * p.c_out);
    kernel<<<(g.total + 127) / 128, 128, 0, stream>>>(g, p.has_bias, p.clamp_lo, p.clamp_hi,
                                                      static_cast<const SX*>(x), w, bias, static_cast<S*>(y));
  };
  if (grid_fills_gpu(tiles(2, 4) * p.c_out))
    run(depthwise_taps_kernel<SX, S, 7, 2, 4>, 2, 4);
  else if (grid_fills_gpu(tiles(1, 4) * p.c_out))
    run(depthwise_taps_kernel<SX, S, 7, 1, 4>, 1, 4);
  else
    run(depthwise_taps_kernel<SX, S, 7, 1, 2>, 1, 2);
}

template <class V, class SX, class S, int Kernel, int Stride, int Tile>
void launch(cudaStream_t stream, Geometry g, const Conv2dParams& p, GemmActivation activation, const void* x,
            const void* w, const void* bias, void* y, const DepthwiseInputEpilogue* in) {
  g.tiles_w = (g.w_out + Tile - 1) / Tile;
  g.total = g.vectors * g.tiles_w * g.h_out * static_cast<unsigned>(p.n);
  const unsigned blocks = (g.total + 127) / 128;
  const auto run = [&](auto kernel) {
    kernel<<<blocks, 128, 0, stream>>>(
        g, p.has_bias, p.clamp_lo, p.clamp_hi, static_cast<const Stored<V, SX>*>(x), static_cast<const V*>(w),
        static_cast<const V*>(bias), static_cast<Stored<V, S>*>(y),
        in ? reinterpret_cast<const V*>(in->in_bias) : nullptr, in ? in->in_lo : 0.0f, in ? in->in_hi : 0.0f);
  };
  const auto with_input = [&](auto act) {
    constexpr GemmActivation A = decltype(act)::value;
    if (!in)
      run(kernel_for<V, SX, S, Kernel, Stride, Tile, Input::AsIs, A>());
    else if constexpr (!std::is_same_v<SX, S>)  // (the public function refuses it for float32 to 16 bits)
      return;
    else if (in->in_activation == GemmActivation::Silu)
      run(kernel_for<V, S, S, Kernel, Stride, Tile, Input::Silu, A>());
    else if (!in->in_bias && in->in_lo == -__builtin_inff())
      run(kernel_for<V, S, S, Kernel, Stride, Tile, Input::UpperBound, A>());
    else if constexpr (std::is_same_v<S, float>)  // (the public function refuses it for 16 bits)
      run(kernel_for<V, S, S, Kernel, Stride, Tile, Input::BiasClamp, A>());
  };
  if (activation == GemmActivation::Silu)
    with_input(std::integral_constant<GemmActivation, GemmActivation::Silu>{});
  else
    with_input(std::integral_constant<GemmActivation, GemmActivation::None>{});
}

// The widest tile that still fills the GPU (1 where even that does not: more threads).
template <class V, class SX, class S, int Kernel, int Stride, int Tile>
void launch_tiled(cudaStream_t stream, Geometry g, const Conv2dParams& p, GemmActivation activation,
                  const void* x, const void* w, const void* bias, void* y, const DepthwiseInputEpilogue* in) {
  const int64_t tiled = static_cast<int64_t>(g.vectors) * ((g.w_out + Tile - 1) / Tile) * g.h_out * p.n;
  if (grid_fills_gpu(tiled))
    launch<V, SX, S, Kernel, Stride, Tile>(stream, g, p, activation, x, w, bias, y, in);
  else
    launch<V, SX, S, Kernel, Stride, 1>(stream, g, p, activation, x, w, bias, y, in);
}

// Whether launch_silu_input_tile's grid keeps every multiprocessor busy with two blocks: at
// batch 1 the small planes make too few tiles, and a thread per output applying the SiLU per
// value read spreads the work wider.
template <class S>
bool silu_input_tiles_fill_gpu(const Conv2dParams& p, unsigned vectors) {
  const int64_t cb = SiluTile<S, 1>::CB;
  return grid_fills_gpu(depthwise_silu_tiles_per_image(p) * p.n * ((vectors + cb - 1) / cb) * 128);
}

// The register kernels. 16-bit tensors with scalar channels (a channel count not a multiple
// of 4) take the generic kernel alone: no model seen has them, and each window is more code
// to build.
template <class V, class SX, class S>
void launch_registers(cudaStream_t stream, const Geometry& g, const Conv2dParams& p,
                      GemmActivation activation, const void* x, const void* w, const void* bias, void* y,
                      const DepthwiseInputEpilogue* in) {
  if constexpr (std::is_same_v<S, float> || sizeof(V) == sizeof(float4)) {
    const bool row_window = p.dilation_w == 1;
    if (row_window && p.kernel_w == 3 && p.stride_w == 1)
      return launch_tiled<V, SX, S, 3, 1, 4>(stream, g, p, activation, x, w, bias, y, in);
    if (row_window && p.kernel_w == 3 && p.stride_w == 2)
      return launch_tiled<V, SX, S, 3, 2, 2>(stream, g, p, activation, x, w, bias, y, in);
    if (row_window && p.kernel_w == 5 && p.stride_w == 1)
      return launch_tiled<V, SX, S, 5, 1, 4>(stream, g, p, activation, x, w, bias, y, in);
    if (row_window && p.kernel_w == 5 && p.stride_w == 2)
      return launch_tiled<V, SX, S, 5, 2, 2>(stream, g, p, activation, x, w, bias, y, in);
    if (row_window && p.kernel_w == 7 && p.stride_w == 1)
      return launch_tiled<V, SX, S, 7, 1, 4>(stream, g, p, activation, x, w, bias, y, in);
  }
  launch<V, SX, S, 0, 1, 1>(stream, g, p, activation, x, w, bias, y, in);
}

// The input-SiLU tiles where they apply, else the register kernels. Returns whether the
// tiles ran and left their sums (divided by pool_divisor) in pool_partial (given one).
template <class V, class SX, class S>
bool dispatch(cudaStream_t stream, const Geometry& g, const Conv2dParams& p, GemmActivation activation,
              const void* x, const void* w, const void* bias, void* y, const DepthwiseInputEpilogue* in,
              float* pool_partial, float pool_divisor) {
  if constexpr (sizeof(V) == sizeof(float4) && std::is_same_v<SX, S>) {
    if (in && in->in_activation == GemmActivation::Silu && depthwise_silu_input_tiled(p) &&
        pack_aligned(x, 16) && silu_input_tiles_fill_gpu<S>(p, g.vectors)) {
      if (p.stride_w == 1 && p.kernel_w == 3)
        launch_silu_input_tile<S, 3, 1>(stream, g, p, activation, x, w, bias, y, pool_partial, pool_divisor);
      else if (p.stride_w == 1 && p.kernel_w == 5)
        launch_silu_input_tile<S, 5, 1>(stream, g, p, activation, x, w, bias, y, pool_partial, pool_divisor);
      else if (p.stride_w == 1 && p.kernel_w == 7)
        launch_silu_input_tile<S, 7, 1>(stream, g, p, activation, x, w, bias, y, pool_partial, pool_divisor);
      else if (p.kernel_w == 3)
        launch_silu_input_tile<S, 3, 2>(stream, g, p, activation, x, w, bias, y, pool_partial, pool_divisor);
      else
        launch_silu_input_tile<S, 5, 2>(stream, g, p, activation, x, w, bias, y, pool_partial, pool_divisor);
      return pool_partial != nullptr;
    }
  }
  launch_registers<V, SX, S>(stream, g, p, activation, x, w, bias, y, in);
  return false;
}

}  // namespace

void depthwise_conv2d_nhwc(cudaStream_t stream, const Conv2dParams& p, const DepthwiseNhwcIo& io,
                           const void* x, const float* w, const float* bias, void* y,
                           const DepthwiseInputEpilogue* input_epilogue) {
  const int64_t total = p.n * p.c_out * p.h_out * p.w_out;
  if (total <= 0) {
    if (io.pool)
      adaptive_avg_pool2d_nhwc(stream, io.storage, p.n, p.c_out, p.h_out, p.w_out, 1, 1, y, io.pool, nullptr);
    return;
  }
  if (!conv2d_is_depthwise(p)) {
    note_error("depthwise_conv2d_nhwc", "the convolution is not depthwise (groups == c_in == c_out)");
    return;
  }
  const bool storage_16bit = io.storage == Precision::Fp16 || io.storage == Precision::Bf16;
  if (!storage_16bit && io.storage != Precision::Fp32) {
    note_error("depthwise_conv2d_nhwc", "tensors are stored in float32, fp16 or bf16");
    return;
  }
  if (io.activation != GemmActivation::None && io.activation != GemmActivation::Silu) {
    note_error("depthwise_conv2d_nhwc", "the activation after the bias is a SiLU or none");
    return;
  }
  if (input_epilogue && input_epilogue->in_activation != GemmActivation::None &&
      (input_epilogue->in_activation != GemmActivation::Silu || input_epilogue->in_bias ||
       input_epilogue->in_lo != -__builtin_inff() || input_epilogue->in_hi != __builtin_inff())) {
    note_error("depthwise_conv2d_nhwc", "the input epilogue's activation is a SiLU, with no bias or clamp");
    return;
  }
  if (io.float_input && (!storage_16bit || input_epilogue)) {
    note_error("depthwise_conv2d_nhwc", "a float32 input goes with a 16-bit output and no input epilogue");
    return;
  }
  if (storage_16bit && input_epilogue &&
      (input_epilogue->in_bias || input_epilogue->in_lo != -__builtin_inff())) {
    note_error("depthwise_conv2d_nhwc",
               "16-bit inputs take an upper bound alone or a SiLU as their input epilogue");
    return;
  }
  // Every size and the largest row and column reached fit the kernel's 32-bit arithmetic.
  bool fits = total <= INT32_MAX && p.n * p.c_in * p.h_in * p.w_in <= INT32_MAX;
  for (int64_t v :
       {p.kernel_h, p.kernel_w, p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dilation_h, p.dilation_w})
    fits = fits && v >= 0 && v <= INT32_MAX / 4;
  fits = fits && p.h_out * p.stride_h + p.kernel_h * p.dilation_h <= INT32_MAX / 2 &&
         (p.w_out + 4) * p.stride_w + p.kernel_w * p.dilation_w <= INT32_MAX / 2;
  if (!fits) {
    note_error("depthwise_conv2d_nhwc", "the tensor is too large for the kernel's 32-bit index arithmetic");
    return;
  }
  const float* in_bias = input_epilogue ? input_epilogue->in_bias : nullptr;
  // Four channels a vector: 16 bytes of float32, 8 of a 16-bit type.
  const size_t stored = storage_16bit ? 8 : 16;
  const bool vec4 = p.c_out % 4 == 0 && pack_aligned(x, io.float_input ? 16 : stored) &&
                    pack_aligned(y, stored) && pack_aligned(w, 16) && (!bias || pack_aligned(bias, 16)) &&
                    (!in_bias || pack_aligned(in_bias, 16));
  Geometry g{};
  g.vectors = static_cast<unsigned>(vec4 ? p.c_out / 4 : p.c_out);
  g.h_in = static_cast<unsigned>(p.h_in);
  g.w_in = static_cast<unsigned>(p.w_in);
  g.h_out = static_cast<unsigned>(p.h_out);
  g.w_out = static_cast<unsigned>(p.w_out);
  g.kernel_h = static_cast<int>(p.kernel_h);
  g.kernel_w = static_cast<int>(p.kernel_w);
  g.stride_h = static_cast<int>(p.stride_h);
  g.stride_w = static_cast<int>(p.stride_w);
  g.pad_h = static_cast<int>(p.pad_h);
  g.pad_w = static_cast<int>(p.pad_w);
  g.dilation_h = static_cast<int>(p.dilation_h);
  g.dilation_w = static_cast<int>(p.dilation_w);
  // The tiles' sums for the pooling go to the scratch (16-byte aligned) for global_pool_sum to
  // add; a plane of one tile is its own mean, written straight to the pooled output.
  const int64_t tiles = depthwise_silu_tiles_per_image(p);
  float* const pool_direct = tiles == 1 && pack_aligned(io.pool, 16) ? io.pool : nullptr;
  float* const pool_partial = !io.pool || !depthwise_pools_in_tiles(p) ? nullptr
                              : pool_direct                            ? pool_direct
                              : pack_aligned(io.pool_scratch, 16)      ? io.pool_scratch
                                                                       : nullptr;
  const float pool_divisor = pool_direct ? static_cast<float>(p.h_out * p.w_out) : 1.0f;
  bool pooled = false;
  const auto typed = [&](auto input, auto stored) {
    using SX = decltype(input);
    using S = decltype(stored);
    if (taps_kernel_applies(p, io.activation, input_epilogue))
      launch_taps<SX, S>(stream, p, x, w, bias, y);
    else if (vec4)
      pooled = dispatch<float4, SX, S>(stream, g, p, io.activation, x, w, bias, y, input_epilogue,
                                       pool_partial, pool_divisor);
    else
      dispatch<float, SX, S>(stream, g, p, io.activation, x, w, bias, y, input_epilogue, nullptr, 1.0f);
  };
  if (io.float_input && io.storage == Precision::Fp16)
    typed(0.0f, __half{});
  else if (io.float_input)
    typed(0.0f, __nv_bfloat16{});
  else if (io.storage == Precision::Fp16)
    typed(__half{}, __half{});
  else if (io.storage == Precision::Bf16)
    typed(__nv_bfloat16{}, __nv_bfloat16{});
  else
    typed(0.0f, 0.0f);
  check_launch("depthwise_conv2d_nhwc_kernel");
  if (!io.pool || (pooled && pool_direct)) return;
  if (pooled)
    global_pool_sum(stream, p.n, p.c_out, p.h_out * p.w_out, tiles, io.pool_scratch, io.pool);
  else
    adaptive_avg_pool2d_nhwc(stream, io.storage, p.n, p.c_out, p.h_out, p.w_out, 1, 1, y, io.pool,
                             io.pool_scratch);
}

void depthwise_conv2d_nhwc_f32(cudaStream_t stream, const Conv2dParams& p, const float* x, const float* w,
                               const float* bias, float* y, const DepthwiseInputEpilogue* input_epilogue) {
  depthwise_conv2d_nhwc(stream, p, DepthwiseNhwcIo{}, x, w, bias, y, input_epilogue);
}

}  // namespace aotc::rt::cuda
