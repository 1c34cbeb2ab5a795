// conv2d_plan.h - which path the CUDA convolution takes and the arena scratch it needs:
// shared by the runtime (runtime/cuda/kernels/) and the compiler, which picks the path and
// plans the scratch (compiler/ops/cuda/conv2d_cuda.cpp), so the two cannot disagree. No
// CUDA headers.
#pragma once

#include <aotc/rt/cuda/pool2d_plan.h>
#include <aotc/rt/cuda/precision.h>
#include <aotc/rt/kernels.h>

#include <algorithm>
#include <cstdint>

namespace aotc::rt::cuda {

// The paths of a convolution:
//   - Pointwise: a 1x1, stride-1, unpadded convolution is a cuBLAS GEMM on the input itself;
//   - Im2colGemm: other ungrouped ones unfold the input (im2col) into scratch, then one
//     cuBLAS GEMM for all images;
//   - Depthwise, Direct: depthwise and grouped ones are direct kernels, epilogue fused;
//   - ImplicitGemm: one tensor-core kernel (implicit_gemm_conv2d.cu) that gathers the
//     unfolded input as it goes (no im2col pass) and applies bias, residual and clamp as it
//     writes (no epilogue pass); for tf32, fp16 and bf16.
enum class Conv2dPath : int32_t {
  Pointwise = 0,
  Im2colGemm = 1,
  Depthwise = 2,
  Direct = 3,
  ImplicitGemm = 4
};

// The cuBLAS and direct paths (every precision).
inline Conv2dPath conv2d_path(const Conv2dParams& p) {
  if (conv2d_is_depthwise(p)) return Conv2dPath::Depthwise;
  if (p.groups != 1) return Conv2dPath::Direct;
  if (p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 &&
      p.pad_w == 0)
    return Conv2dPath::Pointwise;
  return Conv2dPath::Im2colGemm;
}

// ---------------------------------------------------------------- the implicit GEMM
// The product is C (c_out x n * h_out * w_out) = W (c_out x K) X' (K x ...), K = c_in * kh *
// kw, in tiles of kImplicitTileM x kImplicitTileN, kImplicitTileK deep, one block each.
constexpr int64_t kImplicitTileM = 64;
constexpr int64_t kImplicitTileN = 64;
constexpr int64_t kImplicitTileK = 32;
// Fewer tiles than this leave most of a GPU idle (an H100 has 132 multiprocessors): the
// kernel then splits K among blocks, which write partial sums to scratch for a reduction.
constexpr int64_t kImplicitMinBlocks = 256;

struct ImplicitGemmShape {
  int64_t m, n, k;
};
inline ImplicitGemmShape implicit_gemm_shape(const Conv2dParams& p) {
  return {p.c_out, p.n * p.h_out * p.w_out, p.c_in * p.kernel_h * p.kernel_w};
}

// Whether the kernel can take p: ungrouped, and every index within 32 bits.
inline bool implicit_gemm_fits(const Conv2dParams& p) {
  const ImplicitGemmShape s = implicit_gemm_shape(p);
  constexpr int64_t kMax = (int64_t{1} << 31) - 1;
  return p.groups == 1 && s.m > 0 && s.n > 0 && s.k > 0 && p.n * p.c_in * p.h_in * p.w_in <= kMax &&
         s.m * s.n <= kMax / 8 && s.m * s.k <= kMax;
}

// How many ways K is split (1: none): enough blocks for kImplicitMinBlocks, each split at
// least 4 tiles deep; the count is the effective one (no empty split).
inline int64_t implicit_gemm_splits(const Conv2dParams& p) {
  const ImplicitGemmShape s = implicit_gemm_shape(p);
  const int64_t blocks =
      ((s.m + kImplicitTileM - 1) / kImplicitTileM) * ((s.n + kImplicitTileN - 1) / kImplicitTileN);
  const int64_t k_tiles = (s.k + kImplicitTileK - 1) / kImplicitTileK;
  if (blocks >= kImplicitMinBlocks || k_tiles < 8) return 1;
  int64_t splits = (kImplicitMinBlocks + blocks - 1) / blocks;
  if (splits > k_tiles / 4) splits = k_tiles / 4;
  if (splits > 8) splits = 8;  // the partial sums cost memory traffic of their own
  if (splits < 1) splits = 1;
  const int64_t per_split = (k_tiles + splits - 1) / splits;
  return (k_tiles + per_split - 1) / per_split;
}

// The path of a convolution at a precision: the cuBLAS and direct paths, or the implicit
// GEMM where it fits when `implicit_gemm` asks for it (AOTC_CUDA_IMPLICIT_GEMM=1 at compile
// time; tensor-core precisions only, as it rounds). It is not the default: measured on the
// H100 it is slower than im2col + cuBLAS (resnet50 batch 32 fp16: 10.5 ms against 8.1 ms
// at tf32 through cuBLAS; bench/results_gpu.md).
inline Conv2dPath conv2d_path(const Conv2dParams& p, Precision precision, bool implicit_gemm) {
  const Conv2dPath base = conv2d_path(p);
  if (base == Conv2dPath::Depthwise || base == Conv2dPath::Direct) return base;
  if (implicit_gemm && precision != Precision::Fp32 && implicit_gemm_fits(p)) return Conv2dPath::ImplicitGemm;
  return base;
}

// Whether the path's GEMM takes 16-bit operands at this precision (fp16, bf16): the weights
// are converted at compile time, the activations as the path stages them (im2col, or one
// rounding pass for a 1x1 convolution).
inline bool conv2d_16bit_operands(Conv2dPath path, Precision precision) {
  return (precision == Precision::Fp16 || precision == Precision::Bf16) &&
         (path == Conv2dPath::Pointwise || path == Conv2dPath::Im2colGemm ||
          path == Conv2dPath::ImplicitGemm);
}

// Arena scratch of a convolution on `path`: the unfolded input of every image (im2col), in
// float32 or 16 bits; the input rounded to 16 bits (1x1 with 16-bit operands); or the
// partial sums of a split K (implicit GEMM).
inline int64_t conv2d_scratch_bytes(const Conv2dParams& p, Conv2dPath path, bool operands_16bit) {
  const int64_t element = operands_16bit ? 2 : static_cast<int64_t>(sizeof(float));
  if (path == Conv2dPath::Im2colGemm)
    return p.n * p.c_in * p.kernel_h * p.kernel_w * p.h_out * p.w_out * element;
  if (path == Conv2dPath::Pointwise) return operands_16bit ? p.n * p.c_in * p.h_in * p.w_in * element : 0;
  if (path == Conv2dPath::ImplicitGemm) {
    const int64_t splits = implicit_gemm_splits(p);
    const ImplicitGemmShape s = implicit_gemm_shape(p);
    return splits > 1 ? splits * s.m * s.n * static_cast<int64_t>(sizeof(float)) : 0;
  }
  return 0;
}

// Whether depthwise_conv2d_f32's own kernel takes the whole convolution (its 2-d grid: one
// row per image and channel), which its input epilogue needs (the generic grouped kernel it
// falls back to has none): fold_depthwise_input.cpp.
inline bool depthwise_input_epilogue_fits(const Conv2dParams& p) {
  return p.n * p.c_out <= 65535 && p.h_out * p.w_out <= (int64_t{1} << 30) &&
         p.h_in * p.w_in <= (int64_t{1} << 30);
}

// Whether depthwise_conv2d_nhwc takes its taps kernels (a thread a channel, each input value
// loaded and widened once): a 7x7 window at stride 1, not
// dilated, with no activation after the bias and no input epilogue. Such a layer reads its
// input 16-bit where store_activations_16bit.cpp keeps it so.
inline bool depthwise_taps_kernel_applies(const Conv2dParams& p, bool activation, bool input_epilogue) {
  return !activation && !input_epilogue && p.kernel_h == 7 && p.kernel_w == 7 && p.stride_h == 1 &&
         p.stride_w == 1 && p.dilation_h == 1 && p.dilation_w == 1;
}

// depthwise_conv2d_nhwc's shared-memory tiles for an input SiLU: 8 output rows of 8 outputs
// (4 at stride 2) for 128 bytes of channels; the tiles of one image's output plane.
inline constexpr int64_t kDepthwiseSiluTileRows = 8;
constexpr int64_t depthwise_silu_tile_width(int64_t stride) { return stride == 1 ? 8 : 4; }
inline int64_t depthwise_silu_tiles_per_image(const Conv2dParams& p) {
  const int64_t width = depthwise_silu_tile_width(p.stride_w);
  return (p.w_out + width - 1) / width * ((p.h_out + kDepthwiseSiluTileRows - 1) / kDepthwiseSiluTileRows);
}

// Whether depthwise_conv2d_nhwc applies an input SiLU with those tiles (once a value) rather
// than per value read: a square 3, 5 or 7 window (7 at stride 1) at stride 1 or 2 in both
// directions, undilated, a channel count a multiple of 8 (16 bytes of a 16-bit type), grid
// dimensions in range; the tensors' alignment, and whether the tiles are enough to fill the
// GPU (else per value read), are checked at run time.
// fold_depthwise_input.cpp moves a GEMM's SiLU into the depthwise convolution only then.
inline bool depthwise_silu_input_tiled(const Conv2dParams& p) {
  const bool window = p.kernel_h == p.kernel_w && p.stride_h == p.stride_w && p.dilation_h == 1 &&
                      p.dilation_w == 1 &&
                      ((p.stride_w == 1 && (p.kernel_w == 3 || p.kernel_w == 5 || p.kernel_w == 7)) ||
                       (p.stride_w == 2 && (p.kernel_w == 3 || p.kernel_w == 5)));
  return window && p.c_out % 8 == 0 && p.c_out > 0 && p.c_out / 32 < 65535 && p.n > 0 && p.h_out > 0 &&
         p.w_out > 0 && p.n <= INT32_MAX && depthwise_silu_tiles_per_image(p) <= INT32_MAX / p.n;
}

// Whether depthwise_conv2d_nhwc, pooling its output as well (DepthwiseNhwcIo::pool), adds
// each input-SiLU tile's outputs per channel into the scratch (a float each, in 32-bit
// offsets) for a second step to add up; otherwise a global pooling follows the convolution.
inline bool depthwise_pools_in_tiles(const Conv2dParams& p) {
  return depthwise_silu_input_tiled(p) && depthwise_silu_tiles_per_image(p) * p.n <= INT32_MAX / p.c_out;
}
// The scratch it needs then, for either way (pool2d_plan.h for the second).
inline int64_t depthwise_pool_scratch_bytes(const Conv2dParams& p) {
  const int64_t tiles = depthwise_pools_in_tiles(p) ? p.n * depthwise_silu_tiles_per_image(p) * p.c_out *
                                                          static_cast<int64_t>(sizeof(float))
                                                    : 0;
  return std::max(tiles, adaptive_avg_pool2d_nhwc_scratch_bytes(p.n, p.c_out, p.h_out, p.w_out, 1, 1));
}

}  // namespace aotc::rt::cuda
