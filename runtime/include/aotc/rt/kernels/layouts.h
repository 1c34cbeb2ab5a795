// kernels/layouts.h - what compiler and runtime agree on: packed weight layouts, blockings, scratch sizes.
#pragma once

#include <aotc/rt/kernels/conv.h>
#include <aotc/rt/kernels/gemm.h>
#include <aotc/rt/kernels/quantized.h>
#include <aotc/rt/kernels/sequence.h>
#include <aotc/rt/kernels/spatial.h>

#include <cstdint>

namespace aotc::rt {

// ---------------------------------------------------------------- GEMM
// ---- GEMM packing scratch
// Eigen's GEMM copies ("packs") an mc x kc panel of its left operand and a kc x nc panel of
// its right operand into contiguous buffers before multiplying. The kernels never let it
// allocate them: each thread of the context's pool packs into its own part of the arena
// (ThreadPool::thread_scratch), whose size the compiler plans with *_thread_scratch_bytes()
// below. The panels are capped so that this memory stays bounded for any shape; within
// the caps, the block sizes are Eigen's own choice for the machine the model runs on.
//
// Eigen computes a row-major C (rows x cols) as the column-major C^T = B^T A^T, so its
// "rows" are our columns: gemm_pack_bytes takes the product as Eigen sees it.
namespace gemm_pack {
constexpr int64_t kMaxKc = 320;         // panel depth (Eigen's own cap for threaded products)
constexpr int64_t kMaxA = 262144;       // floats in the left panel mc x kc (1 MiB)
constexpr int64_t kMaxB = 196608;       // floats in the right panel kc x nc (768 KiB, Eigen's bound)
constexpr int64_t kGemvMaxDim = 16384;  // matrix-vector products up to this size need no packing
constexpr int64_t kAlign = 64;          // each panel starts on a cache line
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t align_up(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
}  // namespace gemm_pack

// True when a rows x cols x depth block (our orientation: C is rows x cols) goes through
// Eigen's packing GEMM; otherwise Eigen computes it coefficient-wise (tiny products) or
// as a matrix-vector product, neither of which packs (a vector temporary of at most
// kGemvMaxDim floats lives on the stack). A product scaled by alpha != 1 always packs:
// Eigen would evaluate alpha * A into a heap temporary for the other two.
inline bool gemm_block_packs(int64_t rows, int64_t cols, int64_t depth, float alpha) {
  using namespace gemm_pack;
  if (rows <= 0 || cols <= 0 || depth <= 0) return false;
  if (alpha != 1.0f) return true;
  if (rows + cols + depth < 20) return false;
  if ((rows == 1 || cols == 1) && max(rows, max(cols, depth)) <= kGemvMaxDim) return false;
  return true;
}

// Bytes of packing buffers for any block of a product that Eigen sees as rows x cols x
// depth (both panels, each 64-byte aligned). Monotone in each dimension, so the bound for
// a whole product covers every block a thread computes of it.
inline int64_t gemm_pack_bytes(int64_t rows, int64_t cols, int64_t depth) {
  using namespace gemm_pack;
  if (rows <= 0 || cols <= 0 || depth <= 0) return 0;
  const int64_t kc = min(depth, kMaxKc);
  const int64_t a = min(rows * kc, kMaxA);
  const int64_t b = min(cols * kc, kMaxB);
  return align_up(a * static_cast<int64_t>(sizeof(float))) +
         align_up(b * static_cast<int64_t>(sizeof(float)));
}

// Per-thread scratch of gemm_f32 (ThreadPool::thread_scratch_bytes must be at least this).
inline int64_t gemm_thread_scratch_bytes(const GemmParams& p) {
  if (!gemm_block_packs(p.m, p.n, p.k, p.alpha)) return 0;
  return gemm_pack_bytes(p.n, p.m, p.k);
}

// Per-thread scratch of batched_gemm_f32: that of one of its products.
inline int64_t batched_gemm_thread_scratch_bytes(const BatchedGemmParams& p) {
  return p.batch > 0 ? gemm_thread_scratch_bytes(p.gemm) : 0;
}

// ---------------------------------------------------------------- convolution
// Arena scratch: the whole packed column matrix (depth x n rounded up to 16) of one
// image-group, for products small enough (<= 2 MiB) that the threads may split the
// output channels between them: the columns are then packed once, by all threads
// together, instead of by each thread for itself (a larger matrix read back from L3 cost
// more than packing twice). 0 for depthwise and larger products.
namespace gemm_conv {
constexpr int64_t kMaxPrepackFloats = 1 << 19;
}  // namespace gemm_conv
inline int64_t conv2d_scratch_bytes(const Conv2dParams& p) {
  if (conv2d_is_depthwise(p) || p.groups <= 0) return 0;
  const int64_t k = (p.c_in / p.groups) * p.kernel_h * p.kernel_w;
  const int64_t floats = k * ((p.h_out * p.w_out + 15) / 16 * 16);
  return floats <= gemm_conv::kMaxPrepackFloats ? floats * static_cast<int64_t>(sizeof(float)) : 0;
}

// Blocking of the implicit-GEMM convolution (conv2d_gemm.cpp) for a product of depth k and
// n output positions: depth blocks of kc <= kMaxKc (equal lengths), and column blocks of nc
// (a multiple of 16) whose packed kc x nc floats stay within kBlockFloats (256 KiB, half the L2).
// kMaxKc 512 rather than 256 (a 6 x 512 strip of the broadcast operand, 12 KiB, still stays
// in L1): fewer passes over C per tile, which made whole models faster with the sums
// unchanged bit for bit, the depth still summed in order (bench/results_cpu.md).
namespace gemm_conv {
constexpr int64_t kMaxKc = 512;
constexpr int64_t kBlockFloats = 65536;
}  // namespace gemm_conv
inline void conv2d_gemm_blocking(int64_t k, int64_t n, int64_t& kc, int64_t& nc) {
  using namespace gemm_conv;
  const int64_t depth = k > 0 ? k : 1;
  const int64_t sweeps = (depth + kMaxKc - 1) / kMaxKc;
  kc = (depth + sweeps - 1) / sweeps;
  const int64_t n16 = (n > 0 ? n + 15 : 16) / 16 * 16;
  nc = kBlockFloats / kc / 16 * 16;
  nc = nc < 16 ? 16 : nc;
  nc = nc > n16 ? n16 : nc;
}

// ---- GEMM on a constant weight packed at compile time (the prepack_gemm_weights pass)
// The right operand W = alpha * op(B) (k x n) is stored as the CPU micro-kernel reads it
// (the layout gemm_packed_f32 reads for Winograd): depth blocks of kc rows (kc from
// conv2d_gemm_blocking(k, n): equal blocks of at most 512), each holding the 16-column
// panels of those rows one after another, so that a block is one contiguous stream:
// W[kk][16q + j] is at packed[k0 * n16 + q * kcur * 16 + (kk - k0) * 16 + j], with
// k0 = kk / kc * kc, kcur = min(kc, k - k0), n16 = n rounded up to 16 (zero past column n).
// That is gemm_prepacked_floats(n, k) = n16 * k floats. The left operand A (m x k, row
// stride lda) is read in place, so trans_a must be false. A run packs nothing and needs no
// scratch.
inline int64_t gemm_prepacked_floats(int64_t n, int64_t k) { return (n + 15) / 16 * 16 * k; }
inline bool gemm_prepack_applies(const GemmParams& p) { return !p.trans_a && p.m > 0 && p.n > 0 && p.k > 0; }
// packed (gemm_prepacked_floats(p.n, p.k)) from b as p describes it (trans_b, ldb, alpha).
inline void gemm_prepack_weights(const GemmParams& p, const float* b, float* packed) {
  const int64_t ldb = p.ldb > 0 ? p.ldb : (p.trans_b ? p.k : p.n);
  const int64_t n16 = (p.n + 15) / 16 * 16;
  int64_t kc, nc;
  conv2d_gemm_blocking(p.k, p.n, kc, nc);
  for (int64_t kk = 0; kk < p.k; ++kk) {
    const int64_t k0 = kk / kc * kc, kcur = p.k - k0 < kc ? p.k - k0 : kc;
    for (int64_t col = 0; col < n16; ++col) {
      const float v = col < p.n ? (p.trans_b ? b[col * ldb + kk] : b[kk * ldb + col]) : 0.0f;
      packed[k0 * n16 + col / 16 * kcur * 16 + (kk - k0) * 16 + col % 16] = p.alpha * v;
    }
  }
}

// Depthwise convolutions over blocks of 8 channels (conv2d_depthwise_c8.cpp) interleave a
// block's zero-padded input rows in per-thread scratch, a strip of output rows at a time:
// conv2d_depthwise_c8_strip output rows (0: not even one fits), in
// conv2d_depthwise_c8_floats floats (with the block's weights and bias, and slack), at
// most kMaxFloats (132 KiB, L2).
namespace depthwise_c8 {
constexpr int64_t kMaxFloats = 33792;
constexpr int64_t kMaxTaps = 64;
// Output positions computed together; the last group of a row reads up to kGroup * stride
// positions past it, which the buffer's slack covers.
constexpr int64_t kGroup = 8;
}  // namespace depthwise_c8
inline int64_t conv2d_depthwise_c8_strip(const Conv2dParams& p) {
  using namespace depthwise_c8;
  if (p.kernel_h * p.kernel_w > kMaxTaps || p.h_out <= 0 || p.w_out <= 0) return 0;
  const int64_t cols = (p.w_out - 1) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + 1;
  const int64_t span = (p.kernel_h - 1) * p.dilation_h + 1;  // input rows of one output row
  const int64_t fixed = kGroup * p.stride_w * 8 + 8 * kMaxTaps + 8;
  const int64_t rows_fit = (kMaxFloats - fixed) / (cols * 8);
  if (rows_fit < span) return 0;
  const int64_t strip = (rows_fit - span) / p.stride_h + 1;
  return strip < p.h_out ? strip : p.h_out;
}
inline int64_t conv2d_depthwise_c8_floats(const Conv2dParams& p) {
  const int64_t strip = conv2d_depthwise_c8_strip(p);
  const int64_t cols = (p.w_out - 1) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + 1;
  const int64_t rows = (strip - 1) * p.stride_h + (p.kernel_h - 1) * p.dilation_h + 1;
  return (rows * cols + depthwise_c8::kGroup * p.stride_w) * 8 + 8 * depthwise_c8::kMaxTaps + 8;
}
inline bool conv2d_depthwise_c8_applies(const Conv2dParams& p) { return conv2d_depthwise_c8_strip(p) > 0; }

// Per-thread scratch: the packed column block of the implicit-GEMM path, and for a
// pointwise layer that may take Eigen (conv2d_pointwise_on_eigen) the larger of that and
// Eigen's packing buffers; or the interleaved block of the 8-channel depthwise path (0
// for other depthwise convolutions).
inline int64_t conv2d_thread_scratch_bytes(const Conv2dParams& p) {
  if (p.groups <= 0 || p.h_out <= 0 || p.w_out <= 0) return 0;
  if (conv2d_is_depthwise(p)) {
    if (!conv2d_depthwise_c8_applies(p)) return 0;
    return (conv2d_depthwise_c8_floats(p) * static_cast<int64_t>(sizeof(float)) + 63) / 64 * 64;
  }
  int64_t kc, nc;
  conv2d_gemm_blocking((p.c_in / p.groups) * p.kernel_h * p.kernel_w, p.h_out * p.w_out, kc, nc);
  const int64_t own = (kc * nc * static_cast<int64_t>(sizeof(float)) + 63) / 64 * 64;
  if (!conv2d_pointwise_on_eigen(p)) return own;
  GemmParams g;  // alpha 1
  g.m = p.c_out / p.groups;
  g.n = p.h_out * p.w_out;
  g.k = p.c_in / p.groups;
  const int64_t eigen = gemm_thread_scratch_bytes(g);
  return eigen > own ? eigen : own;
}

// ---- A 1x1 stride-1 convolution with the positions as the tile's rows: its packed weight
namespace pointwise_rows {
constexpr int64_t kRows = 7;
constexpr int64_t kGroup = 32;  // output channels of a packed group
}  // namespace pointwise_rows
// Packed layout: W^T in groups of kGroup output channels, each group the whole depth, one
// row of `width` floats per input channel: W[c][k] at packed[g * kGroup * c_in + k * width
// + (c - g * kGroup)], g = c / kGroup, width = conv2d_pointwise_rows_group_width(p, g)
// (kGroup, the last group what is left rounded up to 16); zeros past c_out. That is
// conv2d_pointwise_rows_packed_floats(p) = c_out rounded up to 16, times c_in.
inline int64_t conv2d_pointwise_rows_group_width(const Conv2dParams& p, int64_t group) {
  const int64_t n16 = (p.c_out + 15) / 16 * 16, left = n16 - group * pointwise_rows::kGroup;
  return left < pointwise_rows::kGroup ? left : pointwise_rows::kGroup;
}
inline int64_t conv2d_pointwise_rows_packed_floats(const Conv2dParams& p) {
  return gemm_prepacked_floats(p.c_out, p.c_in);  // the same size, another order
}
inline void conv2d_pointwise_rows_pack(const Conv2dParams& p, const float* w, float* packed) {
  const int64_t n16 = (p.c_out + 15) / 16 * 16;
  for (int64_t c = 0; c < n16; ++c) {
    const int64_t g = c / pointwise_rows::kGroup, width = conv2d_pointwise_rows_group_width(p, g);
    for (int64_t k = 0; k < p.c_in; ++k)
      packed[g * pointwise_rows::kGroup * p.c_in + k * width + c % pointwise_rows::kGroup] =
          c < p.c_out ? w[c * p.c_in + k] : 0.0f;
  }
}

// ---- A 1x1 expansion fused with the depthwise convolution: its ring of expanded rows
namespace expand_depthwise {
constexpr int64_t kLanes = 8;                // channels per vector (a unit of channels)
constexpr int64_t kRingFloats = 65536;       // a thread's ring: 256 KiB, half the L2
constexpr int64_t kMaxRingFloats = 1 << 20;  // beyond this (huge planes) the pair stays unfused
constexpr int64_t kMaxTaps = 64;
constexpr int64_t kGroup = 8;   // output positions computed together (reads kGroup * stride past a row)
constexpr int64_t kPiece = 48;  // positions of x packed at once for the expansion
}  // namespace expand_depthwise
// Padded input columns the depthwise reads, and input rows one output row spans.
inline int64_t expand_depthwise_cols(const Conv2dParams& dw) {
  return (dw.w_out - 1) * dw.stride_w + (dw.kernel_w - 1) * dw.dilation_w + 1;
}
inline int64_t expand_depthwise_span(const Conv2dParams& dw) { return (dw.kernel_h - 1) * dw.dilation_h + 1; }
// Floats of a ring for `units` channel units and `strip` output rows at a time.
inline int64_t expand_depthwise_ring_floats(const Conv2dParams& dw, int64_t units, int64_t strip) {
  const int64_t rows = (strip - 1) * dw.stride_h + expand_depthwise_span(dw);
  return (rows * expand_depthwise_cols(dw) + expand_depthwise::kGroup * dw.stride_w) *
         expand_depthwise::kLanes * units;
}
// Channel units a thread takes at most at once: as many as fit the ring with one output row.
inline int64_t expand_depthwise_chunk_units(const Conv2dParams& dw) {
  const int64_t units = (dw.c_in + expand_depthwise::kLanes - 1) / expand_depthwise::kLanes;
  const int64_t one = expand_depthwise_ring_floats(dw, 1, 1);
  const int64_t fit = expand_depthwise::kRingFloats / one;
  return fit < 1 ? 1 : fit < units ? fit : units;
}
inline int64_t expand_depthwise_ring_capacity(const Conv2dParams& dw) {
  const int64_t chunk = expand_depthwise_ring_floats(dw, expand_depthwise_chunk_units(dw), 1);
  return chunk > expand_depthwise::kRingFloats ? chunk : expand_depthwise::kRingFloats;
}
inline bool conv2d_expand_depthwise_applies(const Conv2dParams& pw, const Conv2dParams& dw) {
  const bool pointwise = pw.kernel_h == 1 && pw.kernel_w == 1 && pw.stride_h == 1 && pw.stride_w == 1 &&
                         pw.pad_h == 0 && pw.pad_w == 0 && pw.groups == 1;
  return pointwise && conv2d_is_depthwise(dw) && pw.n == dw.n && pw.c_out == dw.c_in && pw.h_out == dw.h_in &&
         pw.w_out == dw.w_in && pw.h_in == pw.h_out && pw.w_in == pw.w_out && pw.c_in > 0 && dw.h_out > 0 &&
         dw.w_out > 0 && dw.kernel_h * dw.kernel_w <= expand_depthwise::kMaxTaps &&
         expand_depthwise_ring_floats(dw, 1, 1) <= expand_depthwise::kMaxRingFloats;
}
// Per-thread scratch: the ring, then pw's operand for a piece of positions (kPiece x a
// depth block), then the chunk's depthwise weights and bias in lanes.
inline int64_t conv2d_expand_depthwise_thread_scratch_bytes(const Conv2dParams& pw, const Conv2dParams& dw) {
  int64_t kc, nc;
  conv2d_gemm_blocking(pw.c_in, pw.c_out, kc, nc);
  const int64_t floats =
      expand_depthwise_ring_capacity(dw) + expand_depthwise::kPiece * kc +
      expand_depthwise_chunk_units(dw) * expand_depthwise::kLanes * (dw.kernel_h * dw.kernel_w + 1) +
      64;  // alignment of the parts
  return (floats * static_cast<int64_t>(sizeof(float)) + 63) / 64 * 64;
}

// ---- Winograd: the transformed weights and the scratch
// Points of the transformed domain: (tile + 2)^2 (16 or 36).
inline int64_t conv2d_winograd_points(int64_t tile) { return (tile + 2) * (tile + 2); }
// u (points x c_out x c_in, point xi = (tile + 2) * row + column of the transformed domain)
// from w (c_out x c_in x 3 x 3): u[xi][o][i] = (G w[o][i] G^T)[xi], computed in double
// (F(4x4, 3x3)'s G has sixths and twenty-fourths; winograd_g).
// G of F(t, 3) ((t + 2) x 3, row-major), for the weight transforms of conv2d_winograd_weights
// and of the CUDA conv3d (cuda/conv3d_winograd_plan.h): for tile 2
// [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1], for tile 4
// [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1].
inline const double (*winograd_g(int64_t tile))[3] {
  static constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  static constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                                       {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                       {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                       {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                       {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                       {0, 0, 1}};
  return tile == 4 ? kG4 : kG2;
}
inline void conv2d_winograd_weights(const Conv2dParams& p, int64_t tile, const float* w, float* u) {
  const int64_t alpha = tile + 2;
  const double(*g_mat)[3] = winograd_g(tile);
  const int64_t plane = p.c_out * p.c_in;
  for (int64_t o = 0; o < p.c_out; ++o)
    for (int64_t i = 0; i < p.c_in; ++i) {
      const float* g = w + (o * p.c_in + i) * 9;
      double gg[6][3];  // G g
      for (int64_t r = 0; r < alpha; ++r)
        for (int c = 0; c < 3; ++c)
          gg[r][c] = g_mat[r][0] * g[c] + g_mat[r][1] * g[3 + c] + g_mat[r][2] * g[6 + c];
      for (int64_t r = 0; r < alpha; ++r)
        for (int64_t c = 0; c < alpha; ++c)
          u[(alpha * r + c) * plane + o * p.c_in + i] =
              static_cast<float>(gg[r][0] * g_mat[c][0] + gg[r][1] * g_mat[c][1] + gg[r][2] * g_mat[c][2]);
    }
}
// The arena scratch: for one group of images, the transformed input (points x c_in x
// columns, in the micro-kernel's packed panels) and the products (points x c_out x columns),
// + 8 floats: the vector output transform reads 8 tiles at a time past the last product.
inline int64_t conv2d_winograd_scratch_bytes(const Conv2dParams& p, int64_t tile) {
  const int64_t cols = conv2d_winograd_group(p, tile) * conv2d_winograd_tiles(p, tile);
  const int64_t cols16 = (cols + 15) / 16 * 16;
  return (conv2d_winograd_points(tile) * (p.c_in * cols16 + p.c_out * cols) + 8) *
         static_cast<int64_t>(sizeof(float));
}
// Per-thread scratch: one zero-padded input plane for the vector input transform (2 rows and
// 8 tiles of margin, and for tile 4 the columns of a ninth tile; without it, the scalar
// transform runs).
inline int64_t conv2d_winograd_thread_scratch_bytes(const Conv2dParams& p, int64_t tile) {
  const int64_t th = (p.h_out + tile - 1) / tile, tw = (p.w_out + tile - 1) / tile;
  const int64_t floats = (tile * th + 2) * (tile * ((tw + 7) / 8 * 8) + 8);
  return (floats * static_cast<int64_t>(sizeof(float)) + 63) / 64 * 64;
}

// ---------------------------------------------------------------- sequence models (transformers, RNNs)
// Query rows a thread handles at once: its scores block is this many rows of kv_len. A
// multiple of the micro-kernel's 6 rows: with 32, vit_b_16's 197 rows ran 37 strips of
// tiles (six of them of 2 rows) where 33 hold them.
constexpr int64_t kAttentionRowBlock = 36;
// A thread's scratch: the scores block, and a head's keys and values packed for the CPU
// micro-kernel (16-column panels: keys16 x head_dim of scaled K^T, kv_len x v_head_dim16 of V,
// where V is not read in place).
// Where attention_f32's parts of a thread's scratch start (in floats from its start: the
// scores of a block of rows first, then the packed key panels, then the packed value
// panels unless V is read in place, each 64-byte aligned) and its whole size in bytes.
struct AttentionScratchLayout {
  int64_t keys = 0, values = 0;
  int64_t bytes = 0;
};
// Whether attention_f32 reads V in place (whole 16-column panels, rows v_strides[2] apart)
// rather than packing it.
inline bool attention_values_in_place(const AttentionParams& p) { return p.v_head_dim % 16 == 0; }
inline AttentionScratchLayout attention_thread_scratch_layout(const AttentionParams& p) {
  AttentionScratchLayout l;
  if (p.q_len <= 0 || p.kv_len <= 0) return l;
  const int64_t rows = p.q_len < kAttentionRowBlock ? p.q_len : kAttentionRowBlock;
  const int64_t keys16 = (p.kv_len + 15) / 16 * 16, values16 = (p.v_head_dim + 15) / 16 * 16;
  const int64_t f = static_cast<int64_t>(sizeof(float));
  const int64_t scores_bytes = gemm_pack::align_up(rows * p.kv_len * f);
  const int64_t keys_bytes = gemm_pack::align_up(keys16 * p.head_dim * f);
  l.keys = scores_bytes / f;
  l.values = (scores_bytes + keys_bytes) / f;
  l.bytes = scores_bytes + keys_bytes +
            (attention_values_in_place(p) ? 0 : gemm_pack::align_up(p.kv_len * values16 * f));
  return l;
}
inline int64_t attention_thread_scratch_bytes(const AttentionParams& p) {
  return attention_thread_scratch_layout(p).bytes;
}
// Arena scratch: the recurrent gates (batch x gates * hidden) and h, c (batch x hidden each).
inline int64_t recurrent_scratch_bytes(const RecurrentParams& p) {
  return (p.batch * p.hidden * (recurrent_gate_count(p.cell) + 2)) * static_cast<int64_t>(sizeof(float));
}
inline int64_t recurrent_thread_scratch_bytes(const RecurrentParams& p) {
  GemmParams g;  // batch x gates * hidden x hidden
  g.m = p.batch;
  g.n = recurrent_gate_count(p.cell) * p.hidden;
  g.k = p.hidden;
  return gemm_thread_scratch_bytes(g);
}

// ---------------------------------------------------------------- spatial (kernels/spatial.h)
// The GEMM one image-group of conv3d_f32 computes: y_g (c_out/g x out volume) =
// w_g (c_out/g x depth) * col (depth x out volume), depth = c_in/g x kernel volume.
inline GemmParams conv3d_gemm(const ConvNdParams& p) {
  GemmParams g;
  const int64_t groups = p.groups > 0 ? p.groups : 1;
  g.m = p.c_out / groups;
  g.n = conv_nd_volume(p.out);
  g.k = (p.c_in / groups) * conv_nd_volume(p.kernel);
  g.lda = g.k;
  g.ldb = g.n;
  g.ldc = g.n;
  g.bias_kind = p.has_bias ? BiasKind::PerRow : BiasKind::None;
  g.clamp_lo = p.clamp_lo;
  g.clamp_hi = p.clamp_hi;
  return g;
}
// True when the input already is the GEMM's right-hand side (1x1x1, stride 1, no padding).
inline bool conv3d_is_pointwise(const ConvNdParams& p) {
  for (int d = 0; d < 3; ++d)
    if (p.kernel[d] != 1 || p.stride[d] != 1 || p.pad[d] != 0) return false;
  return true;
}
// Scratch: the vol2col buffer of one image-group (0 for pointwise).
inline int64_t conv3d_scratch_bytes(const ConvNdParams& p) {
  if (conv3d_is_pointwise(p) || p.groups <= 0) return 0;
  return (p.c_in / p.groups) * conv_nd_volume(p.kernel) * conv_nd_volume(p.out) *
         static_cast<int64_t>(sizeof(float));
}
inline int64_t conv3d_thread_scratch_bytes(const ConvNdParams& p) {
  return p.groups > 0 ? gemm_thread_scratch_bytes(conv3d_gemm(p)) : 0;
}
// The GEMM of one image-group: w_g is stored c_in/g x (c_out/g x kernel volume), used
// transposed; x_g is c_in/g x input volume.
inline GemmParams conv_transpose_gemm(const ConvNdParams& p) {
  GemmParams g;
  const int64_t groups = p.groups > 0 ? p.groups : 1;
  g.m = (p.c_out / groups) * conv_nd_volume(p.kernel);
  g.n = conv_nd_volume(p.in);
  g.k = p.c_in / groups;
  g.trans_a = true;
  g.lda = g.m;
  g.ldb = g.n;
  g.ldc = g.n;
  return g;
}
inline int64_t conv_transpose_scratch_bytes(const ConvNdParams& p) {
  if (p.groups <= 0) return 0;
  return (p.c_out / p.groups) * conv_nd_volume(p.kernel) * conv_nd_volume(p.in) *
         static_cast<int64_t>(sizeof(float));
}
inline int64_t conv_transpose_thread_scratch_bytes(const ConvNdParams& p) {
  return p.groups > 0 ? gemm_thread_scratch_bytes(conv_transpose_gemm(p)) : 0;
}
// Input cells each output position reads along one dim.
inline int upsample_taps(UpsampleMode mode) {
  return mode == UpsampleMode::Cubic ? 4 : (mode == UpsampleMode::Linear ? 2 : 1);
}
// Scratch: the source columns and weights of one output row (computed once per call).
inline int64_t upsample_scratch_bytes(const UpsampleParams& p) {
  return p.out[2] * upsample_taps(p.mode) * static_cast<int64_t>(sizeof(int64_t) + sizeof(float));
}

// ---------------------------------------------------------------- quantized (kernels/quantized.h)
// ---- int8 products (qconv2d_u8 other than depthwise, qlinear_u8): C[m][j] with the output
// pixels (NHWC rows) or the linear layer's rows as m and the output channels as j, along the
// vector lanes. Per group, the depth K = kernel_h * kernel_w * (c_in / groups) in [kh][kw][ci]
// order (the order of an NHWC row of im2col), padded with zero weights to K4 * 4 (K4 =
// ceil(K / 4)); the channels of a group, padded with zero weights to N16 (a multiple of 16),
// in blocks of up to 64 (the last one 16, 32 or 48 wide). A block of nb channels is
// [K4][nb][4] bytes: the 4 consecutive depths of a channel in one dword, 16 channels in a
// 64-byte row, what one AVX512-VNNI vpdpbusd multiplies against 4 activations broadcast as
// a dword (the AVX2 form widens 8 channels' dwords to int16 for vpmaddwd; AMX's tdpbusd
// reads 16 dwords of depth of 16 channels as a tile, rows nb * 4 bytes apart). Weight w[j][kk]
// of group g is at byte
//   g * K4 * 4 * N16 + (j / 64) * 64 * K4 * 4 + ((kk / 4) * nb + j % 64) * 4 + kk % 4,
// nb = min(64, N16 - j / 64 * 64): every block and group starts 64-byte aligned.
//
// Rows of A: read in place where a row of the input already is the row of A (a 1x1
// stride-1 unpadded convolution, NHWC; a linear layer), otherwise gathered (im2col) into
// per-thread scratch qgemm::chunk_rows(K4 * 4) rows at a time, padding read as in_zero.
namespace qgemm {
constexpr int64_t kPanel = 16;  // output channels per vector: the int32 lanes of a zmm
constexpr int64_t kBlock = 64;  // output channels per packed block
// A thread's strip of gathered rows: about kChunkBytes (L2), between kMinChunkRows and
// kMaxChunkRows rows, a multiple of kRowUnit (a multiple of every tile's height).
constexpr int64_t kChunkBytes = 131072;
constexpr int64_t kMinChunkRows = 48, kMaxChunkRows = 384, kRowUnit = 24;
inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
inline int64_t chunk_rows(int64_t depth4) {
  int64_t rows = (depth4 > 0 ? kChunkBytes / depth4 : kMaxChunkRows) / kRowUnit * kRowUnit;
  rows = rows < kMinChunkRows ? kMinChunkRows : rows;
  return rows > kMaxChunkRows ? kMaxChunkRows : rows;
}
// Bytes of packed weights of `groups` products of depth k and n channels each.
inline int64_t packed_bytes(int64_t groups, int64_t k, int64_t n) {
  return groups > 0 && k > 0 && n > 0 ? groups * round_up(k, 4) * round_up(n, kPanel) : 0;
}
// Byte offset of weight (group g, channel j < n, depth kk < k) in that layout.
inline int64_t packed_offset(int64_t k, int64_t n, int64_t g, int64_t j, int64_t kk) {
  const int64_t k4 = (k + 3) / 4, n16 = round_up(n, kPanel), b = j / kBlock;
  const int64_t nb = n16 - b * kBlock < kBlock ? n16 - b * kBlock : kBlock;
  return g * k4 * 4 * n16 + b * kBlock * k4 * 4 + ((kk / 4) * nb + j % kBlock) * 4 + kk % 4;
}
// Per-thread scratch: a strip of gathered rows (gather: k4 * 4 bytes each) and their sums.
inline int64_t thread_scratch_bytes(int64_t k, bool gather) {
  if (k <= 0) return 0;
  const int64_t depth4 = round_up(k, 4);
  return round_up(chunk_rows(depth4) * ((gather ? depth4 : 0) + 4), 64);
}
}  // namespace qgemm

// A depthwise convolution (groups == c_in == c_out > 1) runs directly on NHWC, vectorised
// along the channels, 4 taps at a time per AVX512-VNNI vpdpbusd: the 4 taps' input bytes of
// a channel interleaved into one dword by in-lane unpacks (bytes, then words) of 4 input
// vectors of 64 channels, which leaves dword i of 128-bit lane L of the k-th result (k < 4)
// holding channel 16 L + 4 k + i; the saturating packs of the epilogue undo that order. The
// weights are stored in it: per block of 64 channels (C64 = c_out rounded up to 64), per
// group of 4 taps (T4 = ceil(kernel_h * kernel_w / 4)), 4 vectors of 64 bytes, the weight of
// channel c = 64 b + 16 L + 4 k + i and tap t = 4 g + j (t = i_h * kernel_w + i_w, torch's
// w[c][0][i_h][i_w]) at byte ((b * T4 + g) * 4 + k) * 64 + (4 L + i) * 4 + j; zero past the
// channels and taps. (The AVX2 form reads them back into int32 [tap][channel] per run.)
namespace qdepthwise {
constexpr int64_t kBlock = 64;
inline int64_t tap_groups(int64_t taps) { return (taps + 3) / 4; }
inline int64_t packed_offset(int64_t taps, int64_t c, int64_t t) {
  const int64_t b = c / kBlock, cc = c % kBlock, l = cc / 16, k = cc % 16 / 4, i = cc % 4;
  return ((b * tap_groups(taps) + t / 4) * 4 + k) * 64 + (4 * l + i) * 4 + t % 4;
}
}  // namespace qdepthwise
inline bool qconv2d_is_depthwise(const QConv2dParams& p) {
  return p.groups > 1 && p.c_in == p.groups && p.c_out == p.groups;
}
// The product reads the input in place: 1x1, stride 1, no padding (NHWC rows are A's rows).
inline bool qconv2d_is_pointwise(const QConv2dParams& p) {
  return p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 &&
         p.pad_w == 0 && p.h_out == p.h_in && p.w_out == p.w_in;
}
inline int64_t qconv2d_depth(const QConv2dParams& p) {
  return p.groups > 0 ? (p.c_in / p.groups) * p.kernel_h * p.kernel_w : 0;
}
inline int64_t qconv2d_packed_weight_bytes(const QConv2dParams& p) {
  if (p.groups <= 0 || p.c_out <= 0) return 0;
  if (qconv2d_is_depthwise(p))
    return qgemm::round_up(p.c_out, qdepthwise::kBlock) * qdepthwise::tap_groups(p.kernel_h * p.kernel_w) * 4;
  return qgemm::packed_bytes(p.groups, qconv2d_depth(p), p.c_out / p.groups);
}
// out (qconv2d_packed_weight_bytes(p)) from torch's w [c_out][c_in / groups][kernel_h][kernel_w].
inline void qconv2d_pack_weights(const QConv2dParams& p, const int8_t* w, int8_t* out) {
  const int64_t bytes = qconv2d_packed_weight_bytes(p);
  for (int64_t i = 0; i < bytes; ++i) out[i] = 0;
  const int64_t taps = p.kernel_h * p.kernel_w;
  if (qconv2d_is_depthwise(p)) {
    for (int64_t c = 0; c < p.c_out; ++c)
      for (int64_t t = 0; t < taps; ++t) out[qdepthwise::packed_offset(taps, c, t)] = w[c * taps + t];
    return;
  }
  if (bytes == 0) return;
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups, k = qconv2d_depth(p);
  for (int64_t g = 0; g < p.groups; ++g)
    for (int64_t j = 0; j < cog; ++j)
      for (int64_t ci = 0; ci < cig; ++ci)
        for (int64_t t = 0; t < taps; ++t)
          out[qgemm::packed_offset(k, cog, g, j, t * cig + ci)] = w[((g * cog + j) * cig + ci) * taps + t];
}
inline int64_t qconv2d_thread_scratch_bytes(const QConv2dParams& p) {
  if (p.groups <= 0 || p.c_out <= 0) return 0;
  if (qconv2d_is_depthwise(p)) {
    // A row of in_zero bytes (the padding's taps), the taps' input pointers and offsets, the
    // four requant arrays in the VNNI form's channel order, and the weights as int32 [tap][channel]
    // less their zero points (the AVX2 form, and the VNNI form with weight zero points).
    const int64_t taps = p.kernel_h * p.kernel_w, c64 = qgemm::round_up(p.c_out, qdepthwise::kBlock);
    return c64 + qgemm::round_up(qdepthwise::tap_groups(taps) * 4 * 8 * 2, 64) + 4 * c64 * 4 + taps * c64 * 4;
  }
  return qgemm::thread_scratch_bytes(qconv2d_depth(p), !qconv2d_is_pointwise(p));
}

// ---- qlinear_dynamic_f32: the quantized input (m * k bytes), then the per-call offsets (n
// int32), each 64-byte aligned.
inline int64_t qlinear_dynamic_scratch_bytes(const QLinearDynamicParams& p) {
  return p.m > 0 && p.n > 0 && p.k > 0 ? qgemm::round_up(p.m * p.k, 64) + qgemm::round_up(p.n * 4, 64) : 0;
}

// ---- qlinear_u8: the product above with one group, K = k, rows read in place.
inline int64_t qlinear_packed_weight_bytes(const QLinearParams& p) {
  return qgemm::packed_bytes(1, p.k, p.n);
}
// out (qlinear_packed_weight_bytes(p)) from torch's w [n][k].
inline void qlinear_pack_weights(const QLinearParams& p, const int8_t* w, int8_t* out) {
  const int64_t bytes = qlinear_packed_weight_bytes(p);
  for (int64_t i = 0; i < bytes; ++i) out[i] = 0;
  for (int64_t j = 0; j < p.n; ++j)
    for (int64_t kk = 0; kk < p.k; ++kk) out[qgemm::packed_offset(p.k, p.n, 0, j, kk)] = w[j * p.k + kk];
}
inline int64_t qlinear_thread_scratch_bytes(const QLinearParams& p) {
  return p.n > 0 ? qgemm::thread_scratch_bytes(p.k, false) : 0;
}

}  // namespace aotc::rt
