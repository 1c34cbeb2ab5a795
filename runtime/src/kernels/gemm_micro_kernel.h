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

// The least a piece of a product split over `parts` threads holds (ThreadPool::
// parallel_pieces over `units` 6-row units when split_m, else 16-column panels), for the
// convolution GEMM and the prepacked GEMM: an M piece reads all the packed columns again,
// an N piece the weights of its depth blocks. One part: one piece, on the calling thread.
constexpr int64_t kMinPieceRowUnits = 8, kMinPiecePanels = 4;
inline int64_t piece_least(bool split_m, int64_t units, int64_t parts) {
  return parts > 1 ? min_i64(split_m ? kMinPieceRowUnits : kMinPiecePanels, units / parts) : units;
}

// A cache line toward L2 (prefetcht1). As asm volatile: GCC 12 deleted a loop of
// __builtin_prefetch as one without side effects (at -O1 always, at -O3 with a branch in it).
inline void prefetch_line_l2(const char* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht1 %0" : : "m"(*p));
#else
  __builtin_prefetch(p, 0, 2);
#endif
}

// Part `part` of `parts` of the cache lines of a rows x cols strip of the broadcast operand
// (row-major, ld floats apart), fetched toward L2 while the current strip's tiles run: a
// convolution's weights are read once per run and arrive from DRAM. The micro-kernel
// consumes a strip's lines in a burst (its first tile), faster than the hardware's stream
// prefetch runs ahead, and then computes on them from L1 for the other panels; fetched one
// strip ahead, the burst finds them in L2, which made the CNNs faster with bit-identical
// outputs and costs nothing where the weights are in cache (bench/results_cpu.md).
// The lines are walked without a division: with one per line (i / lines_per_row), the
// prefetching slowed a 7 x 7 layer with its weights in cache.
inline void prefetch_strip_part(const float* a, int64_t ld, int64_t rows, int64_t cols, int64_t part,
                                int64_t parts) {
  constexpr int64_t kLineBytes = 64;
  for (int64_t r = rows * part / parts; r < rows * (part + 1) / parts; ++r) {
    const char* row = reinterpret_cast<const char*>(a + r * ld);
    const char* end = reinterpret_cast<const char*>(a + r * ld + cols);
    for (const char* at = row - reinterpret_cast<uintptr_t>(row) % kLineBytes; at < end; at += kLineBytes)
      prefetch_line_l2(at);
  }
}

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
  // From a row's column 0 to its column 8 in C: 8 for dense rows; the fused expansion
  // (conv2d_expand_depthwise.cpp) writes columns 0-7 and 8-15 to two channel units.
  int64_t c_half = 8;
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
// The depth loop is assembly. Written with intrinsics and the twelve accumulators as named
// variables, GCC 12 still spilled one of them to the stack inside the loop of the runtime's
// 6 x 16 tile (perf annotate on vit_b_16), a store and a reload on an FMA chain every step
// (as an array it kept all twelve in memory). In assembly the loop runs close to bare
// FMAs' rate in L1, where the spilling build was far below it (bench/results_cpu.md).
//
// Registers: ymm0-1 the panel's vectors, ymm2 the broadcast, ymm4-15 the accumulators:
// vector j of row r is ymm(4 + NV * r + j), stored at acc + 8 * (NV * r + j) (acc holds 12
// vectors whatever the tile: all twelve are loaded and stored, which costs less than a
// branch). Rows 0-2 are addressed from a, rows 3-5 from a + 3 * lda.
#define AOTC_AROW0 "(%[a])"
#define AOTC_AROW1 "(%[a],%[lda],1)"
#define AOTC_AROW2 "(%[a],%[lda],2)"
#define AOTC_AROW3 "(%[a3])"
#define AOTC_AROW4 "(%[a3],%[lda],1)"
#define AOTC_AROW5 "(%[a3],%[lda],2)"
// One row of one depth step: broadcast a[r][k] (byte offset off), one FMA per panel vector.
#define AOTC_ROW_NV1(off, row, r0) \
  "vbroadcastss " #off row         \
  ", %%ymm2\n\t"                   \
  "vfmadd231ps %%ymm0, %%ymm2, %%ymm" #r0 "\n\t"
#define AOTC_ROW_NV2(off, row, r0, r1) \
  AOTC_ROW_NV1(off, row, r0) "vfmadd231ps %%ymm1, %%ymm2, %%ymm" #r1 "\n\t"
#define AOTC_ROWS1_NV1(off) AOTC_ROW_NV1(off, AOTC_AROW0, 4)
#define AOTC_ROWS2_NV1(off) AOTC_ROWS1_NV1(off) AOTC_ROW_NV1(off, AOTC_AROW1, 5)
#define AOTC_ROWS3_NV1(off) AOTC_ROWS2_NV1(off) AOTC_ROW_NV1(off, AOTC_AROW2, 6)
#define AOTC_ROWS4_NV1(off) AOTC_ROWS3_NV1(off) AOTC_ROW_NV1(off, AOTC_AROW3, 7)
#define AOTC_ROWS5_NV1(off) AOTC_ROWS4_NV1(off) AOTC_ROW_NV1(off, AOTC_AROW4, 8)
#define AOTC_ROWS6_NV1(off) AOTC_ROWS5_NV1(off) AOTC_ROW_NV1(off, AOTC_AROW5, 9)
#define AOTC_ROWS1_NV2(off) AOTC_ROW_NV2(off, AOTC_AROW0, 4, 5)
#define AOTC_ROWS2_NV2(off) AOTC_ROWS1_NV2(off) AOTC_ROW_NV2(off, AOTC_AROW1, 6, 7)
#define AOTC_ROWS3_NV2(off) AOTC_ROWS2_NV2(off) AOTC_ROW_NV2(off, AOTC_AROW2, 8, 9)
#define AOTC_ROWS4_NV2(off) AOTC_ROWS3_NV2(off) AOTC_ROW_NV2(off, AOTC_AROW3, 10, 11)
#define AOTC_ROWS5_NV2(off) AOTC_ROWS4_NV2(off) AOTC_ROW_NV2(off, AOTC_AROW4, 12, 13)
#define AOTC_ROWS6_NV2(off) AOTC_ROWS5_NV2(off) AOTC_ROW_NV2(off, AOTC_AROW5, 14, 15)
#define AOTC_PANEL_NV1 "vmovups (%[b]), %%ymm0\n\t"
#define AOTC_PANEL_NV2 AOTC_PANEL_NV1 "vmovups 32(%[b]), %%ymm1\n\t"
#define AOTC_STEP(panel, rows, off) panel rows(off) "add %[ldb], %[b]\n\t"
#define AOTC_ACC(i) #i "*32(%[acc])"
// clang-format 14 reflows this macro differently on every run: kept as written.
// clang-format off
#define AOTC_ACC_ALL(X)                                                                     \
  X(AOTC_ACC(0), 4) X(AOTC_ACC(1), 5) X(AOTC_ACC(2), 6) X(AOTC_ACC(3), 7) X(AOTC_ACC(4), 8) \
  X(AOTC_ACC(5), 9) X(AOTC_ACC(6), 10) X(AOTC_ACC(7), 11) X(AOTC_ACC(8), 12)                \
  X(AOTC_ACC(9), 13) X(AOTC_ACC(10), 14) X(AOTC_ACC(11), 15)
// clang-format on
#define AOTC_ACC_LOAD(mem, reg) "vmovaps " mem ", %%ymm" #reg "\n\t"
#define AOTC_ACC_STORE(mem, reg) "vmovaps %%ymm" #reg ", " mem "\n\t"
// kc steps, unrolled by 4 (a's byte offsets 0, 4, 8, 12; the panel pointer moves by ldb),
// from a and a3 (rows 3-5) set up, to label 4 (the epilogue follows).
#define AOTC_LOOP(panel, rows) \
  "cmp $4, %[kc]\n\t"                                                                                  \
  "jb 2f\n\t"                                                                                          \
  "1:\n\t" AOTC_STEP(panel, rows, 0) AOTC_STEP(panel, rows, 4) AOTC_STEP(panel, rows, 8)                \
      AOTC_STEP(panel, rows, 12) "add $16, %[a]\n\t"                                                   \
  "add $16, %[a3]\n\t"                                                                                 \
  "sub $4, %[kc]\n\t"                                                                                  \
  "cmp $4, %[kc]\n\t"                                                                                  \
  "jae 1b\n\t"                                                                                         \
  "2:\n\t"                                                                                             \
  "test %[kc], %[kc]\n\t"                                                                              \
  "jz 4f\n\t"                                                                                          \
  "3:\n\t" AOTC_STEP(panel, rows, 0) "add $4, %[a]\n\t"                                                \
  "add $4, %[a3]\n\t"                                                                                  \
  "dec %[kc]\n\t"                                                                                      \
  "jnz 3b\n\t"                                                                                         \
  "4:\n\t"
#define AOTC_LOOP_CLOBBERS                                                                           \
  "xmm0", "xmm1", "xmm2", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
      "xmm13", "xmm14", "xmm15", "cc", "memory"
#define AOTC_DEPTH_LOOP(panel, rows) \
  asm volatile(AOTC_ACC_ALL(AOTC_ACC_LOAD)                                                           \
               "lea (%[a],%[lda],2), %[a3]\n\t"                                                      \
               "add %[lda], %[a3]\n\t"                                                               \
               AOTC_LOOP(panel, rows) AOTC_ACC_ALL(AOTC_ACC_STORE)                                                 \
               : [a] "+r"(a), [a3] "=&r"(a3), [b] "+r"(b), [kc] "+r"(kc)                             \
               : [lda] "r"(lda_bytes), [ldb] "r"(ldb_bytes), [acc] "r"(acc)                          \
               : AOTC_LOOP_CLOBBERS)

// The same loop for a full tile, started and finished in the registers: the accumulators
// start from the row bias (broadcast), the column bias, zero, C, or acc (the residual and
// the other mixed starts, filled by the caller), and the tile is clamped (when `clamp`) and
// stored straight to C: rows r at c + r * ldc, the tile's second 8 columns c_half further.
// Through acc (store, reload, clamp, store, reload, store to C) a full tile's epilogue cost a
// fifth of mobilenet_v2's 16- and 24-deep expansions (perf annotate).
#define AOTC_CROW0 "(%[c])"
#define AOTC_CROW1 "(%[c],%[ldc],1)"
#define AOTC_CROW2 "(%[c],%[ldc],2)"
#define AOTC_CROW3 "(%[c3])"
#define AOTC_CROW4 "(%[c3],%[ldc],1)"
#define AOTC_CROW5 "(%[c3],%[ldc],2)"
// X(i, reg) for rows i = 0 .. MR - 1 and their registers (a list of six: one column half).
#define AOTC_EACH1(X, r0, r1, r2, r3, r4, r5) X(0, r0)
#define AOTC_EACH2(X, r0, r1, r2, r3, r4, r5) AOTC_EACH1(X, r0, r1, r2, r3, r4, r5) X(1, r1)
#define AOTC_EACH3(X, r0, r1, r2, r3, r4, r5) AOTC_EACH2(X, r0, r1, r2, r3, r4, r5) X(2, r2)
#define AOTC_EACH4(X, r0, r1, r2, r3, r4, r5) AOTC_EACH3(X, r0, r1, r2, r3, r4, r5) X(3, r3)
#define AOTC_EACH5(X, r0, r1, r2, r3, r4, r5) AOTC_EACH4(X, r0, r1, r2, r3, r4, r5) X(4, r4)
#define AOTC_EACH6(X, r0, r1, r2, r3, r4, r5) AOTC_EACH5(X, r0, r1, r2, r3, r4, r5) X(5, r5)
#define AOTC_EACH_(MR, X, ...) AOTC_EACH##MR(X, __VA_ARGS__)
#define AOTC_EACH(MR, X, regs) AOTC_EACH_(MR, X, regs)
// Vector j of row r is ymm(4 + NV * r + j): the registers of column half 0 and 1 per row.
#define AOTC_NV1_REGS 4, 5, 6, 7, 8, 9
#define AOTC_NV2_HALF0 4, 6, 8, 10, 12, 14
#define AOTC_NV2_HALF1 5, 7, 9, 11, 13, 15
// Per row i and register: store to C, load from C, broadcast the row bias (%[acc] holds
// it), copy the column bias (in ymm0 / ymm1), zero, clamp (lo, hi in ymm0, ymm1; NaN stays
// NaN: max and min return their second source, AT&T's first operand, when either is NaN).
#define AOTC_ST_AT(i, reg) "vmovups %%ymm" #reg ", " AOTC_CROW##i "\n\t"
#define AOTC_LD_AT(i, reg) "vmovups " AOTC_CROW##i ", %%ymm" #reg "\n\t"
#define AOTC_RB_AT(i, reg) "vbroadcastss 4*" #i "(%[acc]), %%ymm" #reg "\n\t"
#define AOTC_CB0_AT(i, reg) "vmovaps %%ymm0, %%ymm" #reg "\n\t"
#define AOTC_CB1_AT(i, reg) "vmovaps %%ymm1, %%ymm" #reg "\n\t"
#define AOTC_ZERO_AT(i, reg) "vxorps %%ymm" #reg ", %%ymm" #reg ", %%ymm" #reg "\n\t"
#define AOTC_CL_AT(i, reg) \
  "vmaxps %%ymm" #reg ", %%ymm0, %%ymm" #reg "\n\tvminps %%ymm" #reg ", %%ymm1, %%ymm" #reg "\n\t"
#define AOTC_HALF1_ON "add %[ch], %[c]\n\tadd %[ch], %[c3]\n\t"
#define AOTC_HALF1_OFF "sub %[ch], %[c]\n\tsub %[ch], %[c3]\n\t"
// Starts (kStart: 0 acc, 1 row bias, 2 column bias, 3 zero, 4 C) and the epilogue.
#define AOTC_START0_NV1(MR) AOTC_ACC_ALL(AOTC_ACC_LOAD)
#define AOTC_START0_NV2(MR) AOTC_ACC_ALL(AOTC_ACC_LOAD)
#define AOTC_START1_NV1(MR) AOTC_EACH(MR, AOTC_RB_AT, AOTC_NV1_REGS)
#define AOTC_START1_NV2(MR) \
  AOTC_EACH(MR, AOTC_RB_AT, AOTC_NV2_HALF0) AOTC_EACH(MR, AOTC_RB_AT, AOTC_NV2_HALF1)
#define AOTC_START2_NV1(MR) "vmovups (%[acc]), %%ymm0\n\t" AOTC_EACH(MR, AOTC_CB0_AT, AOTC_NV1_REGS)
#define AOTC_START2_NV2(MR)                                                                               \
  "vmovups (%[acc]), %%ymm0\n\tvmovups 32(%[acc]), %%ymm1\n\t" AOTC_EACH(MR, AOTC_CB0_AT, AOTC_NV2_HALF0) \
      AOTC_EACH(MR, AOTC_CB1_AT, AOTC_NV2_HALF1)
#define AOTC_START3_NV1(MR) AOTC_EACH(MR, AOTC_ZERO_AT, AOTC_NV1_REGS)
#define AOTC_START3_NV2(MR) \
  AOTC_EACH(MR, AOTC_ZERO_AT, AOTC_NV2_HALF0) AOTC_EACH(MR, AOTC_ZERO_AT, AOTC_NV2_HALF1)
#define AOTC_START4_NV1(MR) AOTC_EACH(MR, AOTC_LD_AT, AOTC_NV1_REGS)
#define AOTC_START4_NV2(MR)                 \
  AOTC_EACH(MR, AOTC_LD_AT, AOTC_NV2_HALF0) \
  AOTC_HALF1_ON AOTC_EACH(MR, AOTC_LD_AT, AOTC_NV2_HALF1) AOTC_HALF1_OFF
#define AOTC_CLAMPS_NV1(MR) \
  "vbroadcastss %[lo], %%ymm0\n\tvbroadcastss %[hi], %%ymm1\n\t" AOTC_EACH(MR, AOTC_CL_AT, AOTC_NV1_REGS)
#define AOTC_CLAMPS_NV2(MR)                                                                                \
  "vbroadcastss %[lo], %%ymm0\n\tvbroadcastss %[hi], %%ymm1\n\t" AOTC_EACH(MR, AOTC_CL_AT, AOTC_NV2_HALF0) \
      AOTC_EACH(MR, AOTC_CL_AT, AOTC_NV2_HALF1)
#define AOTC_EPILOGUE_NV1(MR, clampops) clampops AOTC_EACH(MR, AOTC_ST_AT, AOTC_NV1_REGS)
#define AOTC_EPILOGUE_NV2(MR, clampops)              \
  clampops AOTC_EACH(MR, AOTC_ST_AT, AOTC_NV2_HALF0) \
  AOTC_HALF1_ON AOTC_EACH(MR, AOTC_ST_AT, AOTC_NV2_HALF1)
#define AOTC_DEPTH_LOOP_TO_C(start, panel, rows, epilogue)                                       \
  asm volatile(                                                                                  \
      "lea (%[a],%[lda],2), %[a3]\n\t"                                                           \
      "add %[lda], %[a3]\n\t"                                                                    \
      "lea (%[c],%[ldc],2), %[c3]\n\t"                                                           \
      "add %[ldc], %[c3]\n\t" start AOTC_LOOP(panel, rows) epilogue                              \
      : [a] "+r"(a), [a3] "=&r"(a3), [b] "+r"(b), [kc] "+r"(kc), [c] "+r"(c), [c3] "=&r"(c3)     \
      : [lda] "r"(lda_bytes), [ldb] "r"(ldb_bytes), [acc] "r"(start_from), [ldc] "r"(ldc_bytes), \
        [ch] "r"(half_bytes), [lo] "m"(lo), [hi] "m"(hi)                                         \
      : AOTC_LOOP_CLOBBERS)

// acc (MR rows of 8 * NV floats, 32-byte aligned, room for 12 vectors) += the product of
// MR rows of a (lda apart) and kc rows of the panel (8 * NV floats each, ldb apart).
template <int MR, int NV>
inline void depth_loop(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t kc, float* acc) {
  const int64_t lda_bytes = lda * static_cast<int64_t>(sizeof(float));
  const int64_t ldb_bytes = ldb * static_cast<int64_t>(sizeof(float));
  const float* a3;
  if constexpr (NV == 1) {
    if constexpr (MR == 1) AOTC_DEPTH_LOOP(AOTC_PANEL_NV1, AOTC_ROWS1_NV1);
    if constexpr (MR == 2) AOTC_DEPTH_LOOP(AOTC_PANEL_NV1, AOTC_ROWS2_NV1);
    if constexpr (MR == 3) AOTC_DEPTH_LOOP(AOTC_PANEL_NV1, AOTC_ROWS3_NV1);
    if constexpr (MR == 4) AOTC_DEPTH_LOOP(AOTC_PANEL_NV1, AOTC_ROWS4_NV1);
    if constexpr (MR == 5) AOTC_DEPTH_LOOP(AOTC_PANEL_NV1, AOTC_ROWS5_NV1);
    if constexpr (MR == 6) AOTC_DEPTH_LOOP(AOTC_PANEL_NV1, AOTC_ROWS6_NV1);
  } else {
    if constexpr (MR == 1) AOTC_DEPTH_LOOP(AOTC_PANEL_NV2, AOTC_ROWS1_NV2);
    if constexpr (MR == 2) AOTC_DEPTH_LOOP(AOTC_PANEL_NV2, AOTC_ROWS2_NV2);
    if constexpr (MR == 3) AOTC_DEPTH_LOOP(AOTC_PANEL_NV2, AOTC_ROWS3_NV2);
    if constexpr (MR == 4) AOTC_DEPTH_LOOP(AOTC_PANEL_NV2, AOTC_ROWS4_NV2);
    if constexpr (MR == 5) AOTC_DEPTH_LOOP(AOTC_PANEL_NV2, AOTC_ROWS5_NV2);
    if constexpr (MR == 6) AOTC_DEPTH_LOOP(AOTC_PANEL_NV2, AOTC_ROWS6_NV2);
  }
}

// Where a full tile's accumulators start (depth_loop_to_c's kStart).
enum TileStart { kFromAcc = 0, kFromRowBias = 1, kFromColBias = 2, kFromZero = 3, kFromC = 4 };

// depth_loop, the accumulators started as kStart says (start_from: acc, the row bias or the
// column bias), then the MR x 8 * NV tile (clamped to [lo, hi] when kClamp) stored to C at c
// (rows ldc apart, the second 8 columns c_half further).
template <int MR, int NV, bool kClamp, int kStart>
inline void depth_loop_to_c(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t kc,
                            const float* start_from, float* c, int64_t ldc, int64_t c_half, float lo,
                            float hi) {
  const int64_t lda_bytes = lda * static_cast<int64_t>(sizeof(float));
  const int64_t ldb_bytes = ldb * static_cast<int64_t>(sizeof(float));
  const int64_t ldc_bytes = ldc * static_cast<int64_t>(sizeof(float));
  const int64_t half_bytes = c_half * static_cast<int64_t>(sizeof(float));
  const float* a3;
  float* c3;
#define AOTC_TO_C_START(MR_, NV_, S_)                                                                   \
  if constexpr (kStart == S_) {                                                                         \
    if constexpr (kClamp)                                                                               \
      AOTC_DEPTH_LOOP_TO_C(AOTC_START##S_##_NV##NV_(MR_), AOTC_PANEL_NV##NV_, AOTC_ROWS##MR_##_NV##NV_, \
                           AOTC_EPILOGUE_NV##NV_(MR_, AOTC_CLAMPS_NV##NV_(MR_)));                       \
    else                                                                                                \
      AOTC_DEPTH_LOOP_TO_C(AOTC_START##S_##_NV##NV_(MR_), AOTC_PANEL_NV##NV_, AOTC_ROWS##MR_##_NV##NV_, \
                           AOTC_EPILOGUE_NV##NV_(MR_, ""));                                             \
  }
#define AOTC_TO_C(MR_, NV_)      \
  if constexpr (MR == MR_) {     \
    AOTC_TO_C_START(MR_, NV_, 0) \
    AOTC_TO_C_START(MR_, NV_, 1) \
    AOTC_TO_C_START(MR_, NV_, 2) \
    AOTC_TO_C_START(MR_, NV_, 3) \
    AOTC_TO_C_START(MR_, NV_, 4) \
  }
  if constexpr (NV == 1) {
    AOTC_TO_C(1, 1)
    AOTC_TO_C(2, 1)
    AOTC_TO_C(3, 1)
    AOTC_TO_C(4, 1)
    AOTC_TO_C(5, 1)
    AOTC_TO_C(6, 1)
  } else {
    AOTC_TO_C(1, 2)
    AOTC_TO_C(2, 2)
    AOTC_TO_C(3, 2)
    AOTC_TO_C(4, 2)
    AOTC_TO_C(5, 2)
    AOTC_TO_C(6, 2)
  }
#undef AOTC_TO_C
#undef AOTC_TO_C_START
}

// ---- The same full 16-column tile on AVX-512 (one zmm a row), chosen at run time.
// Even where the AVX-512 units are 256 bits wide (Zen 4: bare zmm FMAs reach the rate of ymm
// ones), this tile is faster than two ymm a row, in L1 and in the sgemm
// (bench/results_cpu.md): half the instructions a depth step (7 instead of 13) leave the
// core's window free to cover the panel's loads from L2. Every full tile takes it (where a row's halves lie
// c_half apart, each half is loaded and stored on its own: vinsertf64x4 / vextractf64x4); the registers are
// zmm0-zmm1 and zmm4-zmm9 (no EVEX-only register), so the compiler's vzeroupper at the end of the function
// covers their upper halves too. use_avx512 (kernel_util.h) decides.
#define AOTC_ZROW(off, row, r) "vfmadd231ps " #off row "%{1to16%}, %%zmm0, %%zmm" #r "\n\t"
#define AOTC_ZROWS1(off) AOTC_ZROW(off, AOTC_AROW0, 4)
#define AOTC_ZROWS2(off) AOTC_ZROWS1(off) AOTC_ZROW(off, AOTC_AROW1, 5)
#define AOTC_ZROWS3(off) AOTC_ZROWS2(off) AOTC_ZROW(off, AOTC_AROW2, 6)
#define AOTC_ZROWS4(off) AOTC_ZROWS3(off) AOTC_ZROW(off, AOTC_AROW3, 7)
#define AOTC_ZROWS5(off) AOTC_ZROWS4(off) AOTC_ZROW(off, AOTC_AROW4, 8)
#define AOTC_ZROWS6(off) AOTC_ZROWS5(off) AOTC_ZROW(off, AOTC_AROW5, 9)
#define AOTC_ZPANEL "vmovups (%[b]), %%zmm0\n\t"
// Row r's accumulator is zmm(4 + r) (AOTC_NV1_REGS); acc holds row r at 64 * r bytes.
#define AOTC_ZST_AT(i, reg) "vmovups %%zmm" #reg ", " AOTC_CROW##i "\n\t"
#define AOTC_ZLD_AT(i, reg) "vmovups " AOTC_CROW##i ", %%zmm" #reg "\n\t"
#define AOTC_ZACC_AT(i, reg) "vmovups 64*" #i "(%[acc]), %%zmm" #reg "\n\t"
#define AOTC_ZRB_AT(i, reg) "vbroadcastss 4*" #i "(%[acc]), %%zmm" #reg "\n\t"
#define AOTC_ZCB_AT(i, reg) "vmovaps %%zmm0, %%zmm" #reg "\n\t"
#define AOTC_ZZERO_AT(i, reg) "vpxord %%zmm" #reg ", %%zmm" #reg ", %%zmm" #reg "\n\t"
#define AOTC_ZCL_AT(i, reg) \
  "vmaxps %%zmm" #reg ", %%zmm0, %%zmm" #reg "\n\tvminps %%zmm" #reg ", %%zmm1, %%zmm" #reg "\n\t"
#define AOTC_ZSTART0(MR) AOTC_EACH(MR, AOTC_ZACC_AT, AOTC_NV1_REGS)
#define AOTC_ZSTART1(MR) AOTC_EACH(MR, AOTC_ZRB_AT, AOTC_NV1_REGS)
#define AOTC_ZSTART2(MR) "vmovups (%[acc]), %%zmm0\n\t" AOTC_EACH(MR, AOTC_ZCB_AT, AOTC_NV1_REGS)
#define AOTC_ZSTART3(MR) AOTC_EACH(MR, AOTC_ZZERO_AT, AOTC_NV1_REGS)
#define AOTC_ZSTART4(MR) AOTC_EACH(MR, AOTC_ZLD_AT, AOTC_NV1_REGS)
#define AOTC_ZCLAMPS(MR) \
  "vbroadcastss %[lo], %%zmm0\n\tvbroadcastss %[hi], %%zmm1\n\t" AOTC_EACH(MR, AOTC_ZCL_AT, AOTC_NV1_REGS)
#define AOTC_ZEPILOGUE(MR, clampops) clampops AOTC_EACH(MR, AOTC_ZST_AT, AOTC_NV1_REGS)
// Rows whose two 8-column halves lie c_half apart (the fused expansion's channel units):
// each half loaded and stored on its own.
#define AOTC_ZLDLO_AT(i, reg) "vmovups " AOTC_CROW##i ", %%ymm" #reg "\n\t"
#define AOTC_ZLDHI_AT(i, reg) "vinsertf64x4 $1, " AOTC_CROW##i ", %%zmm" #reg ", %%zmm" #reg "\n\t"
#define AOTC_ZSTLO_AT(i, reg) "vmovups %%ymm" #reg ", " AOTC_CROW##i "\n\t"
#define AOTC_ZSTHI_AT(i, reg) "vextractf64x4 $1, %%zmm" #reg ", " AOTC_CROW##i "\n\t"
#define AOTC_ZSTART4_SPLIT(MR)                \
  AOTC_EACH(MR, AOTC_ZLDLO_AT, AOTC_NV1_REGS) \
  AOTC_HALF1_ON AOTC_EACH(MR, AOTC_ZLDHI_AT, AOTC_NV1_REGS) AOTC_HALF1_OFF
#define AOTC_ZEPILOGUE_SPLIT(MR, clampops)             \
  clampops AOTC_EACH(MR, AOTC_ZSTLO_AT, AOTC_NV1_REGS) \
  AOTC_HALF1_ON AOTC_EACH(MR, AOTC_ZSTHI_AT, AOTC_NV1_REGS)
#define AOTC_ZSTART0_SPLIT(MR) AOTC_ZSTART0(MR)
#define AOTC_ZSTART1_SPLIT(MR) AOTC_ZSTART1(MR)
#define AOTC_ZSTART2_SPLIT(MR) AOTC_ZSTART2(MR)
#define AOTC_ZSTART3_SPLIT(MR) AOTC_ZSTART3(MR)

// depth_loop_to_c<MR, 2, kClamp, kStart> on zmm registers; kSplit: the rows' second 8
// columns are c_half further (else c_half must be 8).
template <int MR, bool kClamp, int kStart, bool kSplit>
inline void depth_loop_to_c_zmm(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t kc,
                                const float* start_from, float* c, int64_t ldc, int64_t c_half, float lo,
                                float hi) {
  const int64_t lda_bytes = lda * static_cast<int64_t>(sizeof(float));
  const int64_t ldb_bytes = ldb * static_cast<int64_t>(sizeof(float));
  const int64_t ldc_bytes = ldc * static_cast<int64_t>(sizeof(float));
  const int64_t half_bytes = c_half * static_cast<int64_t>(sizeof(float));
  const float* a3;
  float* c3;
#define AOTC_TO_C_START_(MR_, S_, SFX)                                            \
  if constexpr (kClamp)                                                           \
    AOTC_DEPTH_LOOP_TO_C(AOTC_ZSTART##S_##SFX(MR_), AOTC_ZPANEL, AOTC_ZROWS##MR_, \
                         AOTC_ZEPILOGUE##SFX(MR_, AOTC_ZCLAMPS(MR_)));            \
  else                                                                            \
    AOTC_DEPTH_LOOP_TO_C(AOTC_ZSTART##S_##SFX(MR_), AOTC_ZPANEL, AOTC_ZROWS##MR_, \
                         AOTC_ZEPILOGUE##SFX(MR_, ""));
#define AOTC_TO_C_START(MR_, S_)        \
  if constexpr (kStart == S_) {         \
    if constexpr (kSplit) {             \
      AOTC_TO_C_START_(MR_, S_, _SPLIT) \
    } else {                            \
      AOTC_TO_C_START_(MR_, S_, )       \
    }                                   \
  }
#define AOTC_TO_C(MR_)       \
  if constexpr (MR == MR_) { \
    AOTC_TO_C_START(MR_, 0)  \
    AOTC_TO_C_START(MR_, 1)  \
    AOTC_TO_C_START(MR_, 2)  \
    AOTC_TO_C_START(MR_, 3)  \
    AOTC_TO_C_START(MR_, 4)  \
  }
  AOTC_TO_C(1)
  AOTC_TO_C(2)
  AOTC_TO_C(3)
  AOTC_TO_C(4)
  AOTC_TO_C(5)
  AOTC_TO_C(6)
#undef AOTC_TO_C
#undef AOTC_TO_C_START
#undef AOTC_TO_C_START_
}

// MR rows x 8 * NV columns: the accumulators start in acc (from the biases and residual on
// the first depth block, else from C), the depth loop runs on them in registers; a full
// tile is clamped and stored to C from the registers, a ragged one goes back through acc.
template <int MR, int NV, int kStart>
inline void tile_to_c(const Tile& t, const float* start_from) {
  if constexpr (NV == 2) {
    if (use_avx512()) {
      const bool clamp = t.last && t.clamp;
      if (t.c_half == 8) {
        if (clamp)
          depth_loop_to_c_zmm<MR, true, kStart, false>(t.a, t.lda, t.b, t.ldb, t.kc, start_from, t.c, t.ldc,
                                                       8, t.lo, t.hi);
        else
          depth_loop_to_c_zmm<MR, false, kStart, false>(t.a, t.lda, t.b, t.ldb, t.kc, start_from, t.c, t.ldc,
                                                        8, t.lo, t.hi);
      } else if (clamp) {
        depth_loop_to_c_zmm<MR, true, kStart, true>(t.a, t.lda, t.b, t.ldb, t.kc, start_from, t.c, t.ldc,
                                                    t.c_half, t.lo, t.hi);
      } else {
        depth_loop_to_c_zmm<MR, false, kStart, true>(t.a, t.lda, t.b, t.ldb, t.kc, start_from, t.c, t.ldc,
                                                     t.c_half, t.lo, t.hi);
      }
      return;
    }
  }
  if (t.last && t.clamp)
    depth_loop_to_c<MR, NV, true, kStart>(t.a, t.lda, t.b, t.ldb, t.kc, start_from, t.c, t.ldc, t.c_half,
                                          t.lo, t.hi);
  else
    depth_loop_to_c<MR, NV, false, kStart>(t.a, t.lda, t.b, t.ldb, t.kc, start_from, t.c, t.ldc, t.c_half,
                                           t.lo, t.hi);
}

template <int MR, int NV>
void micro_tile(const Tile& t) {
  constexpr int W = 8 * NV;
  alignas(32) float acc[12 * 8];
  const bool full = t.cols == W;
  if (full) {
    if (!t.first) return tile_to_c<MR, NV, kFromC>(t, nullptr);
    if (!t.res && !(t.bias && t.col_bias)) {
      if (t.bias) return tile_to_c<MR, NV, kFromRowBias>(t, t.bias);
      if (t.col_bias) return tile_to_c<MR, NV, kFromColBias>(t, t.col_bias);
      return tile_to_c<MR, NV, kFromZero>(t, nullptr);
    }
  }
  if (t.first) {
    const __m256 zero = _mm256_setzero_ps();
    for (int r = 0; r < MR; ++r) {
      const __m256 row = t.bias ? _mm256_broadcast_ss(t.bias + r) : zero;
      for (int j = 0; j < NV; ++j) {
        __m256 v = row;
        if (t.col_bias) v = _mm256_add_ps(v, _mm256_loadu_ps(t.col_bias + 8 * j));
        if (t.res) v = _mm256_add_ps(v, _mm256_loadu_ps(t.res + r * t.ldr + 8 * j));
        _mm256_store_ps(acc + r * W + 8 * j, v);
      }
    }
    if (full) return tile_to_c<MR, NV, kFromAcc>(t, acc);
  } else {  // a ragged last panel: its columns past cols are ignored
    for (int r = 0; r < MR; ++r)
      for (int64_t c = 0; c < W; ++c)
        acc[r * W + c] = c < t.cols ? t.c[r * t.ldc + c / 8 * t.c_half + c % 8] : 0.0f;
  }
  depth_loop<MR, NV>(t.a, t.lda, t.b, t.ldb, t.kc, acc);
  if (t.last && t.clamp) {
    // max/min return their second operand when either is NaN: a NaN result stays NaN.
    const __m256 lo = _mm256_set1_ps(t.lo), hi = _mm256_set1_ps(t.hi);
    for (int i = 0; i < MR * NV; ++i)
      _mm256_store_ps(acc + 8 * i, _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_load_ps(acc + 8 * i))));
  }
  for (int r = 0; r < MR; ++r)
    for (int64_t c = 0; c < t.cols; ++c) t.c[r * t.ldc + c / 8 * t.c_half + c % 8] = acc[r * W + c];
}
// ---- Two adjacent full panels in one depth loop on AVX-512: 6 rows x 32 columns, twelve
// zmm accumulators. Why: an FMA's 4-cycle latency on an Intel server core's two 512-bit FMA
// ports needs eight independent accumulators to issue every cycle; the 6 x 16 tile has six,
// which caps it at 3/4 of the peak (bench/results_cpu.md). Vector p of row r is
// zmm(4 + 2 r + p) (AOTC_NV2_HALF0 / HALF1). A row's broadcast goes through zmm2 once for
// both FMAs: embedded broadcasts would load it twice, 14 loads a depth step for 12 FMAs.
// Each output sums in the same order as on the 6 x 16 tile: the results are bit-identical.
// clang-format off
#define AOTC_PROW(off, row, r0, r1)                                         \
  "vbroadcastss " #off row ", %%zmm2\n\t"                                   \
  "vfmadd231ps %%zmm0, %%zmm2, %%zmm" #r0 "\n\t"                            \
  "vfmadd231ps %%zmm1, %%zmm2, %%zmm" #r1 "\n\t"
#define AOTC_PROWS6(off)                                                    \
  AOTC_PROW(off, AOTC_AROW0, 4, 5) AOTC_PROW(off, AOTC_AROW1, 6, 7)         \
  AOTC_PROW(off, AOTC_AROW2, 8, 9) AOTC_PROW(off, AOTC_AROW3, 10, 11)       \
  AOTC_PROW(off, AOTC_AROW4, 12, 13) AOTC_PROW(off, AOTC_AROW5, 14, 15)
#define AOTC_PPANEL "vmovups (%[b]), %%zmm0\n\tvmovups (%[b],%[ps],1), %%zmm1\n\t"
#define AOTC_PST0_AT(i, reg) "vmovups %%zmm" #reg ", " AOTC_CROW##i "\n\t"
#define AOTC_PST1_AT(i, reg) "vmovups %%zmm" #reg ", 64" AOTC_CROW##i "\n\t"
#define AOTC_PLD0_AT(i, reg) "vmovups " AOTC_CROW##i ", %%zmm" #reg "\n\t"
#define AOTC_PLD1_AT(i, reg) "vmovups 64" AOTC_CROW##i ", %%zmm" #reg "\n\t"
#define AOTC_PACC0_AT(i, reg) "vmovups 128*" #i "(%[acc]), %%zmm" #reg "\n\t"
#define AOTC_PACC1_AT(i, reg) "vmovups 128*" #i "+64(%[acc]), %%zmm" #reg "\n\t"
#define AOTC_PCB1_AT(i, reg) "vmovaps %%zmm1, %%zmm" #reg "\n\t"
// Starts (kStart as TileStart; acc: 6 rows of 32 floats), clamp and store.
#define AOTC_PSTART0 AOTC_EACH(6, AOTC_PACC0_AT, AOTC_NV2_HALF0) AOTC_EACH(6, AOTC_PACC1_AT, AOTC_NV2_HALF1)
#define AOTC_PSTART1 AOTC_EACH(6, AOTC_ZRB_AT, AOTC_NV2_HALF0) AOTC_EACH(6, AOTC_ZRB_AT, AOTC_NV2_HALF1)
#define AOTC_PSTART2                                                        \
  "vmovups (%[acc]), %%zmm0\n\tvmovups 64(%[acc]), %%zmm1\n\t"              \
  AOTC_EACH(6, AOTC_ZCB_AT, AOTC_NV2_HALF0) AOTC_EACH(6, AOTC_PCB1_AT, AOTC_NV2_HALF1)
#define AOTC_PSTART3 AOTC_EACH(6, AOTC_ZZERO_AT, AOTC_NV2_HALF0) AOTC_EACH(6, AOTC_ZZERO_AT, AOTC_NV2_HALF1)
#define AOTC_PSTART4 AOTC_EACH(6, AOTC_PLD0_AT, AOTC_NV2_HALF0) AOTC_EACH(6, AOTC_PLD1_AT, AOTC_NV2_HALF1)
#define AOTC_PCLAMPS                                                        \
  "vbroadcastss %[lo], %%zmm0\n\tvbroadcastss %[hi], %%zmm1\n\t"            \
  AOTC_EACH(6, AOTC_ZCL_AT, AOTC_NV2_HALF0) AOTC_EACH(6, AOTC_ZCL_AT, AOTC_NV2_HALF1)
#define AOTC_PEPILOGUE(clampops)                                            \
  clampops AOTC_EACH(6, AOTC_PST0_AT, AOTC_NV2_HALF0) AOTC_EACH(6, AOTC_PST1_AT, AOTC_NV2_HALF1)
#define AOTC_PAIR_LOOP_TO_C(start, epilogue)                                                     \
  asm volatile(                                                                                  \
      "lea (%[a],%[lda],2), %[a3]\n\t"                                                           \
      "add %[lda], %[a3]\n\t"                                                                    \
      "lea (%[c],%[ldc],2), %[c3]\n\t"                                                           \
      "add %[ldc], %[c3]\n\t" start AOTC_LOOP(AOTC_PPANEL, AOTC_PROWS6) epilogue                 \
      : [a] "+r"(a), [a3] "=&r"(a3), [b] "+r"(b), [kc] "+r"(kc), [c] "+r"(c), [c3] "=&r"(c3)     \
      : [lda] "r"(lda_bytes), [ldb] "r"(ldb_bytes), [ps] "r"(ps_bytes), [acc] "r"(start_from),   \
        [ldc] "r"(ldc_bytes), [lo] "m"(lo), [hi] "m"(hi)                                         \
      : AOTC_LOOP_CLOBBERS)
// clang-format on

template <bool kClamp, int kStart>
inline void pair_loop_to_c_zmm(const float* a, int64_t lda, const float* b, int64_t panel_stride, int64_t ldb,
                               int64_t kc, const float* start_from, float* c, int64_t ldc, float lo,
                               float hi) {
  const int64_t lda_bytes = lda * static_cast<int64_t>(sizeof(float));
  const int64_t ldb_bytes = ldb * static_cast<int64_t>(sizeof(float));
  const int64_t ps_bytes = panel_stride * static_cast<int64_t>(sizeof(float));
  const int64_t ldc_bytes = ldc * static_cast<int64_t>(sizeof(float));
  const float* a3;
  float* c3;
#define AOTC_PAIR_TO_C(S_)                                                \
  if constexpr (kStart == S_) {                                           \
    if constexpr (kClamp)                                                 \
      AOTC_PAIR_LOOP_TO_C(AOTC_PSTART##S_, AOTC_PEPILOGUE(AOTC_PCLAMPS)); \
    else                                                                  \
      AOTC_PAIR_LOOP_TO_C(AOTC_PSTART##S_, AOTC_PEPILOGUE(""));           \
  }
  AOTC_PAIR_TO_C(0)
  AOTC_PAIR_TO_C(1)
  AOTC_PAIR_TO_C(2)
  AOTC_PAIR_TO_C(3)
  AOTC_PAIR_TO_C(4)
#undef AOTC_PAIR_TO_C
}

// Whether micro_tile_pair may take panels q and q + 1 of a row group: AVX-512, six rows, both
// panels whole (`cols_left` columns from panel q's first to the product's end).
inline bool pair_fits(int64_t rows, int64_t cols_left) {
  return rows == kMr && cols_left >= 2 * kNr && use_avx512();
}

// micro_tile<6, 2> on two adjacent whole panels at once (pair_fits): the second panel
// panel_stride floats after t.b (ldb apart as the first), its 16 outputs right after the
// first panel's in each row of C (c_half 8), its column bias and residual likewise.
template <int kStart>
inline void pair_start(const Tile& t, int64_t panel_stride, const float* start_from) {
  if (t.last && t.clamp)
    pair_loop_to_c_zmm<true, kStart>(t.a, t.lda, t.b, panel_stride, t.ldb, t.kc, start_from, t.c, t.ldc, t.lo,
                                     t.hi);
  else
    pair_loop_to_c_zmm<false, kStart>(t.a, t.lda, t.b, panel_stride, t.ldb, t.kc, start_from, t.c, t.ldc,
                                      t.lo, t.hi);
}
// The accumulators' start for a residual (or both biases): row bias + column bias + residual,
// in micro_tile's order, into acc (6 rows of 32 floats). Vector code: as a scalar loop it took
// half of a residual 1x1 convolution's tile time (perf annotate).
__attribute__((target("avx512f"))) inline void pair_start_sums(const Tile& t, float* acc) {
  for (int64_t r = 0; r < kMr; ++r) {
    const __m512 row = t.bias ? _mm512_set1_ps(t.bias[r]) : _mm512_setzero_ps();
    for (int64_t h = 0; h < 2; ++h) {
      __m512 v = row;
      if (t.col_bias) v = _mm512_add_ps(v, _mm512_loadu_ps(t.col_bias + kNr * h));
      if (t.res) v = _mm512_add_ps(v, _mm512_loadu_ps(t.res + r * t.ldr + kNr * h));
      _mm512_store_ps(acc + (2 * r + h) * kNr, v);
    }
  }
}
inline void micro_tile_pair(const Tile& t, int64_t panel_stride) {
  if (!t.first) return pair_start<kFromC>(t, panel_stride, nullptr);
  if (!t.res && !(t.bias && t.col_bias)) {
    if (t.bias) return pair_start<kFromRowBias>(t, panel_stride, t.bias);
    if (t.col_bias) return pair_start<kFromColBias>(t, panel_stride, t.col_bias);
    return pair_start<kFromZero>(t, panel_stride, nullptr);
  }
  alignas(64) float acc[kMr * 2 * kNr];
  pair_start_sums(t, acc);
  pair_start<kFromAcc>(t, panel_stride, acc);
}
#undef AOTC_PROW
#undef AOTC_PROWS6
#undef AOTC_PPANEL
#undef AOTC_PST0_AT
#undef AOTC_PST1_AT
#undef AOTC_PLD0_AT
#undef AOTC_PLD1_AT
#undef AOTC_PACC0_AT
#undef AOTC_PACC1_AT
#undef AOTC_PCB1_AT
#undef AOTC_PSTART0
#undef AOTC_PSTART1
#undef AOTC_PSTART2
#undef AOTC_PSTART3
#undef AOTC_PSTART4
#undef AOTC_PCLAMPS
#undef AOTC_PEPILOGUE
#undef AOTC_PAIR_LOOP_TO_C

// A ragged last panel of at most kThinCols columns, as dot products along the depth: C[r][c]
// (+)= sum over k of a[r][k] * cols_t[c][k], the panel's columns transposed (ldt apart, each
// contiguous in k), with micro_tile's start and epilogue. Why: the 8-wide tile that a
// panel of 1-4 columns took otherwise is bound by its seven loads a depth step, not its
// FMAs: in perf, a 512>512 3x3 stride-2 layer with 7 x 7 outputs (49 = 3 x 16 + 1 columns)
// spent 16.6% of its time on the one-column panel and 66% on the three full ones (0.75 of
// a full panel's time for 1/16 of its work). Here a column costs MR FMAs per 8 depth steps.
constexpr int64_t kThinCols = 4;

inline float sum_lanes(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// sums[r][c0 + j] for the NC (1 or 2) columns from c0: MR x NC accumulators over k.
template <int MR, int NC>
inline void thin_dots(const Tile& t, const float* cols_t, int64_t ldt, int64_t c0,
                      float (&sums)[kMr][kThinCols]) {
  __m256 acc[MR][NC];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NC; ++j) acc[r][j] = _mm256_setzero_ps();
  const float* col = cols_t + c0 * ldt;
  int64_t k = 0;
  for (; k + 8 <= t.kc; k += 8) {
    __m256 cv[NC];
    for (int j = 0; j < NC; ++j) cv[j] = _mm256_loadu_ps(col + j * ldt + k);
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_loadu_ps(t.a + r * t.lda + k);
      for (int j = 0; j < NC; ++j) acc[r][j] = _mm256_fmadd_ps(av, cv[j], acc[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NC; ++j) {
      float s = sum_lanes(acc[r][j]);
      for (int64_t kk = k; kk < t.kc; ++kk) s += t.a[r * t.lda + kk] * col[j * ldt + kk];
      sums[r][c0 + j] = s;
    }
}

// A ragged panel of at most kThinCols columns for thin_tile: cols_t[c][kk] = panel[kk][c].
inline void transpose_thin(const float* panel, int64_t kcur, int64_t cols, float* cols_t) {
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t kk = 0; kk < kcur; ++kk) cols_t[c * kcur + kk] = panel[kk * kNr + c];
}

template <int MR>
void thin_tile(const Tile& t, const float* cols_t, int64_t ldt) {
  float sums[kMr][kThinCols];
  int64_t c0 = 0;
  for (; c0 + 2 <= t.cols; c0 += 2) thin_dots<MR, 2>(t, cols_t, ldt, c0, sums);
  if (c0 < t.cols) thin_dots<MR, 1>(t, cols_t, ldt, c0, sums);
  for (int r = 0; r < MR; ++r)
    for (int64_t c = 0; c < t.cols; ++c) {
      float* out = t.c + r * t.ldc + c / 8 * t.c_half + c % 8;
      float v = sums[r][c];
      if (t.first) {
        if (t.bias) v += t.bias[r];
        if (t.col_bias) v += t.col_bias[c];
        if (t.res) v += t.res[r * t.ldr + c];
      } else {
        v += *out;
      }
      *out = t.last && t.clamp ? clamp_value(v, t.lo, t.hi) : v;
    }
}
#undef AOTC_AROW0
#undef AOTC_AROW1
#undef AOTC_AROW2
#undef AOTC_AROW3
#undef AOTC_AROW4
#undef AOTC_AROW5
#undef AOTC_ROW_NV1
#undef AOTC_ROW_NV2
#undef AOTC_ROWS1_NV1
#undef AOTC_ROWS2_NV1
#undef AOTC_ROWS3_NV1
#undef AOTC_ROWS4_NV1
#undef AOTC_ROWS5_NV1
#undef AOTC_ROWS6_NV1
#undef AOTC_ROWS1_NV2
#undef AOTC_ROWS2_NV2
#undef AOTC_ROWS3_NV2
#undef AOTC_ROWS4_NV2
#undef AOTC_ROWS5_NV2
#undef AOTC_ROWS6_NV2
#undef AOTC_PANEL_NV1
#undef AOTC_PANEL_NV2
#undef AOTC_STEP
#undef AOTC_ACC
#undef AOTC_ACC_ALL
#undef AOTC_ACC_LOAD
#undef AOTC_ACC_STORE
#undef AOTC_DEPTH_LOOP
#undef AOTC_LOOP
#undef AOTC_LOOP_CLOBBERS
#undef AOTC_DEPTH_LOOP_TO_C
#undef AOTC_EACH1
#undef AOTC_EACH2
#undef AOTC_EACH3
#undef AOTC_EACH4
#undef AOTC_EACH5
#undef AOTC_EACH6
#undef AOTC_EACH_
#undef AOTC_EACH
#undef AOTC_ST_AT
#undef AOTC_LD_AT
#undef AOTC_RB_AT
#undef AOTC_CB0_AT
#undef AOTC_CB1_AT
#undef AOTC_ZERO_AT
#undef AOTC_CL_AT
#undef AOTC_HALF1_ON
#undef AOTC_HALF1_OFF
#undef AOTC_START0_NV1
#undef AOTC_START0_NV2
#undef AOTC_START1_NV1
#undef AOTC_START1_NV2
#undef AOTC_START2_NV1
#undef AOTC_START2_NV2
#undef AOTC_START3_NV1
#undef AOTC_START3_NV2
#undef AOTC_START4_NV1
#undef AOTC_START4_NV2
#undef AOTC_CROW0
#undef AOTC_CROW1
#undef AOTC_CROW2
#undef AOTC_CROW3
#undef AOTC_CROW4
#undef AOTC_CROW5
#undef AOTC_NV1_REGS
#undef AOTC_NV2_HALF0
#undef AOTC_NV2_HALF1
#undef AOTC_EPILOGUE_NV1
#undef AOTC_EPILOGUE_NV2
#undef AOTC_CLAMPS_NV1
#undef AOTC_CLAMPS_NV2
#undef AOTC_ZROW
#undef AOTC_ZROWS1
#undef AOTC_ZROWS2
#undef AOTC_ZROWS3
#undef AOTC_ZROWS4
#undef AOTC_ZROWS5
#undef AOTC_ZROWS6
#undef AOTC_ZPANEL
#undef AOTC_ZST_AT
#undef AOTC_ZLD_AT
#undef AOTC_ZACC_AT
#undef AOTC_ZRB_AT
#undef AOTC_ZCB_AT
#undef AOTC_ZZERO_AT
#undef AOTC_ZCL_AT
#undef AOTC_ZSTART0
#undef AOTC_ZSTART1
#undef AOTC_ZSTART2
#undef AOTC_ZSTART3
#undef AOTC_ZSTART4
#undef AOTC_ZCLAMPS
#undef AOTC_ZEPILOGUE
#undef AOTC_ZLDLO_AT
#undef AOTC_ZLDHI_AT
#undef AOTC_ZSTLO_AT
#undef AOTC_ZSTHI_AT
#undef AOTC_ZSTART4_SPLIT
#undef AOTC_ZEPILOGUE_SPLIT
#undef AOTC_ZSTART0_SPLIT
#undef AOTC_ZSTART1_SPLIT
#undef AOTC_ZSTART2_SPLIT
#undef AOTC_ZSTART3_SPLIT
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
        acc[r][c] = c < t.cols ? t.c[r * t.ldc + c / 8 * t.c_half + c % 8] : 0.0f;
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
      t.c[r * t.ldc + c / 8 * t.c_half + c % 8] =
          t.last && t.clamp ? clamp_value(acc[r][c], t.lo, t.hi) : acc[r][c];
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

#if AOTC_KERNELS_AVX2
using ThinFn = void (*)(const Tile&, const float*, int64_t);
inline ThinFn thin_fn(int64_t rows) {
  switch (rows) {
    case 1:
      return thin_tile<1>;
    case 2:
      return thin_tile<2>;
    case 3:
      return thin_tile<3>;
    case 4:
      return thin_tile<4>;
    case 5:
      return thin_tile<5>;
    default:
      return thin_tile<6>;
  }
}
#endif

}  // namespace
}  // namespace aotc::rt::detail
