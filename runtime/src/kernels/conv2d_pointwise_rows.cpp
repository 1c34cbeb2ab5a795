// conv2d_pointwise_rows.cpp - a 1x1 stride-1 convolution with the output positions as the
// tile's rows: y^T (positions x c_out) = x^T (positions x c_in) * W^T, W^T packed at compile
// time in groups of 32 output channels, each group one stream over the whole depth
// (conv2d_pointwise_rows_pack; the select_pointwise_rows pass). An AVX-512 tile is 14
// consecutive positions x 32 channels, 28 zmm accumulators; each depth step loads the
// group's two vectors and broadcasts the 14 positions' inputs straight from the input plane
// of that channel (x is channel-major, so a tile's positions are 14 adjacent floats of one
// plane): nothing is copied or packed at run time. 14 positions read the weights once per
// 28 FMAs where 7 did per 14, which with 16 threads the L2s had trouble feeding; resnet50
// ran 0.98x the time of 7-position tiles at 16 threads (batch 1 and 8), efficientnet_b0
// 0.97x at batch 8, with the same sums (bench/results_cpu.md).
//
// Why: on 7 x 7 and 14 x 14 planes the implicit GEMM (weights as rows, 16 positions a
// panel) packs the positions first on every thread, and 49 = 3 x 16 + 1 and 196 = 12 x 16 +
// 4 leave a ragged panel; 7 divides every plane size of the 224 x 224 CNNs (7 x 2^k). On
// mobilenet_v2's projections at 7 x 7 and 14 x 14 the implicit GEMM trailed ONNX Runtime,
// whose NCHWc layout needs no packing (bench/results_cpu.md).
//
// Sums: the bias, then the depth in order, then the residual; the clamp last. A tile's
// results go through a small buffer to the channel planes (y is channel-major).
//
// The weights as the linear layers pack them (depth blocks of 16-channel panels) made a
// tile read two streams a panel apart; one stream per group is a little faster in the
// models (bench/results_cpu.md). perf's samples sit on the FMAs that
// use the second vector either way (the broadcast before them waits; cpu-clock skid).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "gemm_micro_kernel.h"
#include "kernel_util.h"

namespace aotc::rt {
namespace {

using detail::ceil_div;
using detail::min_i64;
constexpr int64_t kRows = pointwise_rows::kRows;
constexpr int64_t kPanel = 16;
constexpr int64_t kMaxPanels = pointwise_rows::kGroup / kPanel;  // panels of one tile
// The least tiles a piece of the work holds (ThreadPool::parallel_pieces).
constexpr int64_t kMinPieceTiles = 4;

// What every tile of one call shares.
struct Layer {
  const Conv2dParams& p;
  const float* x;     // one image: c_in planes of hw
  const float* bias;  // or null
  const float* res;   // one image, y's layout, or null
  float* y;           // one image
  int64_t hw;
  bool clamp;
};

// Where a tile's weights are: its first vector's 16 floats at depth 0 in the packed weight
// (conv2d_pointwise_rows_pack), ld floats on per depth step.
struct Weights {
  const float* b;
  int64_t ld;
};

// Writes a tile's sums (t: R rows of kMaxPanels * kPanel floats) to the channel planes:
// channels [c0, c0 + cols), positions [p0, p0 + R), with the residual and the clamp.
template <int R>
void store_tile(const Layer& l, const float* t, int64_t p0, int64_t c0, int64_t cols) {
  for (int64_t j = 0; j < cols; ++j) {
    float* yj = l.y + (c0 + j) * l.hw + p0;
    const float* rj = l.res ? l.res + (c0 + j) * l.hw + p0 : nullptr;
    for (int r = 0; r < R; ++r) {
      float v = t[r * kMaxPanels * kPanel + j];
      if (rj) v += rj[r];
      yj[r] = l.clamp ? detail::clamp_value(v, l.p.clamp_lo, l.p.clamp_hi) : v;
    }
  }
}

#if AOTC_KERNELS_AVX2
// The AVX-512 tile's positions: two rows of 7, 28 zmm accumulators.
constexpr int64_t kWideRows = 2 * kRows;
// Depth steps ahead that the AVX-512 tile fetches its inputs (16-32 were equal in resnet50's
// 1x1 layers, 8 slower: bench/results_cpu.md).
constexpr int64_t kInputPrefetchSteps = 16;

// R positions from p0 x NV panels from panel q: the whole depth in registers.
template <int R, int NV>
__attribute__((target("avx512f"))) void tile_avx512(const Layer& l, int64_t p0, int64_t q, int64_t cols,
                                                    Weights w) {
  const int64_t k = l.p.c_in;
  __m512 acc[R][NV];
  for (int v = 0; v < NV; ++v) {
    const int64_t c = (q + v) * kPanel;
    // Columns past c_out read zeros (the packed weight is zero there too) and are not stored.
    const int64_t valid = cols - v * kPanel;
    const __mmask16 mask = static_cast<__mmask16>(valid >= kPanel ? 0xffffu : (1u << valid) - 1u);
    const __m512 b = l.bias ? _mm512_maskz_loadu_ps(mask, l.bias + c) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) acc[r][v] = b;
  }
  const float* wk = w.b;
  const float* xk = l.x + p0;
  for (int64_t kk = 0; kk < k; ++kk, wk += w.ld, xk += l.hw) {
    // The positions' inputs kInputPrefetchSteps depth steps on, toward L1: consecutive steps
    // are a plane apart (3 KB at 28 x 28), past where the hardware prefetchers stop (a
    // page), and each step waited for its line from L2.
    _mm_prefetch(reinterpret_cast<const char*>(xk + kInputPrefetchSteps * l.hw), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(xk + kInputPrefetchSteps * l.hw + R - 1), _MM_HINT_T0);
    __m512 b[NV];
    for (int v = 0; v < NV; ++v) b[v] = _mm512_loadu_ps(wk + v * kPanel);
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(xk[r]);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
    }
  }
  alignas(64) float t[kWideRows * kMaxPanels * kPanel];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) _mm512_store_ps(t + r * kMaxPanels * kPanel + v * kPanel, acc[r][v]);
  store_tile<R>(l, t, p0, q * kPanel, cols);
}

// AVX2 (no AVX-512): up to 5 positions x one panel, 10 ymm accumulators, the two panel
// vectors and a broadcast. The accumulators are named variables: as an array GCC 12 kept a
// copy of it in memory, a store of every accumulator on every depth step (half the FMA
// rate on a 6-row array; the micro-kernel's comment in gemm_micro_kernel.h tells the same).
template <int R>
void tile_avx2(const Layer& l, int64_t p0, int64_t q, int64_t cols, Weights w) {
  static_assert(R >= 1 && R <= 5, "five rows of two vectors: 10 of the 16 ymm registers");
  const int64_t k = l.p.c_in;
  __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps();
  if (l.bias) {
    b0 = _mm256_maskload_ps(l.bias + q * kPanel, detail::first_lanes_mask(min_i64(8, cols)));
    if (cols > 8)
      b1 = _mm256_maskload_ps(l.bias + q * kPanel + 8, detail::first_lanes_mask(min_i64(8, cols - 8)));
  }
  __m256 c00 = b0, c01 = b1, c10 = b0, c11 = b1, c20 = b0, c21 = b1, c30 = b0, c31 = b1, c40 = b0, c41 = b1;
  const float* panel = w.b;
  const float* xk = l.x + p0;
  for (int64_t kk = 0; kk < k; ++kk, panel += w.ld, xk += l.hw) {
    const __m256 v0 = _mm256_loadu_ps(panel), v1 = _mm256_loadu_ps(panel + 8);
    __m256 a = _mm256_broadcast_ss(xk);
    c00 = _mm256_fmadd_ps(a, v0, c00);
    c01 = _mm256_fmadd_ps(a, v1, c01);
    if constexpr (R > 1) {
      a = _mm256_broadcast_ss(xk + 1);
      c10 = _mm256_fmadd_ps(a, v0, c10);
      c11 = _mm256_fmadd_ps(a, v1, c11);
    }
    if constexpr (R > 2) {
      a = _mm256_broadcast_ss(xk + 2);
      c20 = _mm256_fmadd_ps(a, v0, c20);
      c21 = _mm256_fmadd_ps(a, v1, c21);
    }
    if constexpr (R > 3) {
      a = _mm256_broadcast_ss(xk + 3);
      c30 = _mm256_fmadd_ps(a, v0, c30);
      c31 = _mm256_fmadd_ps(a, v1, c31);
    }
    if constexpr (R > 4) {
      a = _mm256_broadcast_ss(xk + 4);
      c40 = _mm256_fmadd_ps(a, v0, c40);
      c41 = _mm256_fmadd_ps(a, v1, c41);
    }
  }
  alignas(64) float t[kRows * kMaxPanels * kPanel];
  constexpr int64_t kLd = kMaxPanels * kPanel;
  _mm256_store_ps(t, c00);
  _mm256_store_ps(t + 8, c01);
  _mm256_store_ps(t + kLd, c10);
  _mm256_store_ps(t + kLd + 8, c11);
  _mm256_store_ps(t + 2 * kLd, c20);
  _mm256_store_ps(t + 2 * kLd + 8, c21);
  _mm256_store_ps(t + 3 * kLd, c30);
  _mm256_store_ps(t + 3 * kLd + 8, c31);
  _mm256_store_ps(t + 4 * kLd, c40);
  _mm256_store_ps(t + 4 * kLd + 8, c41);
  store_tile<R>(l, t, p0, q * kPanel, cols);
}
#else
// Portable C++ (aarch64): 7 positions x one panel.
template <int R>
void tile_portable(const Layer& l, int64_t p0, int64_t q, int64_t cols, Weights w) {
  const int64_t k = l.p.c_in;
  float acc[R][kPanel];
  for (int j = 0; j < kPanel; ++j) {
    const float b = l.bias && j < cols ? l.bias[q * kPanel + j] : 0.0f;
    for (int r = 0; r < R; ++r) acc[r][j] = b;
  }
  const float* panel = w.b;
  const float* xk = l.x + p0;
  for (int64_t kk = 0; kk < k; ++kk, panel += w.ld, xk += l.hw)
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < kPanel; ++j) acc[r][j] += xk[r] * panel[j];
  alignas(64) float t[kRows * kMaxPanels * kPanel];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < kPanel; ++j) t[r * kMaxPanels * kPanel + j] = acc[r][j];
  store_tile<R>(l, t, p0, q * kPanel, cols);
}
#endif

// How one call tiles: rows (positions) and panels of a tile, per instruction set.
using TileFn = void (*)(const Layer&, int64_t, int64_t, int64_t, Weights);
struct Tiling {
  int64_t rows, panels;
  TileFn fn(int64_t tile_rows, int64_t tile_panels) const {
#if AOTC_KERNELS_AVX2
    static constexpr TileFn kWide[kWideRows] = {
        tile_avx512<1, 2>,  tile_avx512<2, 2>,  tile_avx512<3, 2>,  tile_avx512<4, 2>, tile_avx512<5, 2>,
        tile_avx512<6, 2>,  tile_avx512<7, 2>,  tile_avx512<8, 2>,  tile_avx512<9, 2>, tile_avx512<10, 2>,
        tile_avx512<11, 2>, tile_avx512<12, 2>, tile_avx512<13, 2>, tile_avx512<14, 2>};
    static constexpr TileFn kNarrow[kWideRows] = {
        tile_avx512<1, 1>,  tile_avx512<2, 1>,  tile_avx512<3, 1>,  tile_avx512<4, 1>, tile_avx512<5, 1>,
        tile_avx512<6, 1>,  tile_avx512<7, 1>,  tile_avx512<8, 1>,  tile_avx512<9, 1>, tile_avx512<10, 1>,
        tile_avx512<11, 1>, tile_avx512<12, 1>, tile_avx512<13, 1>, tile_avx512<14, 1>};
    static constexpr TileFn kAvx2[kRows] = {tile_avx2<1>, tile_avx2<2>, tile_avx2<3>, tile_avx2<4>,
                                            tile_avx2<5>, nullptr,      nullptr};
    if (panels == 1) return kAvx2[tile_rows - 1];
    return (tile_panels == 2 ? kWide : kNarrow)[tile_rows - 1];
#else
    (void)tile_panels;
    static constexpr TileFn kPortable[kRows] = {tile_portable<1>, tile_portable<2>, tile_portable<3>,
                                                tile_portable<4>, tile_portable<5>, tile_portable<6>,
                                                tile_portable<7>};
    return kPortable[tile_rows - 1];
#endif
  }
};
Tiling tiling() {
#if AOTC_KERNELS_AVX2
  if (detail::use_avx512()) return {kWideRows, 2};
  return {5, 1};
#else
  return {kRows, 1};
#endif
}
static_assert(kRows == 7 && kMaxPanels == 2, "Tiling::fn lists one function per row count and panel count");

}  // namespace

void conv2d_pointwise_rows_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w_packed,
                               const float* bias, const float* residual, float* y) {
  const int64_t hw = p.h_out * p.w_out;
  if (p.n <= 0 || hw <= 0 || p.c_out <= 0) return;
  const Tiling t = tiling();
  const int64_t panels = ceil_div(p.c_out, kPanel), groups = ceil_div(panels, t.panels);
  const int64_t tiles = ceil_div(hw, t.rows), per_image = groups * tiles;
  const double flops = 2.0 * static_cast<double>(p.c_out) * static_cast<double>(hw) *
                       static_cast<double>(p.c_in) * static_cast<double>(p.n);
  const int64_t items = p.n * per_image;
  const int64_t parts = flops < 2.0 * detail::kGemmMinFlopsPerRange ? 1 : pool.size();
  const int64_t least =
      parts > 1 ? detail::min_i64(kMinPieceTiles, detail::max_i64(1, items / parts)) : items;
  // Items run channel group by channel group (a thread's weights are one contiguous share),
  // the positions of a group inside.
  pool.parallel_pieces(items, least, [&](int64_t i0, int64_t i1, int) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t img = i / per_image, g = i % per_image / tiles, tile = i % tiles;
      const int64_t q = g * t.panels, p0 = tile * t.rows;
      const int64_t rows = min_i64(t.rows, hw - p0), cols = min_i64(t.panels * kPanel, p.c_out - q * kPanel);
      const Layer l{p,
                    x + img * p.c_in * hw,
                    p.has_bias ? bias : nullptr,
                    residual ? residual + img * p.c_out * hw : nullptr,
                    y + img * p.c_out * hw,
                    hw,
                    detail::has_clamp(p.clamp_lo, p.clamp_hi)};
      // Panel q in its packed group of 32 channels (the AVX2 tiles take one panel of it).
      const int64_t group = q / kMaxPanels, width = conv2d_pointwise_rows_group_width(p, group);
      const float* group_at = w_packed + group * pointwise_rows::kGroup * p.c_in;
      // The next packed group, a share per tile of the group's last panel, toward L2: the
      // weights come from DRAM once per run, and a group's first tile would wait for them.
      if ((q + t.panels) % kMaxPanels == 0 && group + 1 < ceil_div(panels, kMaxPanels))
        detail::prefetch_strip_part(group_at + pointwise_rows::kGroup * p.c_in, kPanel,
                                    conv2d_pointwise_rows_group_width(p, group + 1) / kPanel * p.c_in, kPanel,
                                    tile, tiles);
      t.fn(rows, cols > kPanel ? 2 : 1)(l, p0, q, cols, Weights{group_at + q % kMaxPanels * kPanel, width});
    }
  });
}

}  // namespace aotc::rt
