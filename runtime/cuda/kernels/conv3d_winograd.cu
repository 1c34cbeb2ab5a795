// conv3d_winograd.cu - 3x3x3 and 1x3x3 stride-1 convolutions by Winograd F(2, 3) or F(4, 3)
// in each dimension whose kernel is 3 (conv3d_winograd_plan.h says which and why). Per chunk
// of images: an input transform writes V (points x c_in x tiles) into scratch, one
// strided-batched GEMM (gemm_cublas.cu, the points its batch) multiplies M_xi = U_xi V_xi,
// and an output transform writes y from M (points x c_out x tiles) with the bias and clamp.
//
// A thread of the input transform takes one (channel, tile) and one point xd along depth: it
// combines the patch's depth planes with row xd of B^T, then transforms the (t + 2)^2 result
// along h and w in registers. A thread of the output transform takes one (channel, tile)
// and one output plane od: row od of A^T over the depth points, then A^T . A along h and w.
// The depth index is the fastest-varying part of the block index, so the blocks that read
// the same patches or products run together and share them in L2.
//
// Non-finite inputs: an output is non-finite where the direct product's is, but a tile's
// transform mixes its whole patch, so other outputs of the same tile may be NaN too (as in
// any Winograd convolution, cuDNN's included).
#include <aotc/rt/cuda/conv3d_winograd_plan.h>
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/pointwise.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

constexpr int kBlock = 128;

// B^T and A^T of F(2, 3) and F(4, 3) (points 0, 1, -1, 2, -2 and infinity), for the depth
// combination, whose row is picked at run time.
__constant__ float kBt2[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
__constant__ float kAt2[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
__constant__ float kBt4[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                 {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
__constant__ float kAt4[4][6] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

// The transforms along one dimension, written out so that no zero coefficient multiplies
// (an infinity times zero would make NaN where the direct product has none).
template <int T>
struct Winograd1d;
template <>
struct Winograd1d<2> {
  static __device__ __forceinline__ void input(const float d[4], float r[4]) {
    r[0] = d[0] - d[2];
    r[1] = d[1] + d[2];
    r[2] = d[2] - d[1];
    r[3] = d[1] - d[3];
  }
  static __device__ __forceinline__ void output(const float m[4], float y[2]) {
    y[0] = m[0] + m[1] + m[2];
    y[1] = m[1] - m[2] - m[3];
  }
  static __device__ __forceinline__ float bt(int row, int col) { return kBt2[row][col]; }
  static __device__ __forceinline__ float at(int row, int col) { return kAt2[row][col]; }
};
template <>
struct Winograd1d<4> {
  static __device__ __forceinline__ void input(const float d[6], float r[6]) {
    const float t1 = d[4] - 4.0f * d[2], t2 = d[3] - 4.0f * d[1];
    const float t3 = d[4] - d[2], t4 = 2.0f * (d[3] - d[1]);
    r[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
    r[1] = t1 + t2;
    r[2] = t1 - t2;
    r[3] = t3 + t4;
    r[4] = t3 - t4;
    r[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
  }
  static __device__ __forceinline__ void output(const float m[6], float y[4]) {
    const float s12 = m[1] + m[2], d12 = m[1] - m[2], s34 = m[3] + m[4], d34 = m[3] - m[4];
    y[0] = m[0] + s12 + s34;
    y[1] = d12 + 2.0f * d34;
    y[2] = s12 + 4.0f * s34;
    y[3] = d12 + 8.0f * d34 + m[5];
  }
  static __device__ __forceinline__ float bt(int row, int col) { return kBt4[row][col]; }
  static __device__ __forceinline__ float at(int row, int col) { return kAt4[row][col]; }
};

struct WinogradShape {
  int in_d, in_h, in_w, out_d, out_h, out_w;
  int pad_d, pad_h, pad_w;
  int tiles_d, tiles_h, tiles_w;  // of one image
  int64_t tiles;                  // of the chunk
  int64_t c_in, c_out;
};

struct TilePos {
  int64_t image;
  int d, h, w;
};
__device__ __forceinline__ TilePos tile_pos(const WinogradShape& s, int64_t tile) {
  TilePos t;
  t.w = static_cast<int>(tile % s.tiles_w);
  tile /= s.tiles_w;
  t.h = static_cast<int>(tile % s.tiles_h);
  tile /= s.tiles_h;
  t.d = static_cast<int>(tile % s.tiles_d);
  t.image = tile / s.tiles_d;
  return t;
}

// v[xi][c][tile], xi = (xd * A + xh) * A + xw; kDepth3: the depth kernel is 3 (else 1).
template <int T, bool kDepth3>
__global__ void __launch_bounds__(kBlock)
    winograd_input_kernel(WinogradShape s, const float* __restrict__ x, float* __restrict__ v) {
  constexpr int A = T + 2, AD = kDepth3 ? A : 1;
  const int xd = static_cast<int>(blockIdx.x % AD);
  const int64_t i = static_cast<int64_t>(blockIdx.x / AD) * kBlock + threadIdx.x;
  if (i >= s.c_in * s.tiles) return;
  const int64_t c = i / s.tiles, tile = i - c * s.tiles;
  const TilePos t = tile_pos(s, tile);
  const int64_t plane = static_cast<int64_t>(s.in_h) * s.in_w;
  const float* const xc = x + (t.image * s.c_in + c) * s.in_d * plane;
  const int d0 = kDepth3 ? t.d * T - s.pad_d : t.d, h0 = t.h * T - s.pad_h, w0 = t.w * T - s.pad_w;
  float e[A][A];  // the depth planes combined with row xd of B^T
#pragma unroll
  for (int r = 0; r < A; ++r)
#pragma unroll
    for (int q = 0; q < A; ++q) e[r][q] = 0.0f;
#pragma unroll
  for (int z = 0; z < AD; ++z) {
    const float f = kDepth3 ? Winograd1d<T>::bt(xd, z) : 1.0f;
    const int id = d0 + z;
    if (f == 0.0f || id < 0 || id >= s.in_d) continue;
    const float* const xp = xc + id * plane;
#pragma unroll
    for (int r = 0; r < A; ++r) {
      const int ih = h0 + r;
      if (ih < 0 || ih >= s.in_h) continue;
#pragma unroll
      for (int q = 0; q < A; ++q) {
        const int iw = w0 + q;
        if (iw >= 0 && iw < s.in_w) e[r][q] = fmaf(f, xp[static_cast<int64_t>(ih) * s.in_w + iw], e[r][q]);
      }
    }
  }
  float rows[A][A];  // along w
#pragma unroll
  for (int r = 0; r < A; ++r) Winograd1d<T>::input(e[r], rows[r]);
  const int64_t xi_stride = s.c_in * s.tiles;
  float* const out = v + static_cast<int64_t>(xd) * A * A * xi_stride + c * s.tiles + tile;
#pragma unroll
  for (int q = 0; q < A; ++q) {  // along h
    float col[A], tr[A];
#pragma unroll
    for (int r = 0; r < A; ++r) col[r] = rows[r][q];
    Winograd1d<T>::input(col, tr);
#pragma unroll
    for (int r = 0; r < A; ++r) out[(r * A + q) * xi_stride] = tr[r];
  }
}

// y from m[xi][o][tile], with bias (or null) and clamp.
template <int T, bool kDepth3>
__global__ void __launch_bounds__(kBlock)
    winograd_output_kernel(WinogradShape s, const float* __restrict__ m, const float* __restrict__ bias,
                           float clamp_lo, float clamp_hi, float* __restrict__ y) {
  constexpr int A = T + 2, AD = kDepth3 ? A : 1, TD = kDepth3 ? T : 1;
  const int od = static_cast<int>(blockIdx.x % TD);
  const int64_t i = static_cast<int64_t>(blockIdx.x / TD) * kBlock + threadIdx.x;
  if (i >= s.c_out * s.tiles) return;
  const int64_t o = i / s.tiles, tile = i - o * s.tiles;
  const TilePos t = tile_pos(s, tile);
  const int z = kDepth3 ? t.d * T + od : t.d;
  if (z >= s.out_d) return;
  const int64_t xi_stride = s.c_out * s.tiles;
  const float* const mp = m + o * s.tiles + tile;
  float e[A][A];  // the depth points combined with row od of A^T
#pragma unroll
  for (int r = 0; r < A; ++r)
#pragma unroll
    for (int q = 0; q < A; ++q) e[r][q] = 0.0f;
#pragma unroll
  for (int xd = 0; xd < AD; ++xd) {
    const float f = kDepth3 ? Winograd1d<T>::at(od, xd) : 1.0f;
    if (f == 0.0f) continue;
#pragma unroll
    for (int r = 0; r < A; ++r)
#pragma unroll
      for (int q = 0; q < A; ++q) e[r][q] = fmaf(f, mp[((xd * A + r) * A + q) * xi_stride], e[r][q]);
  }
  float rows[A][T];  // along w
#pragma unroll
  for (int r = 0; r < A; ++r) Winograd1d<T>::output(e[r], rows[r]);
  const float b = bias ? bias[o] : 0.0f;
  float* const yp = y + ((t.image * s.c_out + o) * s.out_d + z) * static_cast<int64_t>(s.out_h) * s.out_w;
#pragma unroll
  for (int q = 0; q < T; ++q) {  // along h
    const int ow = t.w * T + q;
    if (ow >= s.out_w) break;
    float col[A], out[T];
#pragma unroll
    for (int r = 0; r < A; ++r) col[r] = rows[r][q];
    Winograd1d<T>::output(col, out);
#pragma unroll
    for (int r = 0; r < T; ++r) {
      const int oh = t.h * T + r;
      if (oh < s.out_h)
        yp[static_cast<int64_t>(oh) * s.out_w + ow] = clamp_apply(out[r] + b, clamp_lo, clamp_hi);
    }
  }
}

template <int T, bool kDepth3>
void launch(cudaStream_t stream, const WinogradShape& s, const float* x, const float* bias, float clamp_lo,
            float clamp_hi, float* v, float* m, float* y, const Exec& ex, const BatchedGemmParams& bp,
            const float* u) {
  constexpr unsigned AD = kDepth3 ? T + 2 : 1, TD = kDepth3 ? T : 1;
  const int64_t in_blocks = (s.c_in * s.tiles + kBlock - 1) / kBlock;
  winograd_input_kernel<T, kDepth3><<<static_cast<unsigned>(in_blocks) * AD, kBlock, 0, stream>>>(s, x, v);
  check_launch("winograd_input_kernel");
  batched_gemm_f32(ex, bp, u, v, nullptr, m);
  const int64_t out_blocks = (s.c_out * s.tiles + kBlock - 1) / kBlock;
  winograd_output_kernel<T, kDepth3>
      <<<static_cast<unsigned>(out_blocks) * TD, kBlock, 0, stream>>>(s, m, bias, clamp_lo, clamp_hi, y);
  check_launch("winograd_output_kernel");
}

}  // namespace

void conv3d_winograd_f32(const Exec& ex, const ConvNdParams& p, int64_t tile, const float* x, const float* u,
                         const float* bias, float* y, float* scratch) {
  if (p.n <= 0 || p.c_out <= 0 || conv_nd_volume(p.out) <= 0) return;
  if (!conv3d_winograd_applies(p) || (tile != 2 && tile != 4)) {
    note_error("conv3d_winograd_f32",
               "the convolution is not a stride-1 3x3x3 or 1x3x3 one (or the tile not 2 or 4)");
    return;
  }
  const int64_t chunk = conv3d_winograd_chunk_images(p, tile);
  const int64_t image_tiles = conv3d_winograd_image_tiles(p, tile), points = conv3d_winograd_points(p, tile);
  if (chunk <= 0) {
    note_error("conv3d_winograd_f32", "one image's transformed input exceeds the scratch budget");
    return;
  }
  constexpr int64_t kIntMax = (int64_t{1} << 31) - 1;
  for (int d = 0; d < 3; ++d)
    if (p.in[d] > kIntMax / 8 || p.out[d] > kIntMax / 8) {
      note_error("conv3d_winograd_f32", "the convolution is too large for the Winograd kernels");
      return;
    }
  // Block indices are 32-bit: the transforms' threads a chunk, times its points along depth.
  if ((p.c_in > p.c_out ? p.c_in : p.c_out) * chunk * image_tiles / kBlock * (tile + 2) > kIntMax) {
    note_error("conv3d_winograd_f32", "the convolution is too large for the Winograd kernels");
    return;
  }
  WinogradShape s{};
  s.in_d = static_cast<int>(p.in[0]), s.in_h = static_cast<int>(p.in[1]), s.in_w = static_cast<int>(p.in[2]);
  s.out_d = static_cast<int>(p.out[0]), s.out_h = static_cast<int>(p.out[1]),
  s.out_w = static_cast<int>(p.out[2]);
  s.pad_d = static_cast<int>(p.pad[0]), s.pad_h = static_cast<int>(p.pad[1]),
  s.pad_w = static_cast<int>(p.pad[2]);
  const int64_t ed = conv3d_winograd_tile_extent(p, tile, 0);
  s.tiles_d = static_cast<int>((p.out[0] + ed - 1) / ed);
  s.tiles_h = static_cast<int>((p.out[1] + tile - 1) / tile);
  s.tiles_w = static_cast<int>((p.out[2] + tile - 1) / tile);
  s.c_in = p.c_in, s.c_out = p.c_out;
  const float* const b = p.has_bias ? bias : nullptr;
  const int64_t vol_in = conv_nd_volume(p.in), vol_out = conv_nd_volume(p.out);
  const bool depth3 = p.kernel[0] == 3;
  for (int64_t img0 = 0; img0 < p.n; img0 += chunk) {
    const int64_t images = p.n - img0 < chunk ? p.n - img0 : chunk;
    s.tiles = images * image_tiles;
    float* const v = scratch;
    float* const m = scratch + points * p.c_in * s.tiles;
    // M_xi (c_out x tiles) = U_xi (c_out x c_in) V_xi (c_in x tiles), the points a batch.
    BatchedGemmParams bp;
    bp.gemm.m = p.c_out;
    bp.gemm.n = s.tiles;
    bp.gemm.k = p.c_in;
    bp.gemm.lda = p.c_in;
    bp.gemm.ldb = s.tiles;
    bp.gemm.ldc = s.tiles;
    bp.batch = points;
    bp.stride_a = p.c_out * p.c_in;
    bp.stride_b = p.c_in * s.tiles;
    bp.stride_c = p.c_out * s.tiles;
    bp.stride_bias = 0;
    const float* const xs = x + img0 * p.c_in * vol_in;
    float* const ys = y + img0 * p.c_out * vol_out;
    const auto run = tile == 4 ? (depth3 ? launch<4, true> : launch<4, false>)
                               : (depth3 ? launch<2, true> : launch<2, false>);
    run(ex.stream, s, xs, b, p.clamp_lo, p.clamp_hi, v, m, ys, ex, bp, u);
  }
}

}  // namespace aotc::rt::cuda
