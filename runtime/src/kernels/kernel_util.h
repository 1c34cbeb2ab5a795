// kernel_util.h - helpers shared by the kernel sources (internal to the runtime).
#pragma once

#include <aotc/rt/kernels.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <cpuid.h>
#include <immintrin.h>

#include <cstdlib>
#define AOTC_KERNELS_AVX2 1
#else
#define AOTC_KERNELS_AVX2 0
#endif

// aarch64: Advanced SIMD is part of the baseline (the int8 kernels' NEON forms).
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>

#include <cstdlib>
#if defined(__linux__)
#include <sys/auxv.h>
#endif
#define AOTC_KERNELS_NEON 1
#else
#define AOTC_KERNELS_NEON 0
#endif

namespace aotc::rt::detail {

// Work below this many elements stays on one thread: waking workers costs more.
constexpr int64_t kElementwiseMinChunk = 16384;

// Below this many flops per range, splitting a product over threads does not pay.
constexpr double kGemmMinFlopsPerRange = 1.0e6;

// Below this many flops per range, a depthwise layer's part stays on one thread: about what
// the pool takes to start and finish a region on 16 cores (bench/thread_pool_regions.cpp).
// Depthwise layers are small (mobilenet_v2's 7 x 7 ones 0.5 MFLOP), so a higher floor left
// most of a many-core CPU idle on them.
constexpr double kDepthwiseMinFlopsPerRange = 3.0e4;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

// Into how many parts a kernel whose work items are (image, channel block) pairs cuts each
// image's output rows: enough for 4 items a thread where the pairs are fewer, each part at
// least min_rows rows (the rows a part shares with the next are computed twice); 1 where
// the pairs suffice. Why: at batch 1 a layer of 32 channels has 4 blocks of 8, so a
// block-only split left 12 of 16 threads idle.
inline int64_t row_parts_for(int64_t pairs, int threads, int64_t rows, int64_t min_rows) {
  if (threads <= 1 || pairs >= 4 * static_cast<int64_t>(threads)) return 1;
  const int64_t want = ceil_div(4 * static_cast<int64_t>(threads), max_i64(1, pairs));
  return max_i64(1, min_i64(want, rows / max_i64(1, min_rows)));
}

// Chunk length (in items) so that one range holds at least `min_work` units of work
// when each item costs `work_per_item`.
inline int64_t min_chunk_for(int64_t work_per_item, int64_t min_work = kElementwiseMinChunk) {
  if (work_per_item <= 0) return min_work;
  return max_i64(1, ceil_div(min_work, work_per_item));
}

// Whether the kernels take their AVX-512 forms (the micro-kernel's tiles in
// gemm_micro_kernel.h, sigmoid and silu in unary.cpp): the CPU has AVX512F and AVX512VL
// (the AVX-512 forms also use masked ymm operations; Xeon Phi has F without VL), the OS saves
// the zmm registers, and AOTC_CPU_AVX512=0 is not set in the environment (to compare the two,
// or where zmm code lowers the clock, as on some Intel parts). Read once per process. Other
// ISAs: false.
#if AOTC_KERNELS_AVX2
inline bool cpu_has_avx512f_vl() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27))) return false;  // OSXSAVE
  // XCR0: the OS saves the SSE, AVX, opmask and both halves of the zmm registers.
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 0xE6u) != 0xE6u) return false;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (ebx & (1u << 16)) != 0 && (ebx & (1u << 31)) != 0;  // AVX512F, AVX512VL
}
inline bool use_avx512() {
  static const bool use = [] {
    const char* env = std::getenv("AOTC_CPU_AVX512");
    return cpu_has_avx512f_vl() && !(env && env[0] == '0' && env[1] == '\0');
  }();
  return use;
}

// Whether the int8 kernels (qgemm.cpp, qconv2d.cpp) take their AVX512-VNNI forms
// (vpdpbusd, vpdpwssd): use_avx512() and the CPU has AVX512BW and AVX512_VNNI. Otherwise
// they take their AVX2 forms, exact as well (AOTC_CPU_AVX512=0 chooses those too).
inline bool cpu_has_avx512_vnni_bw() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (ebx & (1u << 30)) != 0 && (ecx & (1u << 11)) != 0;  // AVX512BW, AVX512_VNNI
}
inline bool use_avx512_vnni() {
  static const bool use = use_avx512() && cpu_has_avx512_vnni_bw();
  return use;
}

// Whether the int8 products (qgemm.cpp) take their AMX form (tdpbusd on 16 x 64-byte tiles,
// Sapphire Rapids and later): use_avx512_vnni() (its epilogue and leftover rows), the CPU has
// AMX-TILE and AMX-INT8, Linux grants this process the tile data state (arch_prctl
// ARCH_REQ_XCOMP_PERM for XTILEDATA: without it the first tile instruction kills the
// process), and AOTC_CPU_AMX=0 is not set in the environment. Read once per process; the
// permission holds for every thread of it.
inline bool cpu_has_amx_int8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (edx & (1u << 24)) != 0 && (edx & (1u << 25)) != 0;  // AMX-TILE, AMX-INT8
}
bool request_amx_permission();  // qgemm.cpp
inline bool use_amx() {
  static const bool use = [] {
    const char* env = std::getenv("AOTC_CPU_AMX");
    if (env && env[0] == '0' && env[1] == '\0') return false;
    return use_avx512_vnni() && cpu_has_amx_int8() && request_amx_permission();
  }();
  return use;
}

#else
inline bool use_avx512() { return false; }
inline bool use_avx512_vnni() { return false; }
inline bool use_amx() { return false; }
#endif

// Whether the int8 kernels (qgemm.cpp) take their Armv8.2 dot-product forms (sdot, built
// with a target attribute: the baseline is armv8-a): Linux reports the DotProd extension
// (HWCAP_ASIMDDP) and AOTC_CPU_DOTPROD=0 is not set in the environment. Otherwise they take
// their plain NEON forms, exact as well. Read once per process. Other ISAs and systems:
// false.
#if AOTC_KERNELS_NEON
inline bool cpu_has_dotprod() {
#if defined(__linux__)
  constexpr unsigned long kHwcapAsimddp = 1ul << 20;  // HWCAP_ASIMDDP, the kernel's ABI
  return (getauxval(AT_HWCAP) & kHwcapAsimddp) != 0;
#else
  return false;
#endif
}
inline bool use_dotprod() {
  static const bool use = [] {
    const char* env = std::getenv("AOTC_CPU_DOTPROD");
    return cpu_has_dotprod() && !(env && env[0] == '0' && env[1] == '\0');
  }();
  return use;
}
#else
inline bool use_dotprod() { return false; }
#endif

// y = silu(x) = x / (1 + exp(-x)) over count floats, as unary_f32's Silu computes it (y
// may be x); unary.cpp.
void silu_f32(const float* x, float* y, int64_t count);
// y = GELU(x), the erf form (nn.GELU()) and the tanh form (approximate="tanh"), as
// unary_f32 computes them (y may be x); unary.cpp.
void gelu_erf_f32(const float* x, float* y, int64_t count);
void gelu_tanh_f32(const float* x, float* y, int64_t count);

// min(max(v, lo), hi), written so that a NaN input stays NaN (as torch's clamp does).
inline float clamp_value(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

inline bool has_clamp(float lo, float hi) { return lo > -__builtin_inff() || hi < __builtin_inff(); }

inline void clamp_row(float* y, int64_t count, float lo, float hi) {
  for (int64_t i = 0; i < count; ++i) y[i] = clamp_value(y[i], lo, hi);
}

// The half-open range of kernel taps t (tap position start + t * step) that land inside
// [0, size), for t in [0, taps).
struct TapRange {
  int64_t lo, hi;
};
inline TapRange valid_taps(int64_t start, int64_t step, int64_t taps, int64_t size) {
  const int64_t lo = start < 0 ? min_i64(taps, ceil_div(-start, step)) : 0;
  const int64_t hi = size - start <= 0 ? 0 : min_i64(taps, ceil_div(size - start, step));
  return {lo, hi < lo ? lo : hi};
}

// The half-open range of output positions o (input position o * stride + offset) that
// land inside [0, size), for o in [0, count).
inline TapRange valid_outputs(int64_t offset, int64_t stride, int64_t count, int64_t size) {
  return valid_taps(offset, stride, count, size);
}

// max/min as torch reduces: a NaN wins over everything.
inline float max_nan(float m, float v) { return (v > m || v != v) ? v : m; }
inline float min_nan(float m, float v) { return (v < m || v != v) ? v : m; }

// Sum of a contiguous run with 16 independent accumulators: the loop vectorises (the
// compiler may not reassociate a single accumulator) and a long sum gathers less
// rounding error.
inline float sum_contiguous(const float* x, int64_t count) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l];
  for (int l = 0; i + l < count; ++l) acc[l] += x[i + l];
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int l = 0; l < width; ++l) acc[l] += acc[l + width];
  return acc[0];
}

// Sum of (x - mean)^2 over a contiguous run, accumulated like sum_contiguous: the second
// pass of a two-pass variance (layer_norm, group_norm), which does not cancel as
// E[x^2] - E[x]^2 does when the mean is large against the spread.
inline float centred_square_sum(const float* x, int64_t count, float mean) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float d = x[i + l] - mean;
      acc[l] += d * d;
    }
  for (int l = 0; i + l < count; ++l) {
    const float d = x[i + l] - mean;
    acc[l] += d * d;
  }
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int l = 0; l < width; ++l) acc[l] += acc[l + width];
  return acc[0];
}

// exp for float, Cephes-style: exp(x) = 2^n exp(r), n = round(x / ln 2), |r| <= ln2 / 2,
// with a degree-5 polynomial (below). Inputs are clamped to
// [-88, 88.376]: the result saturates at 2.4e38 above and flushes to 0 below about -87.7
// (where exp is subnormal); NaN stays NaN. Written by hand because the compilers do not
// vectorise std::exp without -ffast-math, and Eigen's exp is about twice as slow.
namespace exp_consts {
constexpr float kHi = 88.3762626647949f;
constexpr float kLo = -88.0f;  // rounds to n = -127, whose scale 2^-127 is built as 0
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;  // ln 2 = kLn2Hi + kLn2Lo, kLn2Hi exact in few bits
constexpr float kLn2Lo = -2.12194440e-4f;
// exp(r) = 1 + r + r^2 (kP3 + kP2 r + kP1 r^2 + kP0 r^3) on |r| <= ln(2) / 2, fitted to the
// relative error (1.1e-7 at most; in float32 arithmetic 2.4 ulp at most, 0.7 on average).
// Cephes' two more terms took it to 1 ulp, and silu (efficientnet_b0's SiLUs are a large
// share of its time) to 1.19x the time: the loop is bound by its floating-point operations.
constexpr float kP0 = 8.31569917500019e-3f, kP1 = 4.1895315051078796e-2f, kP2 = 1.6667096316814423e-1f;
constexpr float kP3 = 4.9999189376831055e-1f;
}  // namespace exp_consts

inline float exp_f32(float x) {
  using namespace exp_consts;
  x = x > kHi ? kHi : x;  // comparisons with NaN are false: NaN passes through
  x = x < kLo ? kLo : x;
  const float n = std::nearbyint(x * kLog2e);
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = kP0;
  p = p * r + kP1;
  p = p * r + kP2;
  p = p * r + kP3;
  const float y = p * r * r + r + 1.0f;
  const float n_safe = n > -127.0f ? n : -127.0f;  // never converts NaN to int
  return y * std::bit_cast<float>((static_cast<int32_t>(n_safe) + 127) << 23);
}

#if AOTC_KERNELS_AVX2
inline __m256 exp_f32x8(__m256 x) {
  using namespace exp_consts;
  // min/max return their second operand when either is NaN: x goes second.
  x = _mm256_max_ps(_mm256_set1_ps(kLo), _mm256_min_ps(_mm256_set1_ps(kHi), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  // 2^n from the exponent bits; n = -127 gives 0. (NaN lanes: y is NaN already.)
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}
#endif

#if AOTC_KERNELS_AVX2
// exp_f32x8 on 16 lanes with AVX-512 (callers check use_avx512): the scale 2^n applied by
// vscalefps. Same values as exp_f32x8 except below about -87.3, where this one gives the
// subnormal results that exp_f32x8 flushes to 0.
__attribute__((target("avx512f"))) inline __m512 exp_f32x16(__m512 x) {
  using namespace exp_consts;
  // min/max return their second operand when either is NaN: x goes second. (Masked forms
  // with every lane set throughout: GCC 12 warns that the plain forms' undefined source
  // "may be used uninitialized".)
  constexpr __mmask16 kAll = 0xFFFF;
  x = _mm512_mask_min_ps(x, kAll, _mm512_set1_ps(kHi), x);
  x = _mm512_mask_max_ps(x, kAll, _mm512_set1_ps(kLo), x);
  const __m512 n = _mm512_mask_roundscale_ps(x, kAll, _mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  return _mm512_mask_scalef_ps(y, kAll, y, n);
}
#endif

#if AOTC_KERNELS_AVX2
// max(m, v) where a NaN in either wins, as max_nan: max_ps returns its second operand (m)
// when either is NaN, so a NaN in v is put back by the blend.
inline __m256 max_nan_f32x8(__m256 m, __m256 v) {
  return _mm256_blendv_ps(_mm256_max_ps(v, m), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}
// Elements 0, 2, 4, ..., 14 of the 16 floats at p (all 16 are read): a stride-2 gather.
inline __m256 even_lanes_f32x8(const float* p) {
  const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
  const __m256 mixed = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // a0 a2 b0 b2 | a4 a6 b4 b6
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(mixed), _MM_SHUFFLE(3, 1, 2, 0)));
}
#endif

#if AOTC_KERNELS_AVX2
// A mask of the first `count` (0..8) lanes for _mm256_maskload_ps / _mm256_maskstore_ps.
inline __m256i first_lanes_mask(int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
// v[i]'s first `count` (0..8) lanes stored at dst[i] + offset, for i < n. Why not
// _mm256_maskstore_ps alone: on AMD it is VMASKMOVPS, several times slower a store than a
// plain store or an AVX-512VL masked one (bench/results_cpu.md); with AVX-512 the latter,
// a call per batch of vectors.
__attribute__((target("avx512f,avx512vl"))) inline void store_first_lanes_avx512(float* const* dst,
                                                                                 int64_t offset,
                                                                                 const __m256* v, int64_t n,
                                                                                 int64_t count) {
  const __mmask8 mask = static_cast<__mmask8>((1u << count) - 1u);
  for (int64_t i = 0; i < n; ++i) _mm256_mask_storeu_ps(dst[i] + offset, mask, v[i]);
}
inline void store_first_lanes(float* const* dst, int64_t offset, const __m256* v, int64_t n, int64_t count) {
  if (use_avx512()) {
    store_first_lanes_avx512(dst, offset, v, n, count);
    return;
  }
  const __m256i mask = first_lanes_mask(count);
  for (int64_t i = 0; i < n; ++i) _mm256_maskstore_ps(dst[i] + offset, mask, v[i]);
}
// In place: r[j] lane i becomes r[i] lane j (the 8-channel depthwise kernels).
inline void transpose8x8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}
#endif

// NaN-propagating max / min of a contiguous run (-inf / +inf when empty); in reduce.cpp.
float max_contiguous(const float* x, int64_t count);
float min_contiguous(const float* x, int64_t count);

// Computes rows [row0, row1) x columns [col0, col1) of the product described by p on
// the calling thread (one Eigen product). gemm_f32 splits a product into such blocks.
// pack (pack_bytes, 64-byte aligned) holds the packing buffers: the calling thread's
// ThreadPool::thread_scratch, at least gemm_thread_scratch_bytes(p) long.
void gemm_block_f32(const GemmParams& p, int64_t row0, int64_t row1, int64_t col0, int64_t col1,
                    const float* a, const float* b, const float* bias, float* c, unsigned char* pack,
                    size_t pack_bytes);

// The rest of the epilogue when the GEMM has an activation (GemmParams::activation, which
// comes before the residual and the clamp, so those cannot start the sums): rows x cols of
// C from c (row stride ldc), holding alpha A B + beta bias, become
// clamp(activation(C) + residual). res is the residual of that block's first row and
// column (row stride ldr), or null. gemm.cpp; the prepacked GEMM calls it on each strip of
// rows as it finishes, while the strip is in L1.
void gemm_activation_rows(const GemmParams& p, float* c, int64_t ldc, int64_t rows, int64_t cols,
                          const float* res, int64_t ldr);

// Non-depthwise 2-D convolution as an implicit GEMM (conv2d_gemm.cpp); the per-thread
// panel block comes from pool.thread_scratch (conv2d_thread_scratch_bytes), or a small
// stack block when the pool has none; scratch (conv2d_scratch_bytes, may be null) holds
// the columns packed once for all threads. residual (y's layout, or null) is added before
// the clamp.
void conv2d_gemm_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w,
                     const float* bias, const float* residual, float* y, float* scratch);

// A 1x1 stride-1 convolution with at most kPointwiseFewRowsMax output channels, all of them
// per 16-position panel in one pass of 16 zmm accumulators (conv2d_pointwise_few_rows.cpp);
// AVX-512 only (applies says when). Same arguments and sums as conv2d_gemm_f32, no scratch.
constexpr int kPointwiseFewRowsMax = 16;
bool conv2d_pointwise_few_rows_applies(const Conv2dParams& p);
void conv2d_pointwise_few_rows_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w,
                                   const float* bias, const float* residual, float* y);

// A convolution of at most 4 input channels (an RGB stem) from phase planes of its input,
// 8 output channels x 32 positions a tile (conv2d_few_channels.cpp); AVX-512 only, and
// where the pool's thread scratch holds a strip of 2 or more output rows' planes (applies
// says when). Same arguments and sums as conv2d_gemm_f32, no scratch.
bool conv2d_few_channels_applies(const Conv2dParams& p, size_t thread_scratch_bytes);
void conv2d_few_channels_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w,
                             const float* bias, const float* residual, float* y);

// Rows [m0, m1) of C (ldc) = A (m x k, lda) * B, B (k x n) packed as the implicit GEMM
// packs its columns (depth blocks of conv2d_gemm_blocking(k, n), 16-column panels); no
// bias or clamp: the layout gemm_prepack_weights writes. In gemm_prepacked.cpp, for the
// Winograd products.
void gemm_packed_f32(const float* a, int64_t lda, const float* packed, int64_t n, int64_t k, float* c,
                     int64_t ldc, int64_t m0, int64_t m1);

// Depthwise on narrow planes (at most 16 output and 32 input columns) with AVX-512, a
// whole output row of one channel per vector, straight from NCHW (conv2d_depthwise_rows.cpp).
bool conv2d_depthwise_rows_applies(const Conv2dParams& p);
void conv2d_depthwise_rows(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w,
                           const float* bias, float* y);

// Depthwise over blocks of 8 channels (conv2d_depthwise_c8.cpp), when the shape suits it
// (conv2d_depthwise_c8_applies) and the pool's thread scratch holds its block.
bool depthwise_c8_fits(const Conv2dParams& p, size_t thread_scratch_bytes);
void conv2d_depthwise_c8(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w,
                         const float* bias, float* y);

// One output row oh of a depthwise convolution over 8 channels held in vector lanes:
// rows[i] is the padded input row that kernel row i reads (its padded column 0), whose
// positions are pos_stride floats apart with the 8 channels contiguous at each. Taps
// accumulate for 8 output positions at a time, then bias (b8), clamp, an 8 x 8 transpose
// and the store to the first `lanes` planes (yplanes[l]: plane l of y). The last group
// of a row reads up to kGroup * stride_w positions past it: the buffer needs that slack.
// w8: the taps' weights, 8 lanes each (32-byte aligned, as b8). In conv2d_depthwise_c8.cpp.
void depthwise_lanes_row(const Conv2dParams& p, const float* const* rows, int64_t pos_stride, const float* w8,
                         const float* b8, int64_t oh, int64_t lanes, bool clamp, float* const* yplanes);

}  // namespace aotc::rt::detail
