// conv2d_gemm.cpp - a (non-depthwise) 2-D convolution as an implicit GEMM with its own
// register-tiled micro-kernel: per image and group, y_g (M x N) = w_g (M x K) * col (K x N),
// M = c_out / groups, N = h_out * w_out, K = c_in / groups * kernel_h * kernel_w.
//
// Why not im2col + Eigen (the previous path): the im2col matrix was written out and then
// copied again by Eigen's packing, and Eigen's blocking stayed well below the sgemm peak on
// the conv shapes of resnet18/50 (bench/results_cpu.md).
// Here the im2col columns are gathered straight from the input image into the packed
// panels the micro-kernel reads (kc x 16 floats, one per 16 output positions), and the
// weights are read in place: the micro-kernel broadcasts one weight per row from six
// row streams, so they need no packing.
//
// A last panel of at most 4 columns (7 x 7 outputs: 49 = 3 x 16 + 1; 14 x 14: 196 = 12 x 16
// + 4) runs as dot products along the depth instead (thin_tile in gemm_micro_kernel.h).
//
// Blocking (conv2d_gemm_blocking in kernels/layouts.h): a block of kc x nc panel floats (<= 96 KiB,
// L2) is packed once per thread and swept by every 6-row group of M; a 6 x kc weight
// strip (<= 6 KiB) stays in L1 across the block's panels. Depth beyond kc is summed in C.
//
// Threads: one product is split over M (6-row units) or N (16-column panels), whichever
// gives the lesser largest share, counting that an M split packs every panel on each thread.
// A batch on 8 threads or more runs all its products in one region, each product cut into
// about threads / images shares (conv2d_gemm_f32).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "gemm_micro_kernel.h"
#include "kernel_util.h"

namespace aotc::rt::detail {
namespace {

// The micro-kernel (gemm_micro_kernel.h) broadcasts the weights: kMr output channels x kNr
// output positions per tile.
// A 1x1 stride-1 product copies each input panel as it is used (gemm_part's `direct`) for up
// to 64 rows of weights, or as many as fit 256 KiB (a quarter of the L2): the second bound
// keeps a large layer's weights in L2 and made resnet50 slightly faster, the other models
// no slower (bench/results_cpu.md).
constexpr int64_t kDirectMaxRows = 64;
constexpr int64_t kDirectMaxWeightFloats = 65536;
constexpr int64_t kFallbackFloats = gemm_conv::kMaxKc * kNr;  // one panel, when no scratch
// The threads from which a batch's products run in one region (conv2d_gemm_f32). Like the
// linear layers' blocks of rows (gemm_prepacked.cpp), for many-core machines only.
constexpr int64_t kAcrossItemsMinThreads = 8;

// A thread's packing buffer: its scratch from the pool, or one panel on the stack.
struct ThreadBuffer {
  alignas(64) float fallback[kFallbackFloats];
  float* buf;
  int64_t floats;
  ThreadBuffer(ThreadPool& pool, int thread)
      : buf(reinterpret_cast<float*>(pool.thread_scratch(thread))),
        floats(static_cast<int64_t>(pool.thread_scratch_bytes() / sizeof(float))) {
    if (!buf || floats < kFallbackFloats) {
      buf = fallback;
      floats = kFallbackFloats;
    }
  }
  ThreadBuffer(const ThreadBuffer&) = delete;
  ThreadBuffer& operator=(const ThreadBuffer&) = delete;
};

// Per kernel column j: the output columns whose tap lands inside the input row. Computed
// once per product: valid_outputs divides, and packing asked for it per row and panel
// spent more time there than on copying.
constexpr int64_t kMaxKernelW = 64;
struct ColRanges {
  TapRange valid[kMaxKernelW];
  bool cached = false;
  const int32_t* gather = nullptr;  // gather_table's, or null
};
ColRanges col_ranges(const Conv2dParams& p, const int32_t* gather) {
  ColRanges cr;
  cr.gather = gather;
  cr.cached = p.kernel_w <= kMaxKernelW;
  if (cr.cached)
    for (int64_t j = 0; j < p.kernel_w; ++j)
      cr.valid[j] = valid_outputs(j * p.dilation_w - p.pad_w, p.stride_w, p.w_out, p.w_in);
  return cr;
}

// Packed layout of a depth block of kcur rows of col and the columns [c0, c0 + ncols) (c0 a
// multiple of 16): panel q (columns c0 + 16q ..) is kcur x 16 floats at block + q * kcur * 16,
// row-major; columns past the last position are zero. The micro-kernel reads one panel.
struct PanelDst {
  float* row;            // row r of panel 0: block + r * 16
  int64_t c0;            // first column of panel 0
  int64_t panel_stride;  // kcur * 16
  // Where position pos goes, and how many positions from it stay in the same panel row.
  float* at(int64_t pos, int64_t& room) const {
    const int64_t rel = pos - c0;
    room = kNr - rel % kNr;
    return row + rel / kNr * panel_stride + rel % kNr;
  }
};

// dst positions [pa, pb) = 0.
inline void zero_run(const PanelDst& d, int64_t pa, int64_t pb) {
  while (pa < pb) {
    int64_t room;
    float* out = d.at(pa, room);
    const int64_t len = min_i64(room, pb - pa);
    for (int64_t c = 0; c < len; ++c) out[c] = 0.0f;
    pa += len;
  }
}

// dst positions [pa, pb) = src[(pos - pa) * step]; src_end bounds what may be read.
inline void copy_run(const PanelDst& d, int64_t pa, int64_t pb, const float* src, int64_t step,
                     const float* src_end) {
  while (pa < pb) {
    int64_t room;
    float* out = d.at(pa, room);
    const int64_t len = min_i64(room, pb - pa);
    if (step == 1) {
      for (int64_t c = 0; c < len; ++c) out[c] = src[c];
    } else {
      int64_t c = 0;
#if AOTC_KERNELS_AVX2
      // Stride 2 (resnet's stem and downsampling convolutions; packing was 31% of the stem's
      // time): 8 outputs from 16 loaded floats, the 16th past the run but before src_end.
      if (step == 2)
        for (; c + 8 <= len && src + 2 * c + 16 <= src_end; c += 8)
          _mm256_storeu_ps(out + c, even_lanes_f32x8(src + 2 * c));
#else
      (void)src_end;
#endif
      for (; c < len; ++c) out[c] = src[c * step];
    }
    src += len * step;
    pa += len;
  }
}

// The pieces of one row of col (kernel row i, the tap's input column offset off, its valid
// output columns `valid`) over columns [c0, c1), in column order: zero(a, b) for columns
// [a, b) that read padding, copy(a, b, src) for columns [a, b) that read the input from src
// on (one stride_w apart).
template <class Zero, class Copy>
inline void row_pieces(const Conv2dParams& p, const TapRange& valid, const float* xp, int64_t off, int64_t c0,
                       int64_t c1, int64_t i, Zero&& zero, Copy&& copy) {
  const int64_t oh_lo = c0 / p.w_out, oh_hi = ceil_div(c1, p.w_out);
  for (int64_t oh = oh_lo; oh < oh_hi; ++oh) {
    const int64_t row0 = oh * p.w_out;
    const int64_t pa = max_i64(c0, row0), pb = min_i64(c1, row0 + p.w_out);
    const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
    if (ih < 0 || ih >= p.h_in) {
      zero(pa, pb);
      continue;
    }
    // Positions row0 + ow with ow in [valid.lo, valid.hi) read the input row.
    const int64_t va = min_i64(max_i64(row0 + valid.lo, pa), pb);
    const int64_t vb = max_i64(min_i64(row0 + valid.hi, pb), va);
    zero(pa, va);
    copy(va, vb, xp + ih * p.w_in + (va - row0) * p.stride_w + off);
    zero(vb, pb);
  }
}

constexpr int64_t kRowFloats = 4096;
// One row of col (kernel row i, the tap's input column offset off, its valid output
// columns `valid`), columns [c0, c0 + ncols): built whole in `row`, then copied into the
// panels 16 floats at a time; columns past ncols are zero. With AVX2 the row is written in
// 8-float vectors that may run past a piece (the next piece, or the slack of 2 * kNr past
// ncols, overwrites them). Written piece by piece into the panels instead (copy_run), every
// output row was cut at panel edges into short runs with scalar tails: pack_rows was 29% of
// a 3x3 stride-2 layer (perf). Whole rows take less time on the strided and larger
// kernels; 1x1 stride 2 gains nothing and keeps copy_run (bench/results_cpu.md).
void row_then_panels(const Conv2dParams& p, const TapRange& valid, const float* xp, int64_t off,
                     const PanelDst& d, int64_t c0, int64_t ncols, int64_t i, const float* src_end,
                     float* row) {
  const int64_t step = p.stride_w;
  auto zeros = [&](int64_t a, int64_t b) {
    int64_t c = a;
#if AOTC_KERNELS_AVX2
    for (; c < b; c += 8) _mm256_storeu_ps(row + (c - c0), _mm256_setzero_ps());
#endif
    for (; c < b; ++c) row[c - c0] = 0.0f;
  };
  auto copy = [&](int64_t a, int64_t b, const float* src) {
    float* out = row + (a - c0);
    const int64_t len = b - a;
    int64_t c = 0;
#if AOTC_KERNELS_AVX2
    if (step == 2)
      for (; c < len && src + 2 * c + 16 <= src_end; c += 8)
        _mm256_storeu_ps(out + c, even_lanes_f32x8(src + 2 * c));
    else if (step == 1)
      for (; c < len && src + c + 8 <= src_end; c += 8) _mm256_storeu_ps(out + c, _mm256_loadu_ps(src + c));
#else
    (void)src_end;
#endif
    for (; c < len; ++c) out[c] = src[c * step];
  };
  row_pieces(p, valid, xp, off, c0, c0 + ncols, i, zeros, copy);
  const int64_t panels = ceil_div(ncols, kNr);
  for (int64_t c = ncols; c < panels * kNr; ++c) row[c] = 0.0f;
  float* dst = d.row;
  for (int64_t q = 0; q < panels; ++q, dst += d.panel_stride)
    for (int64_t l = 0; l < kNr; ++l) dst[l] = row[q * kNr + l];
}

// Small output planes (resnet's 3x3 stride-2 layers at 28 x 28 and below, 1x1 stride-2
// downsampling): for each tap, where each output position reads in its input channel's
// plane, or -1 for padding and the positions past the plane up to a whole panel. A packed
// row is then one indexed load per value, its panels written whole. Cut into runs per
// output row (row_then_panels), these layers' rows are 7 to 28 values in as many pieces,
// and the zeros past the plane's last panel went through a `rep stos` per row: packing took
// half of resnet50's 512 > 512 stride-2 layer at 7 x 7 (perf; bench/results_cpu.md).
constexpr int64_t kMaxGatherEntries = 16384;  // 64 KiB on the calling thread's stack
bool gather_table_fits(const Conv2dParams& p) {
  const int64_t n16 = ceil_div(p.h_out * p.w_out, kNr) * kNr;
  const bool pointwise = p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                         p.pad_h == 0 && p.pad_w == 0;
  return !pointwise && p.kernel_h * p.kernel_w * n16 <= kMaxGatherEntries && p.h_in * p.w_in <= INT32_MAX;
}
void gather_table(const Conv2dParams& p, int32_t* table) {
  const int64_t n16 = ceil_div(p.h_out * p.w_out, kNr) * kNr;
  // Built on every run: positions by output row and column, no division per entry.
  for (int64_t i = 0; i < p.kernel_h; ++i)
    for (int64_t j = 0; j < p.kernel_w; ++j) {
      int32_t* const row = table + (i * p.kernel_w + j) * n16;
      int64_t pos = 0;
      for (int64_t oh = 0; oh < p.h_out; ++oh) {
        const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
        const bool row_inside = ih >= 0 && ih < p.h_in;
        for (int64_t ow = 0; ow < p.w_out; ++ow, ++pos) {
          const int64_t iw = ow * p.stride_w - p.pad_w + j * p.dilation_w;
          row[pos] = row_inside && iw >= 0 && iw < p.w_in ? static_cast<int32_t>(ih * p.w_in + iw) : -1;
        }
      }
      for (; pos < n16; ++pos) row[pos] = -1;
    }
}

// Rows [k_lo, k_hi) of col (all in the depth block starting at row kb) and columns
// [c0, c0 + ncols), into the block's panels at `block`. Written per output row so that
// every piece is a contiguous run of the input (for stride 1), with no per-element index
// arithmetic: packing is the implicit GEMM's overhead on top of the product.
void pack_rows(const Conv2dParams& p, const ColRanges& cr, const float* xg, int64_t k_lo, int64_t k_hi,
               int64_t kb, int64_t kcur, int64_t c0, int64_t ncols, float* block) {
  const int64_t n = p.h_out * p.w_out, hw_in = p.h_in * p.w_in;
  const int64_t taps = p.kernel_h * p.kernel_w;
  const float* const xg_end = xg + p.c_in / p.groups * hw_in;
  const int64_t c1 = c0 + ncols, c1_padded = c0 + ceil_div(ncols, kNr) * kNr;
  const bool pointwise = taps == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0;
  int64_t ci = k_lo / taps, i = (k_lo % taps) / p.kernel_w, j = k_lo % p.kernel_w;
  alignas(32) float row_buf[kRowFloats];
  for (int64_t k = k_lo; k < k_hi; ++k) {
    const PanelDst d{block + (k - kb) * kNr, c0, kcur * kNr};
    if (pointwise) {  // col is the input itself: whole panels are plain 16-float copies
      const float* src = xg + k * n + c0;
      float* out = d.row;
      int64_t c = 0;
      for (; c + kNr <= ncols; c += kNr, out += d.panel_stride)
        for (int64_t l = 0; l < kNr; ++l) out[l] = src[c + l];
      copy_run(d, c0 + c, c1, src + c, 1, xg_end);
    } else if (cr.gather) {
      const float* xp = xg + ci * hw_in;
      const int32_t* index = cr.gather + (i * p.kernel_w + j) * ceil_div(n, kNr) * kNr + c0;
      float* out = d.row;
      for (int64_t c = 0; c < ncols; c += kNr, index += kNr, out += d.panel_stride)
        for (int64_t l = 0; l < kNr; ++l) out[l] = index[l] >= 0 ? xp[index[l]] : 0.0f;
      if (++j == p.kernel_w) {
        j = 0;
        if (++i == p.kernel_h) {
          i = 0;
          ++ci;
        }
      }
      // Whole panels written: c1 ends a panel, or the plane, whose positions past it read -1.
      continue;
    } else {
      const float* xp = xg + ci * hw_in;
      const int64_t off = j * p.dilation_w - p.pad_w;
      const TapRange valid = cr.cached ? cr.valid[j] : valid_outputs(off, p.stride_w, p.w_out, p.w_in);
      // A 1x1 stride-2 convolution keeps the piecewise copy (the same speed, measured).
      if (taps > 1 && ncols + 2 * kNr <= kRowFloats) {
        row_then_panels(p, valid, xp, off, d, c0, ncols, i, xg_end, row_buf);
      } else {
        row_pieces(
            p, valid, xp, off, c0, c1, i, [&](int64_t a, int64_t b) { zero_run(d, a, b); },
            [&](int64_t a, int64_t b, const float* src) { copy_run(d, a, b, src, p.stride_w, xg_end); });
      }
      if (++j == p.kernel_w) {
        j = 0;
        if (++i == p.kernel_h) {
          i = 0;
          ++ci;
        }
      }
    }
    zero_run(d, c1, c1_padded);
  }
}

// Rows [m0, m1) x columns [n0, n1) of one image-group's product, on the calling thread.
// With `packed` (every depth block packed by pack_rows for all columns), the columns are read from it instead
// of packed here.
// rg: the residual of the image-group (yg's layout), or null.
void gemm_part(const Conv2dParams& p, const float* xg, const float* wg, const float* bg, const float* rg,
               float* yg, int64_t m0, int64_t m1, int64_t n0, int64_t n1, float* buf, int64_t buf_floats,
               const float* packed, const int32_t* gather) {
  const int64_t n = p.h_out * p.w_out;
  const int64_t k = (p.c_in / p.groups) * p.kernel_h * p.kernel_w;
  int64_t kc, nc;
  conv2d_gemm_blocking(k, n, kc, nc);
  if (kc * nc > buf_floats) nc = max_i64(kNr, buf_floats / kc / kNr * kNr);
  const ColRanges cr = col_ranges(p, gather);
  // A 1x1 convolution's columns are the input rows: with few output channels (or weights
  // that stay in L2) to share a packed block, packing it cost more than it saved; each
  // panel is copied as it is used.
  const bool direct = !packed && p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                      p.pad_h == 0 && p.pad_w == 0 &&
                      (m1 - m0 <= kDirectMaxRows || (m1 - m0) * k <= kDirectMaxWeightFloats);
  Tile t{};
  t.lda = k;
  t.ldc = n;
  t.lo = p.clamp_lo;
  t.hi = p.clamp_hi;
  t.clamp = has_clamp(p.clamp_lo, p.clamp_hi);
  // The tile starts from the residual on the first depth block (ragged ones from a copy).
  alignas(32) float res_pad[kMr * kNr], col_pad[kNr];  // (this product has no column bias)
#if AOTC_KERNELS_AVX2
  alignas(32) float thin_cols[kThinCols * gemm_conv::kMaxKc];
#endif
  auto set_residual = [&](int64_t m, int64_t col, int64_t rows) {
    t.res = rg ? rg + m * n + col : nullptr;
    t.ldr = n;
    pad_ragged_operands(t, rows, col_pad, res_pad);
  };
  for (int64_t nb = n0; nb < n1; nb += nc) {
    const int64_t ncols = min_i64(nc, n1 - nb);
    const int64_t panels = ceil_div(ncols, kNr);
    for (int64_t k0 = 0; k0 < k; k0 += kc) {
      const int64_t kcur = min_i64(kc, k - k0);
      t.kc = kcur;
      t.first = k0 == 0;
      t.last = k0 + kcur >= k;
      if (direct) {
        // Each panel is copied into the thread's buffer, then swept by every row group while
        // it is in L1. Read in place (ldb = n), a panel's rows are a plane apart: at 56 x 56
        // (12544 bytes) they fall into 16 of L1's 64 sets and a 256-deep panel did not stay
        // in L1 across the row groups. The copy makes the deep layers on large planes faster
        // and costs the others nothing measurable (bench/results_cpu.md).
        for (int64_t q = 0; q < panels; ++q) {
          const int64_t c = nb + q * kNr;
          t.cols = min_i64(kNr, ncols - q * kNr);
          // Two whole panels side by side where the 6 x 32 tile runs (micro_tile_pair).
#if AOTC_KERNELS_AVX2
          const bool two = pair_fits(kMr, ncols - q * kNr) && 2 * kcur * kNr <= buf_floats;
#else
          const bool two = false;
#endif
          if (t.cols == kNr) {
            const float* src = xg + k0 * n + c;
            for (int64_t kk = 0; kk < kcur; ++kk)
              for (int64_t l = 0; l < kNr; ++l) buf[kk * kNr + l] = src[kk * n + l];
            if (two)
              for (int64_t kk = 0; kk < kcur; ++kk)
                for (int64_t l = 0; l < kNr; ++l) buf[(kcur + kk) * kNr + l] = src[kk * n + kNr + l];
          } else {  // a ragged last panel: pack_rows zero-fills past the input
            pack_rows(p, cr, xg, k0, k0 + kcur, k0, kcur, c, t.cols, buf);
          }
          t.b = buf;
          t.ldb = kNr;
#if AOTC_KERNELS_AVX2
          const bool thin = t.cols <= kThinCols;
          if (thin) transpose_thin(buf, kcur, t.cols, thin_cols);
#endif
          for (int64_t m = m0; m < m1; m += kMr) {
            const int64_t rows = min_i64(kMr, m1 - m);
            t.a = wg + m * k + k0;
            // The first panel reads every row group's weights from memory: the next group's
            // are fetched while this one's tile runs.
            if (q == 0 && m + kMr < m1)
              prefetch_strip_part(t.a + kMr * k, k, min_i64(kMr, m1 - m - kMr), kcur, 0, 1);
            t.bias = bg ? bg + m : nullptr;
            t.c = yg + m * n + c;
            set_residual(m, c, rows);
            // The next row group's output lines (for writing) and residual lines: rows a plane
            // apart, which the hardware prefetchers do not follow; the tile's stores and its
            // residual start waited for them from L3.
            if (m + kMr < m1) {
              const int64_t next_rows = min_i64(kMr, m1 - m - kMr), width = two ? 2 * kNr : t.cols;
              for (int64_t r = 0; r < next_rows; ++r)
                for (int64_t j = 0; j < width; j += 16) {
                  __builtin_prefetch(yg + (m + kMr + r) * n + c + j, 1, 3);
                  if (rg) __builtin_prefetch(rg + (m + kMr + r) * n + c + j, 0, 3);
                }
            }
#if AOTC_KERNELS_AVX2
            if (thin) {
              thin_fn(rows)(t, thin_cols, kcur);
              continue;
            }
            if (two && rows == kMr) {
              micro_tile_pair(t, kcur * kNr);
              continue;
            }
#endif
            (t.cols > 8 ? tile_fn<2>(rows) : tile_fn<1>(rows))(t);
            if (two) {  // the second panel of a short row group on its own
              Tile second = t;
              second.b = buf + kcur * kNr;
              second.c = t.c + kNr;
              second.res = t.res ? t.res + kNr : nullptr;
              tile_fn<2>(rows)(second);
            }
          }
          if (two) ++q;
        }
        continue;
      }
      const float* block = buf;
      if (packed) {  // nb is a multiple of 16: its first panel is whole in the packed matrix
        block = packed + k0 * ceil_div(n, kNr) * kNr + nb / kNr * kcur * kNr;
      } else {
        pack_rows(p, cr, xg, k0, k0 + kcur, k0, kcur, nb, ncols, buf);
      }
      t.ldb = kNr;
#if AOTC_KERNELS_AVX2
      const int64_t last_cols = ncols - (panels - 1) * kNr;
      const bool thin = last_cols <= kThinCols;
      if (thin) transpose_thin(block + (panels - 1) * kcur * kNr, kcur, last_cols, thin_cols);
#endif
      for (int64_t m = m0; m < m1; m += kMr) {
        const int64_t rows = min_i64(kMr, m1 - m);
        const TileFn wide = tile_fn<2>(rows), narrow = tile_fn<1>(rows);
        t.a = wg + m * k + k0;
        t.bias = bg ? bg + m : nullptr;
        const int64_t next_rows = min_i64(kMr, m1 - m - kMr);
        for (int64_t q = 0; q < panels; ++q) {
          // The next row group's weights, a share before each of this group's panels.
          if (next_rows > 0) prefetch_strip_part(t.a + kMr * k, k, next_rows, kcur, q, panels);
          t.b = block + q * kcur * kNr;
          t.c = yg + m * n + nb + q * kNr;
          t.cols = min_i64(kNr, ncols - q * kNr);
          set_residual(m, nb + q * kNr, rows);
#if AOTC_KERNELS_AVX2
          if (thin && q == panels - 1) {
            thin_fn(rows)(t, thin_cols, kcur);
            continue;
          }
          // Panels q and q + 1 together (the next one may not be the thin one).
          if (pair_fits(rows, ncols - q * kNr) && !(thin && q + 1 == panels - 1) && q + 1 < panels) {
            if (next_rows > 0) prefetch_strip_part(t.a + kMr * k, k, next_rows, kcur, q + 1, panels);
            micro_tile_pair(t, kcur * kNr);
            ++q;
            continue;
          }
#endif
          (t.cols > 8 ? wide : narrow)(t);
        }
      }
    }
  }
}

// Cost of a share of a product, in flops plus packed floats weighted as flops: a panel
// of 8 or fewer columns runs the 8-wide tile (half the work of a 16-wide one), one of
// kThinCols or fewer the dot products of thin_tile (the work of its columns).
constexpr double kPackFlops = 24.0;
// A parallel region more (the shared packing before an M split), in flops: about 10 us.
constexpr double kRegionFlops = 6.0e5;
double share_cost(int64_t rows, int64_t c0, int64_t c1, int64_t k, double pack_share = 1.0) {
  if (rows <= 0 || c1 <= c0) return 0.0;
  const int64_t cols = c1 - c0, rem = cols % kNr;
#if AOTC_KERNELS_AVX2
  const int64_t thin_max = kThinCols;
#else
  const int64_t thin_max = 0;
#endif
  const int64_t padded = cols / kNr * kNr + (rem <= thin_max ? rem : rem <= 8 ? 8 : kNr);
  return 2.0 * static_cast<double>(ceil_div(rows, kMr) * kMr) * static_cast<double>(padded) *
             static_cast<double>(k) +
         kPackFlops * pack_share * static_cast<double>(cols) * static_cast<double>(k);
}

}  // namespace

void conv2d_gemm_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w,
                     const float* bias, const float* residual, float* y, float* scratch) {
  const int64_t cin_g = p.c_in / p.groups, m = p.c_out / p.groups;
  const int64_t hw_in = p.h_in * p.w_in, n = p.h_out * p.w_out;
  const int64_t k = cin_g * p.kernel_h * p.kernel_w;
  const int64_t threads = pool.size();
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int64_t m_units = ceil_div(m, kMr), n_units = ceil_div(n, kNr);
  // Thread t's share [lo, hi) of `units` units: contiguous, sizes differing by at most one.
  auto share = [](int64_t units, int64_t parts, int64_t t, int64_t& lo, int64_t& hi) {
    lo = units * t / parts;
    hi = units * (t + 1) / parts;
  };
  int64_t parts = flops < 2.0 * kGemmMinFlopsPerRange ? 1 : threads;
  // A batch on many threads runs every image's product in one region: a thread takes a
  // contiguous run of (image, unit) pairs, each product cut into about threads / items
  // shares, so that a thread sweeps the weights for one share of about one image. Image by
  // image, each thread would take 1 / threads of every image and sweep the weights for each.
  const int64_t items = p.n * p.groups;
  const bool across = items > 1 && threads >= kAcrossItemsMinThreads && parts > 1;
  if (across) parts = max_i64(1, threads / items);
  // An M split packs the columns once for all threads when the scratch holds them.
  const bool prepack = !across && scratch != nullptr && conv2d_scratch_bytes(p) > 0;
  bool split_m = false;
  if (parts > 1) {
    double worst_n = 0.0, worst_m = 0.0;
    for (int64_t t = 0; t < parts; ++t) {
      int64_t lo, hi;
      share(n_units, parts, t, lo, hi);
      worst_n = worst_n > share_cost(m, lo * kNr, min_i64(n, hi * kNr), k)
                    ? worst_n
                    : share_cost(m, lo * kNr, min_i64(n, hi * kNr), k);
      share(m_units, parts, t, lo, hi);
      const double cm = share_cost(min_i64(m, hi * kMr) - lo * kMr, 0, n, k,
                                   prepack ? 1.0 / static_cast<double>(parts) : 1.0) +
                        (prepack ? kRegionFlops : 0.0);
      worst_m = worst_m > cm ? worst_m : cm;
    }
    split_m = worst_m < worst_n;
    parts = min_i64(parts, split_m ? m_units : n_units);
  }
  alignas(64) int32_t gather_entries[kMaxGatherEntries];
  const int32_t* gather = nullptr;
  if (gather_table_fits(p)) {
    gather_table(p, gather_entries);
    gather = gather_entries;
  }
  // One image-group's operands, and its product over units [u0, u1) of the split.
  struct Item {
    const float *xg, *wg, *bg, *rg;
    float* yg;
  };
  auto item_at = [&](int64_t item) {
    const int64_t img = item / p.groups, grp = item % p.groups;
    float* yg = y + (img * p.c_out + grp * m) * n;
    return Item{x + (img * p.c_in + grp * cin_g) * hw_in, w + grp * m * k,
                p.has_bias ? bias + grp * m : nullptr, residual ? residual + (yg - y) : nullptr, yg};
  };
  auto run_units = [&](const Item& it, int64_t u0, int64_t u1, const ThreadBuffer& tb, const float* packed) {
    if (split_m)
      gemm_part(p, it.xg, it.wg, it.bg, it.rg, it.yg, u0 * kMr, min_i64(m, u1 * kMr), 0, n, tb.buf, tb.floats,
                packed, gather);
    else
      gemm_part(p, it.xg, it.wg, it.bg, it.rg, it.yg, 0, m, u0 * kNr, min_i64(n, u1 * kNr), tb.buf, tb.floats,
                nullptr, gather);
  };
  const int64_t units = split_m ? m_units : n_units;
  if (across) {
    pool.parallel_pieces(
        items * units, piece_least(split_m, units, parts), [&](int64_t lo, int64_t hi, int thread) {
          const ThreadBuffer tb(pool, thread);
          while (lo < hi) {  // a piece may cross from one image's product to the next
            const int64_t item = lo / units, u0 = lo % units, u1 = min_i64(units, u0 + (hi - lo));
            run_units(item_at(item), u0, u1, tb, nullptr);
            lo += u1 - u0;
          }
        });
    return;
  }
  for (int64_t item = 0; item < items; ++item) {
    const Item it = item_at(item);
    const float* packed = nullptr;
    if (split_m && prepack) {
      const ColRanges cr = col_ranges(p, gather);
      int64_t kc, nc;
      conv2d_gemm_blocking(k, n, kc, nc);
      const int64_t n16 = ceil_div(n, kNr) * kNr;
      // Row ranges split at depth-block boundaries: each piece packs into one block.
      pool.parallel_pieces(k, min_chunk_for(n16), [&](int64_t k0, int64_t k1, int) {
        while (k0 < k1) {
          const int64_t kb = k0 / kc * kc, kcur = min_i64(kc, k - kb), end = min_i64(k1, kb + kcur);
          pack_rows(p, cr, it.xg, k0, end, kb, kcur, 0, n, scratch + kb * n16);
          k0 = end;
        }
      });
      packed = scratch;
    }
    // Pieces that a thread may take from the other's share (ThreadPool::parallel_pieces).
    // Every output is computed the same way whichever piece holds it: pieces start at whole
    // 6-row units or 16-column panels.
    pool.parallel_pieces(units, piece_least(split_m, units, parts), [&](int64_t lo, int64_t hi, int thread) {
      run_units(it, lo, hi, ThreadBuffer(pool, thread), packed);
    });
  }
}

}  // namespace aotc::rt::detail
