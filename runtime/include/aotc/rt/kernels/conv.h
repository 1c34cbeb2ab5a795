// kernels/conv.h - the 2-d convolution kernels and the rules that choose between them.
#pragma once

#include <cstdint>

namespace aotc::rt {

class ThreadPool;

// ---------------------------------------------------------------- convolution
struct Conv2dParams {
  int64_t n = 1, c_in = 0, h_in = 0, w_in = 0;
  int64_t c_out = 0, h_out = 0, w_out = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;  // symmetric zero padding (top = bottom, left = right)
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  bool has_bias = false;
  float clamp_lo = -__builtin_inff();
  float clamp_hi = __builtin_inff();
};

// Depthwise: one group per input channel, as many outputs as inputs.
inline bool conv2d_is_depthwise(const Conv2dParams& p) {
  return p.groups == p.c_in && p.groups == p.c_out && p.groups > 1;
}

// Depthwise on narrow planes (at most 16 output and 32 input columns, kernel at most 16
// wide): on AVX-512 a whole output row of one channel per vector, straight from NCHW
// (conv2d_depthwise_rows.cpp). On 14 x 14 and 7 x 7 planes 0.5-0.75x the time of the
// 8-channel path, which interleaves and transposes; for a host with AVX-512 the compiler
// then leaves a 1x1 expansion before such a layer apart (fuse_expand_depthwise).
inline bool conv2d_depthwise_rows_fits(const Conv2dParams& p) {
  return conv2d_is_depthwise(p) && p.w_out >= 1 && p.w_out <= 16 && p.w_in <= 32 && p.kernel_w >= 1 &&
         p.kernel_w <= 16 && p.kernel_h >= 1 && p.stride_w >= 1 && p.stride_h >= 1 && p.dilation_w >= 1 &&
         p.dilation_h >= 1 && p.h_out >= 1;
}

// A 1x1 stride-1 convolution is a plain GEMM on its input: on the implicit GEMM up to 256
// input channels, on Eigen's GEMM above and for expansions of 6x or more from over 64 inputs.
// Why: with the micro-kernel's AVX2 tiles Eigen stays faster with many inputs on small
// planes, and inside the model on mobilenet_v2's large expansions, hence the exception
// (bench/pointwise_paths.cpp, bench/results_cpu.md).
// That rule holds where the micro-kernel runs its AVX2 tiles. Where it runs AVX-512 tiles
// (decided at run time, conv2d.cpp), every 1x1 stride-1 layer takes the implicit GEMM, which
// is then faster on nearly all of them (bench/results_cpu.md). So the scratch in layouts.h covers
// both paths.
inline bool conv2d_pointwise_on_eigen(const Conv2dParams& p) {
  const bool pointwise = p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                         p.pad_h == 0 && p.pad_w == 0;
  if (!pointwise || conv2d_is_depthwise(p) || p.groups <= 0) return false;
  const int64_t c_in = p.c_in / p.groups, c_out = p.c_out / p.groups;
  return c_in > 256 || (c_in > 64 && c_out >= 6 * c_in);
}

// x: n x c_in x h_in x w_in; w: c_out x (c_in/groups) x kernel_h x kernel_w;
// bias: c_out (when has_bias); y: n x c_out x h_out x w_out; residual: null, or y's shape,
// added before the clamp (y = clamp(conv + bias + residual)); it may not overlap y
// (the compiler's fuse_conv_residual pass passes the skip of a ResNet block).
void conv2d_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w, const float* bias,
                const float* residual, float* y, float* scratch);

// ---- A 1x1 stride-1 convolution with the positions as the tile's rows
// (conv2d_pointwise_rows.cpp; the compiler's select_pointwise_rows pass picks it for small
// planes): w_packed is the weight (c_out x c_in) as conv2d_pointwise_rows_pack packs it;
// x, bias, residual and y as conv2d_f32 takes them. No scratch. Tiles of
// pointwise_rows::kRows positions (two of them on AVX-512), which divides the planes of the
// 224 x 224 CNNs (7 x 2^k).
inline bool conv2d_pointwise_rows_applies(const Conv2dParams& p) {
  return p.groups == 1 && p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
         p.pad_h == 0 && p.pad_w == 0 && p.dilation_h == 1 && p.dilation_w == 1 && p.h_out == p.h_in &&
         p.w_out == p.w_in && p.n > 0 && p.c_in > 0 && p.c_out > 0 && p.h_out > 0 && p.w_out > 0;
}
// Where the compiler takes it: planes of at most 28 x 28 and a depth of at least 192 (the
// tile's transposed store is paid once per depth), and whole 16-channel panels (a panel of 8
// in 16 lanes is slower than the implicit GEMM); there it beats the implicit GEMM per layer,
// and larger planes stay on it (bench/pointwise_rows.cpp, bench/results_cpu.md). Only for a
// model built for at most kPointwiseRowsMaxThreads threads (aotc --cpu-threads; 0: not said,
// taken as few). The compiler asks only where the core favours this kernel at all (AMD Zen
// 4: ahead at 1 and 2 threads, the only counts measured there); above that, the implicit
// GEMM is kept, as on the cores where it is ahead at every count (bench/results_cpu.md).
constexpr int kPointwiseRowsMaxThreads = 7;
inline bool conv2d_pointwise_rows_prefers(const Conv2dParams& p, int threads = 0) {
  return threads <= kPointwiseRowsMaxThreads && conv2d_pointwise_rows_applies(p) &&
         p.h_out * p.w_out <= 28 * 28 && p.c_in >= 192 && p.c_out >= 32 && p.c_out % 16 == 0;
}
void conv2d_pointwise_rows_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w_packed,
                               const float* bias, const float* residual, float* y);

// ---- A 1x1 expansion fused with the depthwise convolution that alone reads it
// y = dw(pw(x)), as in mobilenet_v2's and efficientnet's inverted residual blocks (the
// compiler's fuse_expand_depthwise pass). The expanded tensor (c_mid = 4-6x the block's
// channels at full resolution) is never written to memory: each thread computes a chunk
// of its channels a few rows at a time into a ring of rows in its scratch, position-major
// (8 channels per vector, as the depthwise reads them), and the depthwise reads them there.
// Each expanded row is computed once (the ring keeps the rows that the next output rows
// share). pw: the 1x1 stride-1 convolution c_in -> c_mid with its bias and clamp; dw: the
// depthwise convolution over c_mid channels with its geometry, bias and clamp.
// w1: pw's weight (c_mid x c_in) as gemm_prepack_weights packs it transposed (k = c_in,
// n = c_mid); w2: dw's weight (c_mid x taps), read in place. The pool's thread scratch
// must hold conv2d_expand_depthwise_thread_scratch_bytes (the compiler plans it): the
// kernel has no path without its ring. expand_silu: silu on the expansion's output (after
// its clamp), as efficientnet's blocks have between the two convolutions.
void conv2d_expand_depthwise_f32(ThreadPool& pool, const Conv2dParams& pw, const Conv2dParams& dw,
                                 const float* x, const float* w1_packed, const float* b1, const float* w2,
                                 const float* b2, float* y, bool expand_silu = false);

// ---- Winograd F(2x2, 3x3) and F(4x4, 3x3) for 3x3, stride 1, undilated, ungrouped convolutions
// Each t x t output tile (t = 2 or 4: the "tile") is A^T [ (G g G^T) . (B^T d B) ] A over the
// (t + 2) x (t + 2) input patch d that it reads: per tile and channel pair (t + 2)^2
// multiplies instead of 9 t^2, done as (t + 2)^2 GEMMs (one per point xi of the transformed
// domain) of c_out x tiles x c_in. The weight transform U = G g G^T runs at compile time
// (the compiler's select_winograd pass). F(2x2, 3x3) with vector transforms takes less time
// per layer than im2col + Eigen (and than the implicit GEMM at 56 x 56), least ahead on 7 x 7
// planes, which the 4 x 4 tiles overhang (bench/results_cpu.md). F(4x4, 3x3) does 2.25
// multiplies per output and channel pair where F(2x2, 3x3)
// does 4, for weights 36/9 instead of 16/9 the size of the 3x3 ones and 6x6 tiles that
// overhang small planes more (conv2d_winograd_tile picks).
// Used from 16 input channels: the input transform costs per input channel and tile, the
// output transform per output channel and tile, the products per channel pair and tile:
// with fewer input channels the output transform outweighs a short product and the implicit
// GEMM is faster (bench/winograd_tiles.cpp, bench/results_cpu.md).
constexpr int64_t kWinogradMinInputChannels = 16;
inline bool conv2d_winograd_applies(const Conv2dParams& p) {
  return p.kernel_h == 3 && p.kernel_w == 3 && p.stride_h == 1 && p.stride_w == 1 && p.dilation_h == 1 &&
         p.dilation_w == 1 && p.groups == 1 && p.c_in >= kWinogradMinInputChannels && p.c_out >= 1 &&
         p.pad_h <= 2 && p.pad_w <= 2;
}
// Tiles per image.
inline int64_t conv2d_winograd_tiles(const Conv2dParams& p, int64_t tile) {
  return ((p.h_out + tile - 1) / tile) * ((p.w_out + tile - 1) / tile);
}
// Images whose tiles go through one set of products together: enough for 128 columns where
// the batch has them. Per image, 7 x 7 planes (16 tiles of 2 x 2) fill one 16-column panel
// per product, and every image reads all the transformed weights again (16.8 MB for a
// 512-channel layer).
constexpr int64_t kWinogradGroupColumns = 128;
inline int64_t conv2d_winograd_group(const Conv2dParams& p, int64_t tile) {
  const int64_t tiles = conv2d_winograd_tiles(p, tile);
  const int64_t group = tiles > 0 ? (kWinogradGroupColumns + tiles - 1) / tiles : 1;
  return group < p.n ? group : (p.n > 0 ? p.n : 1);
}
// The output tile the compiler uses for a convolution that Winograd applies to: 4 where a
// group of images has 25 tiles of 4 x 4 or more (a 20 x 20 plane at batch 1), or one image
// has 16 or more (a 13 x 13 to 16 x 16 plane), else 2.
// Why: F(4x4) takes less time per layer and in whole models wherever the tiles fill the
// 16-column panels, but few columns leave the panels part empty and read the transformed
// weights, 36/16 the size, for few tiles; small planes stayed slower on F(4x4) even at batch
// 4 and 6, hence the rule per image (bench/winograd_tiles.cpp, bench/results_cpu.md). The
// larger transformed weights make the .so larger.
constexpr int64_t kWinogradF4MinColumns = 25;
constexpr int64_t kWinogradF4MinImageTiles = 16;
inline int64_t conv2d_winograd_tile(const Conv2dParams& p) {
  const int64_t tiles = conv2d_winograd_tiles(p, 4);
  return tiles >= kWinogradF4MinImageTiles || conv2d_winograd_group(p, 4) * tiles >= kWinogradF4MinColumns
             ? 4
             : 2;
}
// x: n x c_in x h_in x w_in; u from conv2d_winograd_weights with the same tile (2 or 4);
// bias, residual, y as for conv2d_f32.
void conv2d_winograd_f32(ThreadPool& pool, const Conv2dParams& p, int64_t tile, const float* x,
                         const float* u, const float* bias, const float* residual, float* y, float* scratch);

}  // namespace aotc::rt
