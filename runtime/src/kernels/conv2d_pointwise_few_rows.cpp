// conv2d_pointwise_few_rows.cpp - a 1x1 stride-1 convolution with at most 16 output
// channels, on AVX-512: every output channel of a 16-position panel in one pass, 16 zmm
// accumulators, each input row of the panel loaded once and broadcast-multiplied by the
// channels' weights, read straight from the input planes.
//
// Why: the implicit GEMM's 6-row tiles took such a layer in three passes (6, 6 and 4 rows)
// over a panel it first copied out of the input, for a depth of only 32 (mobilenet_v2's
// and efficientnet_b0's 32>16 projection at 112 x 112), and trailed ONNX Runtime on it
// (bench/results_cpu.md). The sums are the implicit GEMM's, in the same
// order (bias and residual first, then the depth in order): outputs are bit-identical.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <utility>

#include "kernel_util.h"

namespace aotc::rt::detail {
namespace {

#if AOTC_KERNELS_AVX2
constexpr int64_t kPanel = 16;
// The least panels a piece of the column range holds (ThreadPool::parallel_pieces).
constexpr int64_t kMinPiecePanels = 8;
constexpr __mmask16 kAll = 0xffff;
// Each depth step reads the next 64 bytes of another input plane: with 32 planes and 16
// output planes in flight, more streams than the hardware prefetcher follows. So each step
// also prefetches its plane two panels ahead (past the plane's end: a prefetch does not
// fault). On a 16-core Xeon at batch 8 this layer (32>16 at 112 x 112) took 0.81x the time;
// 2 panels ahead ran mobilenet_v2 and efficientnet_b0 in 0.97-0.98x, 4 and 8 no better
// (bench/results_cpu.md).
constexpr int64_t kPrefetchPanels = 2;

// Columns [c0, c1) of all M output rows of one image: y = clamp(bias + residual + W x).
template <int M>
__attribute__((target("avx512f"))) void few_rows_columns(const Conv2dParams& p, const float* x,
                                                         const float* w, const float* bias, const float* res,
                                                         float* y, int64_t c0, int64_t c1) {
  const int64_t n = p.h_out * p.w_out, k = p.c_in;
  const bool clamp = has_clamp(p.clamp_lo, p.clamp_hi);
  const __m512 lo = _mm512_set1_ps(p.clamp_lo), hi = _mm512_set1_ps(p.clamp_hi);
  for (int64_t c = c0; c < c1; c += kPanel) {
    const int64_t cols = min_i64(kPanel, c1 - c);
    const __mmask16 mask = static_cast<__mmask16>(cols == kPanel ? 0xffffu : (1u << cols) - 1u);
    __m512 acc[M];
    for (int r = 0; r < M; ++r) {
      acc[r] = bias ? _mm512_set1_ps(bias[r]) : _mm512_setzero_ps();
      if (res) acc[r] = _mm512_add_ps(acc[r], _mm512_maskz_loadu_ps(mask, res + r * n + c));
    }
    const float* xk = x + c;
    for (int64_t kk = 0; kk < k; ++kk, xk += n) {
      _mm_prefetch(reinterpret_cast<const char*>(xk + kPrefetchPanels * kPanel), _MM_HINT_T0);
      const __m512 b = _mm512_maskz_loadu_ps(mask, xk);
      for (int r = 0; r < M; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(w[r * k + kk]), b, acc[r]);
    }
    for (int r = 0; r < M; ++r) {
      // max/min return their second operand when either is NaN: a NaN result stays NaN.
      // (The zero-masking forms: GCC 12 warns that _mm512_max_ps's pass-through is unset.)
      const __m512 v = clamp ? _mm512_maskz_min_ps(kAll, hi, _mm512_maskz_max_ps(kAll, lo, acc[r])) : acc[r];
      _mm512_mask_storeu_ps(y + r * n + c, mask, v);
    }
  }
}

using ColumnsFn = void (*)(const Conv2dParams&, const float*, const float*, const float*, const float*,
                           float*, int64_t, int64_t);
template <int... M>
constexpr ColumnsFn columns_fn(int64_t rows, std::integer_sequence<int, M...>) {
  ColumnsFn fn = nullptr;
  ((fn = rows == M + 1 ? few_rows_columns<M + 1> : fn), ...);
  return fn;
}
#endif

}  // namespace

bool conv2d_pointwise_few_rows_applies(const Conv2dParams& p) {
#if AOTC_KERNELS_AVX2
  return use_avx512() && p.groups == 1 && p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 &&
         p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0 && p.h_out == p.h_in && p.w_out == p.w_in &&
         p.c_out >= 1 && p.c_out <= kPointwiseFewRowsMax && p.c_in >= 1;
#else
  (void)p;
  return false;
#endif
}

void conv2d_pointwise_few_rows_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w,
                                   const float* bias, const float* residual, float* y) {
#if AOTC_KERNELS_AVX2
  const int64_t n = p.h_out * p.w_out;
  if (p.n <= 0 || n <= 0) return;
  const ColumnsFn fn = columns_fn(p.c_out, std::make_integer_sequence<int, kPointwiseFewRowsMax>{});
  const int64_t panels = ceil_div(n, kPanel);
  const double flops =
      2.0 * static_cast<double>(p.n * p.c_out) * static_cast<double>(n) * static_cast<double>(p.c_in);
  const int64_t total = p.n * panels;
  const int64_t parts = flops < 2.0 * kGemmMinFlopsPerRange ? 1 : pool.size();
  const int64_t least = parts > 1 ? min_i64(kMinPiecePanels, max_i64(1, total / parts)) : total;
  const float* b = p.has_bias ? bias : nullptr;
  // One region over the batch's (image, panel) pairs, not one per image: one join and one
  // ragged end per layer instead of one per image, as conv2d_gemm does on many threads
  // (bench/results_cpu.md: level to a few percent ahead at batch 8).
  pool.parallel_pieces(total, least, [&](int64_t q0, int64_t q1, int) {
    while (q0 < q1) {
      const int64_t img = q0 / panels, first = q0 % panels, last = min_i64(panels, first + (q1 - q0));
      fn(p, x + img * p.c_in * n, w, b, residual ? residual + img * p.c_out * n : nullptr,
         y + img * p.c_out * n, first * kPanel, min_i64(n, last * kPanel));
      q0 += last - first;
    }
  });
#else
  (void)pool, (void)p, (void)x, (void)w, (void)bias, (void)residual, (void)y;
#endif
}

}  // namespace aotc::rt::detail
