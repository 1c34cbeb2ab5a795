// gemm_micro_kernel.h - the register-tiled 6 x 16 single-precision micro-kernel that the
// implicit-GEMM convolution, the Winograd products and the GEMM on weights packed at compile
// time share (internal to the runtime). A tile is rows x (8 or 16) outputs over a depth
// block: one row operand broadcast per row (six row streams, read in place) times one
// panel of 16 columns (kc rows, ldb apart).
#pragma once

#include "kernel_util.h"

namespace aotc::rt::detail {
namespace {

constexpr int64_t kMr = 6;   // rows of a micro-tile (the broadcast operand)
constexpr int64_t kNr = 16;  // columns of a micro-tile (two 8-float vectors)

// The epilogue and operand description shared by the micro-kernels.
// On the first depth block the accumulators start from the row bias, the column bias and
// the residual (each optional) instead of C; the column bias and the residual are read 8 *
// NV columns wide, so a ragged tile passes them through padded copies.
struct Tile {
  const float* a;  // broadcast operand of the tile's first row, at depth k0
  int64_t lda;     // its row stride
  const float* b;  // panel: kc rows of 16 floats, ldb apart (16 when packed)
  int64_t ldb;
  int64_t kc;
  float* c;  // output of the tile's first row and column
  int64_t ldc;
  int64_t cols;           // valid columns, 1..16
  bool first, last;       // first depth block (start from bias / zero), last (clamp)
  const float* bias;      // bias of the tile's first row, or null
  const float* col_bias;  // bias of the tile's first column, or null
  const float* res;       // residual of the tile's first row and column (row stride ldr), or null
  int64_t ldr;
  float lo, hi;
  bool clamp;
};

#if AOTC_KERNELS_AVX2
// MR rows x 8 * NV columns: MR * NV accumulators, NV panel vectors and one broadcast, at
// most 15 of the 16 ymm registers for 6 x 16. The accumulators are named variables, not
// an array: GCC 12 kept an array of them in memory and stored all twelve every step
// (half the speed).
#define AOTC_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
template <int MR, int NV>
void micro_tile(const Tile& t) {
  const __m256 zero = _mm256_setzero_ps();
#define AOTC_DECL(r) __m256 c##r##0 = zero, c##r##1 = zero;
  AOTC_ROWS(AOTC_DECL)
#undef AOTC_DECL
  const bool full = t.cols == 8 * NV;
  if (t.first) {
#define AOTC_INIT(r)                                           \
  if constexpr (r < MR) {                                      \
    c##r##0 = t.bias ? _mm256_broadcast_ss(t.bias + r) : zero; \
    if constexpr (NV == 2) c##r##1 = c##r##0;                  \
  }
    AOTC_ROWS(AOTC_INIT)
#undef AOTC_INIT
    if (t.col_bias) {
      const __m256 b0 = _mm256_loadu_ps(t.col_bias);
      const __m256 b1 = NV == 2 ? _mm256_loadu_ps(t.col_bias + 8) : zero;
#define AOTC_ADD(r)                                              \
  if constexpr (r < MR) {                                        \
    c##r##0 = _mm256_add_ps(c##r##0, b0);                        \
    if constexpr (NV == 2) c##r##1 = _mm256_add_ps(c##r##1, b1); \
  }
      AOTC_ROWS(AOTC_ADD)
#undef AOTC_ADD
    }
    if (t.res) {
#define AOTC_ADD(r)                                                                                  \
  if constexpr (r < MR) {                                                                            \
    c##r##0 = _mm256_add_ps(c##r##0, _mm256_loadu_ps(t.res + r * t.ldr));                            \
    if constexpr (NV == 2) c##r##1 = _mm256_add_ps(c##r##1, _mm256_loadu_ps(t.res + r * t.ldr + 8)); \
  }
      AOTC_ROWS(AOTC_ADD)
#undef AOTC_ADD
    }
  } else if (full) {
#define AOTC_LOAD(r)                                                       \
  if constexpr (r < MR) {                                                  \
    c##r##0 = _mm256_loadu_ps(t.c + r * t.ldc);                            \
    if constexpr (NV == 2) c##r##1 = _mm256_loadu_ps(t.c + r * t.ldc + 8); \
  }
    AOTC_ROWS(AOTC_LOAD)
#undef AOTC_LOAD
  } else {  // a ragged last panel: through a buffer (its columns past cols are ignored)
    alignas(32) float tmp[MR][16] = {};
    for (int r = 0; r < MR; ++r)
      for (int64_t c = 0; c < t.cols; ++c) tmp[r][c] = t.c[r * t.ldc + c];
#define AOTC_LOAD(r)                                             \
  if constexpr (r < MR) {                                        \
    c##r##0 = _mm256_load_ps(&tmp[r][0]);                        \
    if constexpr (NV == 2) c##r##1 = _mm256_load_ps(&tmp[r][8]); \
  }
    AOTC_ROWS(AOTC_LOAD)
#undef AOTC_LOAD
  }
  // Row pointers and depth in locals: the loop then reloads nothing from t, and is
  // unrolled by 4 so that its pointer updates and branch cost less than one FMA slot.
  const float* a0 = t.a;
  const float* a1 = a0 + (MR > 1 ? t.lda : 0);
  const float* a2 = a0 + (MR > 2 ? 2 * t.lda : 0);
  const float* a3 = a0 + (MR > 3 ? 3 * t.lda : 0);
  const float* a4 = a0 + (MR > 4 ? 4 * t.lda : 0);
  const float* a5 = a0 + (MR > 5 ? 5 * t.lda : 0);
  const float* b = t.b;
  const int64_t kc = t.kc, ldb = t.ldb;
#define AOTC_FMA(r, kk)                                                \
  if constexpr (r < MR) {                                              \
    const __m256 av = _mm256_broadcast_ss(a##r + (kk));                \
    c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                        \
    if constexpr (NV == 2) c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1); \
  }
#define AOTC_STEP(kk)                                                                               \
  {                                                                                                 \
    const __m256 b0 = _mm256_loadu_ps(b + (kk)*ldb);                                                \
    const __m256 b1 = NV == 2 ? _mm256_loadu_ps(b + (kk)*ldb + 8) : zero;                           \
    AOTC_FMA(0, kk) AOTC_FMA(1, kk) AOTC_FMA(2, kk) AOTC_FMA(3, kk) AOTC_FMA(4, kk) AOTC_FMA(5, kk) \
  }
  // (The panel is loaded unaligned: the arena scratch is only float-aligned.)
  int64_t k = 0;
  for (; k + 4 <= kc; k += 4, b += 4 * ldb, a0 += 4, a1 += 4, a2 += 4, a3 += 4, a4 += 4, a5 += 4) {
    AOTC_STEP(0)
    AOTC_STEP(1)
    AOTC_STEP(2)
    AOTC_STEP(3)
  }
  for (; k < kc; ++k, b += ldb, ++a0, ++a1, ++a2, ++a3, ++a4, ++a5) AOTC_STEP(0)
#undef AOTC_STEP
#undef AOTC_FMA
  if (t.last && t.clamp) {
    // max/min return their second operand when either is NaN: a NaN result stays NaN.
    const __m256 lo = _mm256_set1_ps(t.lo), hi = _mm256_set1_ps(t.hi);
#define AOTC_CLAMP(r)                                                               \
  if constexpr (r < MR) {                                                           \
    c##r##0 = _mm256_min_ps(hi, _mm256_max_ps(lo, c##r##0));                        \
    if constexpr (NV == 2) c##r##1 = _mm256_min_ps(hi, _mm256_max_ps(lo, c##r##1)); \
  }
    AOTC_ROWS(AOTC_CLAMP)
#undef AOTC_CLAMP
  }
  if (full) {
#define AOTC_STORE(r)                                                      \
  if constexpr (r < MR) {                                                  \
    _mm256_storeu_ps(t.c + r * t.ldc, c##r##0);                            \
    if constexpr (NV == 2) _mm256_storeu_ps(t.c + r * t.ldc + 8, c##r##1); \
  }
    AOTC_ROWS(AOTC_STORE)
#undef AOTC_STORE
  } else {
    alignas(32) float tmp[MR][16];
#define AOTC_STORE(r)                                            \
  if constexpr (r < MR) {                                        \
    _mm256_store_ps(&tmp[r][0], c##r##0);                        \
    if constexpr (NV == 2) _mm256_store_ps(&tmp[r][8], c##r##1); \
  }
    AOTC_ROWS(AOTC_STORE)
#undef AOTC_STORE
    for (int r = 0; r < MR; ++r)
      for (int64_t c = 0; c < t.cols; ++c) t.c[r * t.ldc + c] = tmp[r][c];
  }
}
#undef AOTC_ROWS
#else
// Portable form of the same tile: fixed-size loops that the compiler vectorises (NEON).
template <int MR, int NV>
void micro_tile(const Tile& t) {
  constexpr int W = 8 * NV;
  float acc[MR][W];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < W; ++c) {
      if (t.first) {
        acc[r][c] = t.bias ? t.bias[r] : 0.0f;
        if (t.col_bias) acc[r][c] += t.col_bias[c];
        if (t.res) acc[r][c] += t.res[r * t.ldr + c];
      } else {
        acc[r][c] = c < t.cols ? t.c[r * t.ldc + c] : 0.0f;
      }
    }
  const float* b = t.b;
  for (int64_t k = 0; k < t.kc; ++k, b += t.ldb)
    for (int r = 0; r < MR; ++r) {
      const float av = t.a[r * t.lda + k];
      for (int c = 0; c < W; ++c) acc[r][c] += av * b[c];
    }
  for (int r = 0; r < MR; ++r)
    for (int64_t c = 0; c < t.cols; ++c)
      t.c[r * t.ldc + c] = t.last && t.clamp ? clamp_value(acc[r][c], t.lo, t.hi) : acc[r][c];
}
#endif

// On a tile's first depth block the micro-kernel reads 8 * NV columns of the column bias and
// of `rows` residual rows; for a ragged tile (cols < 16) they go through zero-padded copies
// (col_pad: 16 floats, res_pad: 6 x 16), as past the last column may be past the end.
inline void pad_ragged_operands(Tile& t, int64_t rows, float* col_pad, float* res_pad) {
  if (!t.first || t.cols >= kNr) return;
  if (t.col_bias) {
    for (int64_t j = 0; j < kNr; ++j) col_pad[j] = j < t.cols ? t.col_bias[j] : 0.0f;
    t.col_bias = col_pad;
  }
  if (t.res) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < kNr; ++j) res_pad[r * kNr + j] = j < t.cols ? t.res[r * t.ldr + j] : 0.0f;
    t.res = res_pad;
    t.ldr = kNr;
  }
}

using TileFn = void (*)(const Tile&);
template <int NV>
TileFn tile_fn(int64_t rows) {
  switch (rows) {
    case 1:
      return micro_tile<1, NV>;
    case 2:
      return micro_tile<2, NV>;
    case 3:
      return micro_tile<3, NV>;
    case 4:
      return micro_tile<4, NV>;
    case 5:
      return micro_tile<5, NV>;
    default:
      return micro_tile<6, NV>;
  }
}

}  // namespace
}  // namespace aotc::rt::detail
