// gemm_prepacked.cpp - C = act(A * W + beta * bias) (+ residual), clamped, where W is a constant
// right operand that the compiler packed once (prepack_gemm_weights pass, layout in
// kernels/layouts.h: depth blocks of 16-column panels, alpha folded in). A run packs nothing: the rows of A
// are the micro-kernel's broadcast operand read in place, the weight panels are read as stored.
//
// Why A broadcast and W packed (and not the convolution's orientation, weights broadcast
// and the activation packed): a linear layer's output is row-major tokens x features, so
// the 6 x 16 tile is 6 tokens x 16 features stored as two vectors per row; the other way
// round the tile would be 16 tokens x 6 features, stored transposed, and the activation
// would have to be packed on every run. Measured on bert_base's shapes (tokens 128):
// see bench/results_cpu.md.
//
// Blocking as the implicit-GEMM convolution's (conv2d_gemm_blocking): a kc x nc block of
// weight panels (<= 256 KiB, L2) is swept by every 6-row group of A, whose 6 x kc strip
// stays in L1 across the block's panels. Depth beyond kc is summed in C.
//
// Threads: one contiguous share per thread, split over N (16-column panels: each thread
// reads only its weights) or M (6-row units: each thread reads all weights), whichever
// gives the lesser largest share.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "gemm_micro_kernel.h"
#include "kernel_util.h"

namespace aotc::rt::detail {
namespace {

bool direct_bias(const GemmParams& p, bool use_bias) {
  return !use_bias ||
         (p.beta == 1.0f && (p.bias_kind == BiasKind::PerRow || p.bias_kind == BiasKind::PerColumn));
}

// C[i][j] = beta * bias + residual for rows [m0, m1), columns [n0, n1): the start of the
// sum when the bias needs scaling or is a full matrix, and the whole result when k == 0.
// With an activation the residual comes after it (gemm_activation_rows), not here.
void init_c(const GemmParams& p, bool use_bias, const float* bias, float* c, int64_t ldc, int64_t m0,
            int64_t m1, int64_t n0, int64_t n1) {
  const int64_t ldr = p.ldr > 0 ? p.ldr : p.n;
  for (int64_t i = m0; i < m1; ++i) {
    float* crow = c + i * ldc;
    for (int64_t j = n0; j < n1; ++j) {
      float v = 0.0f;
      if (use_bias) {
        switch (p.bias_kind) {
          case BiasKind::PerRow:
            v = p.beta * bias[i];
            break;
          case BiasKind::PerColumn:
            v = p.beta * bias[j];
            break;
          case BiasKind::Full:
            v = p.beta * bias[i * p.n + j];
            break;
          case BiasKind::None:
            break;
        }
      }
      if (p.residual && p.activation == GemmActivation::None) v += p.residual[i * ldr + j];
      crow[j] = v;
    }
  }
}

// Rows [m0, m1) x columns [n0, n1) (n0 a multiple of 16) on the calling thread.
// a_is_weight: A is a constant read once per run (the Winograd products' transformed
// weights), whose next 6-row strip is fetched while the current one's tiles run.
void prepacked_part(const GemmParams& p, bool use_bias, const float* a, int64_t lda, const float* packed,
                    const float* bias, float* c, int64_t ldc, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                    bool a_is_weight) {
  const int64_t k = p.k;
  const bool direct = direct_bias(p, use_bias);
  if (!direct) init_c(p, use_bias, bias, c, ldc, m0, m1, n0, n1);
  const float* row_bias = direct && use_bias && p.bias_kind == BiasKind::PerRow ? bias : nullptr;
  const float* col_bias = direct && use_bias && p.bias_kind == BiasKind::PerColumn ? bias : nullptr;
  // An activation comes before the residual and the clamp: the tiles then write the bare
  // sums and gemm_activation_rows finishes each strip of rows after its last depth block.
  const bool act = p.activation != GemmActivation::None;
  const float* residual = direct && !act ? p.residual : nullptr;
  const int64_t ldr = p.ldr > 0 ? p.ldr : p.n;
  // kc as the packing chose it (it depends on k only); nc for this share.
  int64_t kc, nc;
  conv2d_gemm_blocking(k, n1 - n0, kc, nc);
  const int64_t n16 = ceil_div(p.n, kNr) * kNr;
  Tile t{};
  t.lda = lda;
  t.ldb = kNr;
  t.ldc = ldc;
  t.lo = p.clamp_lo;
  t.hi = p.clamp_hi;
  t.clamp = !act && has_clamp(p.clamp_lo, p.clamp_hi);
  alignas(32) float bias_pad[kNr];
  alignas(32) float res_pad[kMr * kNr];
#if AOTC_KERNELS_AVX2
  // A last panel of at most kThinCols columns runs as dot products (thin_tile): the Winograd
  // products of 28 x 28 (F(4x4)) and 14 x 14 (F(2x2)) planes have 49 columns, 3 panels and
  // one column, which the 8-wide tile took at most of a full panel's time.
  alignas(32) float thin_cols[kThinCols * gemm_conv::kMaxKc];
#endif
  for (int64_t nb = n0; nb < n1; nb += nc) {
    const int64_t ncols = min_i64(nc, n1 - nb);
    const int64_t panels = ceil_div(ncols, kNr);
    for (int64_t k0 = 0; k0 < k; k0 += kc) {
      const int64_t kcur = min_i64(kc, k - k0);
      t.kc = kcur;
      t.first = direct && k0 == 0;
      t.last = k0 + kcur >= k;
#if AOTC_KERNELS_AVX2
      const int64_t last_col = nb + (panels - 1) * kNr, last_cols = min_i64(kNr, n1 - last_col);
      const bool thin = last_cols <= kThinCols;
      if (thin) transpose_thin(packed + k0 * n16 + last_col / kNr * kcur * kNr, kcur, last_cols, thin_cols);
#endif
      for (int64_t m = m0; m < m1; m += kMr) {
        const int64_t rows = min_i64(kMr, m1 - m);
        const TileFn wide = tile_fn<2>(rows), narrow = tile_fn<1>(rows);
        t.a = a + m * lda + k0;
        t.bias = row_bias ? row_bias + m : nullptr;
        const int64_t next_rows = a_is_weight ? min_i64(kMr, m1 - m - kMr) : 0;
        // With fewer than kPrefetchSlots panels (the 16 tiles of a 7 x 7 plane: one), a full
        // tile's depth is cut into sub-blocks, each after its share of the next strip's
        // prefetch, rather than the whole strip fetched before one tile: the ResNets' 7 x 7
        // layers read many transformed weights per image, and 4 slots were faster than 2 or
        // 8 with bit-identical outputs (bench/results_cpu.md).
        constexpr int64_t kPrefetchSlots = 4, kMinSubDepth = 64;
        const int64_t splits =
            next_rows > 0 && panels < kPrefetchSlots
                ? max_i64(1, min_i64(ceil_div(kPrefetchSlots, panels), kcur / kMinSubDepth))
                : 1;
        for (int64_t q = 0; q < panels; ++q) {
          if (next_rows > 0 && splits == 1)
            prefetch_strip_part(t.a + kMr * lda, lda, next_rows, kcur, q, panels);
          const int64_t col = nb + q * kNr;
          t.b = packed + k0 * n16 + col / kNr * kcur * kNr;
          t.c = c + m * ldc + col;
          t.cols = min_i64(kNr, n1 - col);
          t.col_bias = col_bias ? col_bias + col : nullptr;
          t.res = residual ? residual + m * ldr + col : nullptr;
          t.ldr = ldr;
#if AOTC_KERNELS_AVX2
          if (thin && q == panels - 1) {
            if (splits > 1) prefetch_strip_part(t.a + kMr * lda, lda, next_rows, kcur, q, panels);
            thin_fn(rows)(t, thin_cols, kcur);
            continue;
          }
#endif
          pad_ragged_operands(t, rows, bias_pad, res_pad);
          if (splits == 1) {
#if AOTC_KERNELS_AVX2
            // Panels q and q + 1 together (the next one may not be the thin one).
            if (pair_fits(rows, n1 - col) && !(thin && q + 1 == panels - 1) && q + 1 < panels) {
              if (next_rows > 0) prefetch_strip_part(t.a + kMr * lda, lda, next_rows, kcur, q + 1, panels);
              micro_tile_pair(t, kcur * kNr);
              ++q;
              continue;
            }
#endif
            (t.cols > 8 ? wide : narrow)(t);
            continue;
          }
          // Bit-identical to one pass: the partial sums wait in C, unclamped.
          for (int64_t sub = 0; sub < splits; ++sub) {
            prefetch_strip_part(t.a + kMr * lda, lda, next_rows, kcur, q * splits + sub, panels * splits);
            const int64_t d0 = kcur * sub / splits, d1 = kcur * (sub + 1) / splits;
            Tile ts = t;
            ts.a = t.a + d0;
            ts.b = t.b + d0 * kNr;
            ts.kc = d1 - d0;
            ts.first = t.first && sub == 0;
            ts.last = t.last && sub == splits - 1;
            (t.cols > 8 ? wide : narrow)(ts);
          }
        }
        if (act && t.last)
          gemm_activation_rows(p, c + m * ldc + nb, ldc, rows, ncols,
                               p.residual ? p.residual + m * ldr + nb : nullptr, ldr);
      }
    }
  }
}

// Cost of a share in flops (a panel of 8 or fewer columns runs the 8-wide tile, one of
// kThinCols or fewer thin_tile's dot products), plus the weight floats it reads, weighted as
// flops: they come from memory, once per share.
constexpr double kWeightFloatFlops = 24.0;
double share_cost(int64_t rows, int64_t cols, int64_t k) {
  if (rows <= 0 || cols <= 0) return 0.0;
#if AOTC_KERNELS_AVX2
  const int64_t thin_max = kThinCols;
#else
  const int64_t thin_max = 0;
#endif
  const int64_t rem = cols % kNr;
  const int64_t padded = cols / kNr * kNr + (rem <= thin_max ? rem : rem <= 8 ? 8 : kNr);
  return 2.0 * static_cast<double>(ceil_div(rows, kMr) * kMr) * static_cast<double>(padded) *
             static_cast<double>(k) +
         kWeightFloatFlops * static_cast<double>(ceil_div(cols, kNr) * kNr) * static_cast<double>(k);
}

}  // namespace

// The Winograd products (kernel_util.h): the prepacked product without any epilogue.
void gemm_packed_f32(const float* a, int64_t lda, const float* packed, int64_t n, int64_t k, float* c,
                     int64_t ldc, int64_t m0, int64_t m1) {
  GemmParams p;
  p.m = m1;
  p.n = n;
  p.k = k;
  prepacked_part(p, false, a, lda, packed, nullptr, c, ldc, m0, m1, 0, n, true);
}
}  // namespace aotc::rt::detail

namespace aotc::rt {

void gemm_prepacked_f32(ThreadPool& pool, const GemmParams& p, const float* a, const float* packed,
                        const float* bias, float* c) {
  using namespace detail;
  if (p.m <= 0 || p.n <= 0) return;
  const int64_t lda = p.lda > 0 ? p.lda : p.k;
  const int64_t ldc = p.ldc > 0 ? p.ldc : p.n;
  // beta == 0 ignores the bias entirely (as torch's addmm does, even for NaN bias).
  const bool use_bias = p.bias_kind != BiasKind::None && bias != nullptr && p.beta != 0.0f;
  if (p.k <= 0) {
    init_c(p, use_bias, bias, c, ldc, 0, p.m, 0, p.n);
    if (p.activation != GemmActivation::None)
      gemm_activation_rows(p, c, ldc, p.m, p.n, p.residual, p.ldr > 0 ? p.ldr : p.n);
    else if (has_clamp(p.clamp_lo, p.clamp_hi))
      for (int64_t i = 0; i < p.m; ++i) clamp_row(c + i * ldc, p.n, p.clamp_lo, p.clamp_hi);
    return;
  }
  const double flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
  const int64_t m_units = ceil_div(p.m, kMr), n_units = ceil_div(p.n, kNr);
  // Thread t's share [lo, hi) of `units` units: contiguous, sizes differing by at most one.
  auto share = [](int64_t units, int64_t parts, int64_t t, int64_t& lo, int64_t& hi) {
    lo = units * t / parts;
    hi = units * (t + 1) / parts;
  };
  int64_t parts = flops < 2.0 * kGemmMinFlopsPerRange ? 1 : pool.size();
  const int64_t threads = parts;
  bool split_m = false;
  if (parts > 1) {
    double worst_n = 0.0, worst_m = 0.0;
    for (int64_t t = 0; t < parts; ++t) {
      int64_t lo, hi;
      share(n_units, parts, t, lo, hi);
      const double cn = share_cost(p.m, min_i64(p.n, hi * kNr) - lo * kNr, p.k);
      share(m_units, parts, t, lo, hi);
      const double cm = share_cost(min_i64(p.m, hi * kMr) - lo * kMr, p.n, p.k);
      worst_n = worst_n > cn ? worst_n : cn;
      worst_m = worst_m > cm ? worst_m : cm;
    }
    split_m = worst_m < worst_n;
    parts = min_i64(parts, split_m ? m_units : n_units);
  }
  // With many threads an N share is a few panels: each 6-row strip of a comes from memory
  // for the share's first panel and then serves only those few (sgemm 2048^3 ran at 0.64 of
  // torch.mm's rate on 16 threads, 0.94 on 2). There, M is cut into blocks as well, so that
  // a share is about kMinSharePanels panels of one block: units run block-major, panels
  // within a block. On fewer threads the cost model's choice above stands.
  constexpr int64_t kMinSharePanels = 16, kMinThreadsForBlocks = 8;
  int64_t m_blocks = 1;
  if (!split_m && threads >= kMinThreadsForBlocks && n_units < threads * kMinSharePanels) {
    m_blocks = min_i64(m_units, ceil_div(threads * kMinSharePanels, n_units));
    parts = threads;
  }
  // Pieces that a thread may take from the other's share (ThreadPool::parallel_pieces), at
  // whole 6-row units or 16-column panels: every output is computed the same way whichever
  // piece holds it. An M piece reads all the packed weights again, an N piece all of a (of
  // its block of rows).
  const int64_t units = split_m ? m_units : m_blocks * n_units;
  pool.parallel_pieces(units, piece_least(split_m, units, parts), [&](int64_t lo, int64_t hi, int) {
    if (split_m) {
      prepacked_part(p, use_bias, a, lda, packed, bias, c, ldc, lo * kMr, min_i64(p.m, hi * kMr), 0, p.n,
                     false);
      return;
    }
    while (lo < hi) {  // a piece may cross from one block of rows to the next
      const int64_t block = lo / n_units, q0 = lo % n_units, q1 = min_i64(n_units, q0 + (hi - lo));
      const int64_t m0 = m_units * block / m_blocks * kMr;
      const int64_t m1 = min_i64(p.m, m_units * (block + 1) / m_blocks * kMr);
      prepacked_part(p, use_bias, a, lda, packed, bias, c, ldc, m0, m1, q0 * kNr, min_i64(p.n, q1 * kNr),
                     false);
      lo += q1 - q0;
    }
  });
}

}  // namespace aotc::rt
