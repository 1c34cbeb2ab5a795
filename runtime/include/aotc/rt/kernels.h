// kernels.h - the CPU kernels that generated model code calls. Internal, not the C ABI.
//
// Conventions:
//   - Tensors are dense row-major (NCHW for images) unless strides are passed explicitly.
//   - Every kernel takes the context's ThreadPool first and never allocates: scratch
//     memory, when needed, comes from the arena; its size is given by *_scratch_bytes(),
//     which the compiler also calls when it plans memory (so the two cannot disagree).
//     Scratch that each thread needs for itself (GEMM packing) comes from the pool
//     (ThreadPool::thread_scratch), sized by *_thread_scratch_bytes() the same way.
//   - Kernel names say op and dtype: <op>_f32.
//   - "clamp_lo/clamp_hi" is a fused activation epilogue: relu is [0, inf), relu6 and
//     hardtanh are [lo, hi]; use -INFINITY/INFINITY for none.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aotc::rt {

class ThreadPool;

// ---------------------------------------------------------------- GEMM
enum class BiasKind : int32_t {
  None = 0,
  PerColumn = 1,  // bias[n], broadcast over rows (linear, addmm with 1-D bias)
  PerRow = 2,     // bias[m], broadcast over columns (convolution: one per output channel)
  Full = 3,       // bias[m * n], row-major m x n
};

// A GELU applied to the product and bias before the residual and the clamp: a linear
// layer's GELU that compiler/passes/fuse_gemm_gelu.cpp put into its GEMM (both targets).
enum class GemmActivation : int32_t {
  None = 0,
  GeluErf = 1,   // 0.5 x (1 + erf(x / sqrt 2)), nn.GELU()
  GeluTanh = 2,  // nn.GELU(approximate="tanh")
};

struct GemmParams {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false;               // A is stored k x m (row-major) and used transposed
  bool trans_b = false;               // B is stored n x k (row-major) and used transposed
  int64_t lda = 0, ldb = 0, ldc = 0;  // leading dimensions (row strides) as stored
  float alpha = 1.0f;                 // C = alpha * op(A) op(B) + beta * bias, then clamp
  float beta = 1.0f;
  BiasKind bias_kind = BiasKind::None;
  float clamp_lo = -__builtin_inff();
  float clamp_hi = __builtin_inff();
  // Optional residual (m x n, row stride ldr) added before the clamp: C = ... + residual.
  // It may not alias C. (Transformer blocks: out = x + proj(attention(x)).)
  const float* residual = nullptr;
  int64_t ldr = 0;
  // C = clamp(activation(alpha * op(A) op(B) + beta * bias) + residual).
  GemmActivation activation = GemmActivation::None;
};

// C (m x n, row stride ldc) = alpha * op(A) * op(B) + beta * bias, through the activation
// (if any), plus the residual (if any), clamped.
void gemm_f32(ThreadPool& pool, const GemmParams& p, const float* a, const float* b, const float* bias,
              float* c);

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

// Batched C[i] = A[i] * B[i] for i < batch; a stride of 0 broadcasts that operand.
struct BatchedGemmParams {
  GemmParams gemm;  // per-matrix parameters (bias applies to every batch; no residual)
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between matrices
  int64_t stride_bias = 0;  // elements between the biases of consecutive matrices (baddbmm)
};
void batched_gemm_f32(ThreadPool& pool, const BatchedGemmParams& p, const float* a, const float* b,
                      const float* bias, float* c);
// Per-thread scratch of batched_gemm_f32: that of one of its products.
inline int64_t batched_gemm_thread_scratch_bytes(const BatchedGemmParams& p) {
  return p.batch > 0 ? gemm_thread_scratch_bytes(p.gemm) : 0;
}

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
// is then faster on nearly all of them (bench/results_cpu.md). So the scratch below covers
// both paths.
inline bool conv2d_pointwise_on_eigen(const Conv2dParams& p) {
  const bool pointwise = p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                         p.pad_h == 0 && p.pad_w == 0;
  if (!pointwise || conv2d_is_depthwise(p) || p.groups <= 0) return false;
  const int64_t c_in = p.c_in / p.groups, c_out = p.c_out / p.groups;
  return c_in > 256 || (c_in > 64 && c_out >= 6 * c_in);
}

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
// C (m x n, ldc) = A * W + beta * bias, through the activation (if any), plus the residual
// (if any), clamped; p.alpha and p.trans_b are not applied again (the packing did), p.ldb
// is unused.
void gemm_prepacked_f32(ThreadPool& pool, const GemmParams& p, const float* a, const float* packed,
                        const float* bias, float* c);

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
// pointwise_rows::kRows positions, which divides the planes of the 224 x 224 CNNs (7 x 2^k).
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
inline bool conv2d_pointwise_rows_applies(const Conv2dParams& p) {
  return p.groups == 1 && p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
         p.pad_h == 0 && p.pad_w == 0 && p.dilation_h == 1 && p.dilation_w == 1 && p.h_out == p.h_in &&
         p.w_out == p.w_in && p.n > 0 && p.c_in > 0 && p.c_out > 0 && p.h_out > 0 && p.w_out > 0;
}
// Where the compiler takes it: planes of at most 28 x 28 and a depth of at least 192 (the
// tile's transposed store is paid once per depth), and whole 16-channel panels (a panel of 8
// in 16 lanes is slower than the implicit GEMM); there it beats the implicit GEMM per layer,
// and larger planes stay on it (bench/pointwise_rows.cpp, bench/results_cpu.md).
inline bool conv2d_pointwise_rows_prefers(const Conv2dParams& p) {
  return conv2d_pointwise_rows_applies(p) && p.h_out * p.w_out <= 28 * 28 && p.c_in >= 192 && p.c_out >= 32 &&
         p.c_out % 16 == 0;
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
// Points of the transformed domain: (tile + 2)^2 (16 or 36).
inline int64_t conv2d_winograd_points(int64_t tile) { return (tile + 2) * (tile + 2); }
// u (points x c_out x c_in, point xi = (tile + 2) * row + column of the transformed domain)
// from w (c_out x c_in x 3 x 3): u[xi][o][i] = (G w[o][i] G^T)[xi], computed in double
// (F(4x4, 3x3)'s G has sixths and twenty-fourths). G for tile 2 is
// [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1], for tile 4
// [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1].
inline void conv2d_winograd_weights(const Conv2dParams& p, int64_t tile, const float* w, float* u) {
  static constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  static constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                                       {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                       {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                       {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                       {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                       {0, 0, 1}};
  const int64_t alpha = tile + 2;
  const double(*g_mat)[3] = tile == 4 ? kG4 : kG2;
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
// x: n x c_in x h_in x w_in; u from conv2d_winograd_weights with the same tile (2 or 4);
// bias, residual, y as for conv2d_f32.
void conv2d_winograd_f32(ThreadPool& pool, const Conv2dParams& p, int64_t tile, const float* x,
                         const float* u, const float* bias, const float* residual, float* y, float* scratch);

// ---------------------------------------------------------------- pooling
struct Pool2dParams {
  int64_t n = 1, c = 0, h_in = 0, w_in = 0, h_out = 0, w_out = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;  // max pooling only
  bool count_include_pad = true;           // average pooling only
  int64_t divisor_override = 0;            // average pooling only; 0 means none
};
// Output sizes (ceil_mode included) are computed by the compiler, as torch does.
void max_pool2d_f32(ThreadPool& pool, const Pool2dParams& p, const float* x, float* y);
void avg_pool2d_f32(ThreadPool& pool, const Pool2dParams& p, const float* x, float* y);
// Adaptive average pooling: bins as torch computes them (floor start, ceil end).
void adaptive_avg_pool2d_f32(ThreadPool& pool, int64_t n, int64_t c, int64_t h_in, int64_t w_in,
                             int64_t h_out, int64_t w_out, const float* x, float* y);

// ---------------------------------------------------------------- pointwise
enum class UnaryOp : int32_t {
  Identity = 0,
  Relu = 1,
  Clamp = 2,      // min(max(x, a), b): relu6, hardtanh, clamp
  LeakyRelu = 3,  // x >= 0 ? x : a * x
  Sigmoid = 4,
  Tanh = 5,
  GeluErf = 6,       // 0.5 x (1 + erf(x / sqrt 2))
  GeluTanh = 7,      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  Silu = 8,          // x * sigmoid(x)
  Hardswish = 9,     // x * clamp(x + 3, 0, 6) / 6
  Hardsigmoid = 10,  // clamp(x + 3, 0, 6) / 6
  // Math and activations of the pointwise family. a and b as noted.
  Neg = 11,
  Abs = 12,
  Reciprocal = 13,
  Sqrt = 14,
  Rsqrt = 15,
  Exp = 16,
  Exp2 = 17,
  Log = 18,
  Log2 = 19,
  Log10 = 20,
  Log1p = 21,
  Expm1 = 22,
  Sin = 23,
  Cos = 24,
  Tan = 25,
  Erf = 26,
  Floor = 27,
  Ceil = 28,
  Round = 29,  // half to even, as torch.round
  Trunc = 30,
  Sign = 31,
  Square = 32,
  Elu = 33,            // x > 0 ? x : a * (exp(b * x) - 1)  (celu: b = 1 / a)
  Selu = 34,           // scale * elu(x, alpha) with torch's constants
  Softplus = 35,       // a = beta, b = threshold: x * beta > threshold ? x : log1p(exp(beta x)) / beta
  Mish = 36,           // x * tanh(softplus(x))
  LogSigmoid = 37,     // -softplus(-x)
  Softsign = 38,       // x / (1 + |x|)
  Tanhshrink = 39,     // x - tanh(x)
  Hardshrink = 40,     // |x| > a ? x : 0
  Softshrink = 41,     // x > a ? x - a : x < -a ? x + a : 0
  Threshold = 42,      // x > a ? x : b
  PowScalar = 43,      // x ^ a
  ScalarPow = 44,      // a ^ x
  ScaleShift = 45,     // a * x + b
  ZeroNonFinite = 46,  // x if finite, else 0 (logsumexp's shift)
  BitwiseNot = 47,     // integer and bool tensors only (unary_typed)
  Asin = 48,
  Acos = 49,
  Atan = 50,
  Sinh = 51,
  Cosh = 52,
  Erfc = 53,
};
void unary_f32(ThreadPool& pool, UnaryOp op, float a, float b, int64_t count, const float* x, float* y);

enum class BinaryOp : int32_t {
  Add = 0,
  Sub = 1,
  Mul = 2,
  Div = 3,  // true division (float32 only: the compiler casts integer operands to float)
  // Pointwise: the rest of the elementwise family, with torch's semantics per dtype.
  FloorDiv = 4,   // floor(a / b); integers: Python's //, 0 for b == 0 (torch raises)
  TruncDiv = 5,   // trunc(a / b); integers: C's /, 0 for b == 0
  Remainder = 6,  // Python's %: the result has b's sign
  Fmod = 7,       // C's fmod: the result has a's sign
  Pow = 8,
  Minimum = 9,  // NaN-propagating
  Maximum = 10,
  BitwiseAnd = 11,  // integer and bool only
  BitwiseOr = 12,
  BitwiseXor = 13,
  PRelu = 14,  // a > 0 ? a : a * b
  Atan2 = 15,
  // Comparisons and logic: the result is bool whatever the operands' dtype.
  Eq = 32,
  Ne = 33,
  Lt = 34,
  Le = 35,
  Gt = 36,
  Ge = 37,
  LogicalAnd = 38,
  LogicalOr = 39,
  LogicalXor = 40,
};
// True when op's result is bool (comparisons and logical ops).
inline bool binary_op_gives_bool(BinaryOp op) { return static_cast<int32_t>(op) >= 32; }

// y = a OP (alpha * b) with broadcasting: out_dims has rank entries; strides are in
// elements per dimension of the output index space (0 where that input broadcasts).
struct BinaryParams {
  BinaryOp op = BinaryOp::Add;
  float alpha = 1.0f;  // scales b (torch's add/sub alpha); 1 for mul/div
  int32_t rank = 0;
  int64_t out_dims[8] = {};
  int64_t a_strides[8] = {};
  int64_t b_strides[8] = {};
};
void binary_f32(ThreadPool& pool, const BinaryParams& p, const float* a, const float* b, float* y);

// ---------------------------------------------------------------- data movement
// Copies a rank-dim index space of elem_size-byte elements between two strided views
// (strides in elements). Used for permute, transpose, expand, slicing and cat.
struct CopyParams {
  int32_t rank = 0;
  int64_t elem_size = 4;
  int64_t dims[8] = {};
  int64_t src_strides[8] = {};
  int64_t dst_strides[8] = {};
};
void copy_strided(ThreadPool& pool, const CopyParams& p, const void* src, void* dst);

// ---------------------------------------------------------------- normalisation
// y[n, c, s] = x[n, c, s] * scale[c] + shift[c] (batch norm in eval with folded stats),
// then clamped.
void channel_affine_f32(ThreadPool& pool, int64_t n, int64_t c, int64_t spatial, const float* scale,
                        const float* shift, float clamp_lo, float clamp_hi, const float* x, float* y);

// Softmax over the middle axis of an outer x axis x inner layout; log_softmax when
// log is true. Numerically stable (subtracts the maximum).
void softmax_f32(ThreadPool& pool, int64_t outer, int64_t axis, int64_t inner, bool log, const float* x,
                 float* y);

// ---------------------------------------------------------------- reductions
enum class ReduceOp : int32_t { Sum = 0, Mean = 1, Max = 2, Min = 3, Prod = 4 };
// Reduces the dims where reduce_mask[d] is true; y has the kept dims in order (dense),
// whether or not the caller keeps size-1 dims in its shape.
struct ReduceParams {
  ReduceOp op = ReduceOp::Sum;
  int32_t rank = 0;
  int64_t dims[8] = {};
  bool reduce_mask[8] = {};
};
void reduce_f32(ThreadPool& pool, const ReduceParams& p, const float* x, float* y);

// ---------------------------------------------------------------- sequence models (transformers, RNNs)
// layer_norm: each of `rows` rows of `cols` contiguous values is normalised to zero mean
// and unit variance (biased variance, as torch), then scaled by gamma[cols] and shifted by
// beta[cols] (either may be null). mean and rstd (rows values each) are written when not
// null (native_layer_norm's second and third outputs).
struct LayerNormParams {
  int64_t rows = 0, cols = 0;
  float eps = 1e-5f;
};
void layer_norm_f32(ThreadPool& pool, const LayerNormParams& p, const float* x, const float* gamma,
                    const float* beta, float* y, float* mean, float* rstd);

// embedding: y[i, :] = weight[ids[i], :] for count ids into a vocab x dim table. ids are
// int64 (or int32 when ids_int32); an id outside [0, vocab) gives a row of zeros (torch
// raises; a compiled model cannot, and must never read outside the table).
struct EmbeddingParams {
  int64_t count = 0, dim = 0, vocab = 0;
  bool ids_int32 = false;
};
void embedding_f32(ThreadPool& pool, const EmbeddingParams& p, const void* ids, const float* weight,
                   float* y);

// Fused scaled dot-product attention, one pass per (batch, head, block of query rows):
// scores = scale * Q K^T (+ mask) in a per-thread block, a row softmax, then out = P V, all
// through the GEMM kernel. Q/K/V/out are read and written through strides, so a packed QKV
// projection ([B, T, 3, H, E]) and a [B, T, H, E] output need no transposing copies.
enum class AttentionMask : int32_t {
  None = 0,
  Additive = 1,       // float mask added to the scaled scores (SDPA float masks)
  KeepIfTrue = 2,     // bool mask: false means masked (SDPA bool masks)
  DropIfTrue = 3,     // bool mask: true means masked (MultiheadAttention, key padding)
  DropIfNonzero = 4,  // float mask: non-zero means masked (torch's native MHA fast path)
};
// Whether and how the probabilities (after softmax) are returned.
enum class AttentionWeights : int32_t {
  None = 0,
  PerHead = 1,   // probs[b, h, i, j], dense
  HeadMean = 2,  // probs[b, i, j] averaged over heads, dense
};
struct AttentionParams {
  int64_t batch = 1, heads = 1;  // the (up to) two leading index dims
  int64_t q_len = 0, kv_len = 0, head_dim = 0, v_head_dim = 0;
  float scale = 1.0f;
  bool causal = false;  // query i sees keys j <= i (on top of any mask)
  // Element strides over (batch, head, row); the last (head_dim) axis is contiguous.
  int64_t q_strides[3] = {}, k_strides[3] = {}, v_strides[3] = {}, out_strides[3] = {};
  AttentionMask mask_kind = AttentionMask::None;
  int64_t mask_strides[4] = {};  // over (batch, head, query row, key column); 0 broadcasts
  AttentionWeights weights = AttentionWeights::None;
};
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
// mask: float or bool (one byte) as mask_kind says, null for None; probs: as `weights` says.
void attention_f32(ThreadPool& pool, const AttentionParams& p, const float* q, const float* k, const float* v,
                   const void* mask, float* out, float* probs);

// Recurrent layers (aten::lstm / aten::gru, one direction of one layer). The input
// projection of every time step, gates_x = x W_ih^T + b, is one GEMM done before; this
// kernel runs the recurrence over time: per step one GEMM h W_hh^T and the gate math.
// Gate order is torch's: LSTM i, f, g, o; GRU r, z, n.
enum class RecurrentCell : int32_t { Lstm = 0, Gru = 1 };
struct RecurrentParams {
  RecurrentCell cell = RecurrentCell::Lstm;
  int64_t steps = 0, batch = 0, hidden = 0;
  bool reverse = false;  // walk time from the last step to the first
  // Element strides of gates_x (gate_count * hidden values per (step, batch)) and of y
  // (hidden values per (step, batch)), so batch_first and bidirectional outputs need no copy.
  int64_t gx_step_stride = 0, gx_batch_stride = 0;
  int64_t y_step_stride = 0, y_batch_stride = 0;
};
inline int64_t recurrent_gate_count(RecurrentCell cell) { return cell == RecurrentCell::Lstm ? 4 : 3; }
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
// w_hh: gates * hidden x hidden; b_hh: gates * hidden or null (for the LSTM it may be folded
// into gates_x; the GRU needs b_hn inside r * (W_hn h + b_hn)); h0, c0: batch x hidden or null
// (zeros); y: every step's h; h_n, c_n: the last step's h and c (c only for the LSTM), or null.
void recurrent_f32(ThreadPool& pool, const RecurrentParams& p, const float* gates_x, const float* w_hh,
                   const float* b_hh, const float* h0, const float* c0, float* y, float* h_n, float* c_n,
                   float* scratch);
// ---------------------------------------------------------------- views, indexing, factories
// Every element size: these kernels move bytes. Index tensors are int64 or
// int32 (index_elem_size 8 or 4); a negative index counts from the end, and an index still
// out of range is clamped into it (torch raises; a kernel cannot, and must never read
// outside x).

// count elements of elem_size bytes, each set to value[0..elem_size).
struct FillParams {
  int64_t count = 0;
  int64_t elem_size = 4;
  unsigned char value[8] = {};
};
void fill(ThreadPool& pool, const FillParams& p, void* dst);

// tril (upper false) / triu (upper true) of batch matrices rows x cols: y = x where
// col - row <= diagonal (tril) or col - row >= diagonal (triu), else zero bytes.
struct TriangleParams {
  int64_t batch = 1;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t diagonal = 0;
  bool upper = false;
  int64_t elem_size = 4;
};
void tril_triu(ThreadPool& pool, const TriangleParams& p, const void* x, void* y);

// Advanced indexing of dense x viewed as [outer, sizes[0], ..., sizes[K-1], inner] by K
// index tensors of count elements each (already broadcast to one shape):
// y[o, n, i] = x[o, indices[0][n], ..., indices[K-1][n], i]. index_select is K = 1.
struct IndexGatherParams {
  int64_t outer = 1;
  int64_t count = 0;
  int64_t inner = 1;
  int64_t elem_size = 4;
  int32_t num_indices = 1;
  int64_t sizes[8] = {};
  int64_t index_elem_size[8] = {};
};
void index_gather(ThreadPool& pool, const IndexGatherParams& p, const void* x, const void* const* indices,
                  void* y);

// torch.gather along dim: y[i] = x[i with i[dim] replaced by index[i]] for every i in the
// index's (and y's) shape dims. x_strides are x's element strides (0 broadcasts, as
// take_along_dim needs); x_dim_size bounds the index.
struct GatherParams {
  int32_t rank = 0;
  int32_t dim = 0;
  int64_t dims[8] = {};
  int64_t x_strides[8] = {};
  int64_t x_dim_size = 0;
  int64_t elem_size = 4;
  int64_t index_elem_size = 8;
};
void gather(ThreadPool& pool, const GatherParams& p, const void* x, const void* index, void* y);

// torch.scatter (no reduction) into y, which already holds self: for every i in the
// index's shape, y[i with i[dim] = index[i]] = src[i] (src_strides; all 0 to scatter one
// value). y_strides are y's dense strides, y_dim_size bounds the index. Runs in index
// order on one thread, so that with repeated indices the last write wins, deterministically.
struct ScatterParams {
  int32_t rank = 0;
  int32_t dim = 0;
  int64_t dims[8] = {};
  int64_t y_strides[8] = {};
  int64_t src_strides[8] = {};
  int64_t y_dim_size = 0;
  int64_t elem_size = 4;
  int64_t index_elem_size = 8;
};
void scatter(ThreadPool& pool, const ScatterParams& p, const void* src, const void* index, void* y);
// ---------------------------------------------------------------- pointwise: dtypes
// The element types of the dtype-generic pointwise kernels below. One kernel per op family
// takes the dtype as an argument (and switches to a template instance once per call), rather
// than generated code per op: the runtime is compiled once and unit tested, generated code
// stays one call per op, and the float32 paths keep their hand-vectorised loops.
enum class ElemType : int32_t { F32 = 0, I64 = 1, I32 = 2, Bool = 3 };
inline int64_t elem_size(ElemType t) {
  return t == ElemType::F32 || t == ElemType::I32 ? 4 : t == ElemType::I64 ? 8 : 1;
}

// y = a OP (alpha * b) as binary_f32, for operands of any ElemType (both of type t). y has
// type t, or bool when binary_op_gives_bool(p.op). Integer ops never trap: division by
// zero gives 0 and INT_MIN / -1 wraps (torch raises or wraps there).
void binary_typed(ThreadPool& pool, const BinaryParams& p, ElemType t, const void* a, const void* b, void* y);

// Unary ops on integer and bool tensors (x and y of type t): Identity, Relu, Neg, Abs,
// Sign, Square, Clamp (bounds a, b, rounded into t), BitwiseNot (logical not for bool).
void unary_typed(ThreadPool& pool, UnaryOp op, ElemType t, double a, double b, int64_t count, const void* x,
                 void* y);

// y[i] = x[i] converted as torch converts (float -> int truncates, -> bool is != 0).
void cast_elements(ThreadPool& pool, ElemType from, ElemType to, int64_t count, const void* x, void* y);

// y = cond ? a : b with broadcasting (strides in elements of the output index space, as
// BinaryParams), for elements of elem_size bytes (1, 4 or 8).
struct WhereParams {
  int32_t rank = 0;
  int64_t out_dims[8] = {};
  int64_t cond_strides[8] = {};
  int64_t a_strides[8] = {};
  int64_t b_strides[8] = {};
};
void where_select(ThreadPool& pool, const WhereParams& p, int64_t elem_size, const bool* cond, const void* a,
                  const void* b, void* y);

// reduce_f32 for int64 tensors (Sum, Max, Min, Prod; Mean is float only).
void reduce_i64(ThreadPool& pool, const ReduceParams& p, const int64_t* x, int64_t* y);

// max/min over the middle axis of outer x axis x inner: values (may be null) and the
// int64 index of the first maximum (NaN counts as the maximum, as in torch).
void arg_reduce(ThreadPool& pool, ElemType t, bool is_max, int64_t outer, int64_t axis, int64_t inner,
                const void* x, void* values, int64_t* indices);

// Inclusive prefix sum along the middle axis of outer x axis x inner; t is F32 or I64.
void cumsum(ThreadPool& pool, ElemType t, int64_t outer, int64_t axis, int64_t inner, const void* x, void* y);

}  // namespace aotc::rt

// Vision: 3-d and transposed convolution, 3-d and adaptive pooling, group norm,
// upsampling.
#include <aotc/rt/kernels_spatial.h>
