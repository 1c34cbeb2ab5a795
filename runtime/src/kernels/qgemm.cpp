// qgemm.cpp - the uint8 x int8 product of the quantized convolutions and linear layers
// (qgemm_u8), and qlinear_u8 on it. C[m][j] = sum_kk A[m][kk] * W[kk][j] with int32 sums,
// then QRequant's epilogue to uint8 (or the int32 sums themselves, QGemmDesc::y32), rows m
// the output pixels or tokens, columns j the output channels along the vector lanes; W
// packed at compile time (layouts.h, qgemm).
//
// A tile is rows x (16 to 64) channels, over the whole depth (in registers but for AMX):
//   - AMX (Sapphire Rapids and later, use_amx): tdpbusd on 16-row tiles, 2 x 2 of them
//     (32 rows x 32 channels) per step of 64 depths, the sums stored to memory for the
//     AVX512-VNNI epilogue; rows and depths past whole tiles as the section below says.
//   - AVX512-VNNI: per 4 depths, the tile's 1-4 weight vectors (16 channels x 4 depths)
//     against each row's 4 activations broadcast as a dword, vpdpbusd (u8 x s8, exact int32:
//     its four products are summed without saturation); 6 x 64, 8 x 48, 12 x 32, 12 x 16.
//   - AVX2: vpmaddubsw saturates int16 (255 * 127 * 2 > 32767), so 8 channels' 4 depths are
//     widened to int16 (two ymm, 4 channels each) and multiplied by the row's 4 activations
//     widened and repeated, vpmaddwd (pairs, exact int32); two sums per channel, added
//     horizontally at the end; 6 rows x 8 channels.
//   - aarch64 with DotProd (Armv8.2 sdot, signed x signed only): the activations as a - 128
//     (int8), 16 bytes of a row (4 dwords of depth) against 16-channel weight vectors with
//     sdot by element, and 128 * sum_kk W[kk][j] added back per channel: the weights' sums
//     counted per block before the tiles, or inside the tile where a strip is one tile high;
//     4 x 16.
//   - aarch64 without it: the same a - 128 bytes, smull (int8 x int8 -> int16, exact) of a
//     row's dword repeated against 2 channels' 4 depths, sadalp into int32 pairs, added
//     pairwise at the end; 2 x 16.
//   - elsewhere: plain C++ over a row and a block of channels.
// The epilogue (offset, weight zero point times the row's sum, float bias, multiplier,
// round half to even, zero point, clamp; QRequant's two forms) runs on the tile's sums and
// stores bytes, or stores the sums (y32).
//
// Rows of A are read in place (1x1 convolutions, linear layers) or gathered by the caller's
// fill function into the thread's scratch, a strip of qgemm::chunk_rows rows at a time; a
// strip is multiplied by each 64-channel weight block in turn. Threads take work units of
// (group, strip, part of the channel blocks): strips where there are enough rows, channel
// blocks where there are few (a linear layer of one row).
#include "qgemm.h"

#include <aotc/rt/thread_pool.h>

#include <array>
#include <utility>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace aotc::rt::detail {
namespace {

using qgemm::kBlock;
using qgemm::kPanel;

// A tile's epilogue: the per-channel arrays at its first column, and the output's bounds
// less its zero point (clamping before the zero point is added cannot overflow).
struct QEpi {
  const int32_t* off;
  const float* bias;
  const float* mult;
  const int32_t* wz;   // null: weights without zero points
  const float* scale;  // QRequant::acc_scale: null for fbgemm's form
  int32_t zero, lo, hi, lo_z, hi_z;
};

struct QTile {
  const uint8_t* a;  // the tile's first row
  int64_t lda;
  int64_t k4;             // whole dwords of depth read from each row
  const uint32_t* tail;   // each row's last 1-3 depths (the rest zero) after them, or null
  const int8_t* w;        // the block's weights at the tile's first column (64-byte rows of 16 channels)
  int64_t ldw;            // bytes from one dword of depth to the next (nb * 4)
  const int32_t* rowsum;  // the rows' sums (with weight zero points), else null
  int64_t cols;           // valid columns of the tile
  uint8_t* y;             // output of the first row and column
  int32_t* y32;           // instead: the int32 sums there (QGemmDesc::y32), else null
  int64_t ldy;
  QEpi e;
};
using TileFn = void (*)(const QTile&);

// Sum of count bytes.
inline int32_t byte_sum(const uint8_t* p, int64_t count) {
  int64_t i = 0;
  uint32_t s = 0;
#if AOTC_KERNELS_AVX2
  __m256i acc = _mm256_setzero_si256();
  for (; i + 32 <= count; i += 32)
    acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)),
                                                _mm256_setzero_si256()));
  const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
  s = static_cast<uint32_t>(_mm_cvtsi128_si32(h) + _mm_extract_epi32(h, 2));
#elif AOTC_KERNELS_NEON
  uint32x4_t acc = vdupq_n_u32(0);
  for (; i + 16 <= count; i += 16) acc = vpadalq_u16(acc, vpaddlq_u8(vld1q_u8(p + i)));
  s = vaddvq_u32(acc);
#endif
  for (; i < count; ++i) s += p[i];
  return static_cast<int32_t>(s);
}

#if AOTC_KERNELS_AVX2
#define AOTC_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

// The tiles' accumulators are named variables, one per row and vector (macros over the
// rows): as arrays GCC 12 kept a copy of each in memory, a store per step and sum.
#define AOTC_Q_ROWS12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define AOTC_Q_ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)

// The epilogue of `rows` rows of a tile of nv vectors (16 channels each): sums[r][v] holds
// row r's int32 sums of vector v, the offsets included unless add_offsets. Per row:
// QRequant's step, then fbgemm's saturating packs (sat16(r) + zero, saturated again, to u8,
// then the bounds: clamp(zero + r, lo, hi) for any int32 r). The packs work within 128-bit
// lanes: dword 4 L + k of the result holds channels 16 k + 4 L .. + 3; one vpermd puts them
// in order.
AOTC_VNNI_TARGET void store_rows_vnni(const QTile& t, const int32_t (*sums)[4][16], int64_t rows, int nv,
                                      bool add_offsets) {
  const QEpi& e = t.e;
  __mmask16 lanes[4];
  __m512 bias[4], mult[4], scale[4];
  __m512i wz[4], off[4];
  for (int v = 0; v < 4; ++v) {
    const int64_t c = t.cols - kPanel * v;
    lanes[v] = static_cast<__mmask16>(v >= nv || c <= 0 ? 0u : c >= kPanel ? 0xFFFFu : (1u << c) - 1u);
    bias[v] = _mm512_maskz_loadu_ps(lanes[v], e.bias + kPanel * v);
    mult[v] = _mm512_maskz_loadu_ps(lanes[v], e.mult + kPanel * v);
    scale[v] = e.scale ? _mm512_maskz_loadu_ps(lanes[v], e.scale + kPanel * v) : _mm512_setzero_ps();
    wz[v] = t.rowsum ? _mm512_maskz_loadu_epi32(lanes[v], e.wz + kPanel * v) : _mm512_setzero_si512();
    off[v] = add_offsets ? _mm512_maskz_loadu_epi32(lanes[v], e.off + kPanel * v) : _mm512_setzero_si512();
  }
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  // The oneDNN form adds the zero point before rounding, fbgemm's in the packs.
  const __m512i z16 = _mm512_set1_epi16(static_cast<int16_t>(e.scale ? 0 : e.zero));
  const __m512 zero_f = _mm512_set1_ps(static_cast<float>(e.zero)),
               lo_f = _mm512_set1_ps(static_cast<float>(e.lo)),
               hi_f = _mm512_set1_ps(static_cast<float>(e.hi));
  const __m512i lo8 = _mm512_set1_epi8(static_cast<char>(e.lo)),
                hi8 = _mm512_set1_epi8(static_cast<char>(e.hi));
  const __mmask64 store = _cvtu64_mask64(t.cols >= 64 ? ~0ull : (1ull << t.cols) - 1u);
  for (int64_t r = 0; r < rows; ++r) {
    __m512i q[4];
    for (int v = 0; v < 4; ++v) {
      if (v >= nv) {
        q[v] = _mm512_setzero_si512();
        continue;
      }
      __m512i s = _mm512_add_epi32(_mm512_load_si512(sums[r][v]), off[v]);
      if (t.rowsum) s = _mm512_sub_epi32(s, _mm512_mullo_epi32(wz[v], _mm512_set1_epi32(t.rowsum[r])));
      if (t.y32) {
        _mm512_mask_storeu_epi32(t.y32 + r * t.ldy + kPanel * v, lanes[v], s);
        q[v] = s;
        continue;
      }
      if (e.scale) {
        q[v] = requant_x86_cvt16(s, scale[v], bias[v], mult[v], zero_f, lo_f, hi_f);
        continue;
      }
      const __m512 f =
          _mm512_mul_ps(_mm512_add_ps(_mm512_maskz_cvtepi32_ps(kAllLanes16, s), bias[v]), mult[v]);
      q[v] = _mm512_maskz_cvtps_epi32(kAllLanes16, f);
    }
    if (t.y32) continue;
    const __m512i p01 = _mm512_adds_epi16(_mm512_packs_epi32(q[0], q[1]), z16);
    const __m512i p23 = _mm512_adds_epi16(_mm512_packs_epi32(q[2], q[3]), z16);
    __m512i b = _mm512_maskz_permutexvar_epi32(kAllLanes16, order, _mm512_packus_epi16(p01, p23));
    b = _mm512_min_epu8(_mm512_max_epu8(b, lo8), hi8);
    _mm512_mask_storeu_epi8(t.y + r * t.ldy, store, b);
  }
}

// MR rows x NV * 16 channels with vpdpbusd: MR * NV <= 24 accumulators, NV weight vectors
// and the broadcast in the 32 zmm registers.
template <int MR, int NV>
AOTC_VNNI_TARGET void tile_vnni(const QTile& t) {
  static_assert(MR >= 1 && MR <= 12 && NV >= 1 && NV <= 4, "tile shape");
  const QEpi& e = t.e;
  // Lanes of each vector within the columns (the per-channel arrays are read no further).
  __mmask16 lanes[4];
  for (int v = 0; v < 4; ++v) {
    const int64_t c = t.cols - kPanel * v;
    lanes[v] = static_cast<__mmask16>(c >= kPanel ? 0xFFFFu : c <= 0 ? 0u : (1u << c) - 1u);
  }
  // The sums start from the offsets.
  const __m512i o0 = _mm512_maskz_loadu_epi32(lanes[0], e.off);
  const __m512i o1 = NV > 1 ? _mm512_maskz_loadu_epi32(lanes[1], e.off + 16) : o0;
  const __m512i o2 = NV > 2 ? _mm512_maskz_loadu_epi32(lanes[2], e.off + 32) : o0;
  const __m512i o3 = NV > 3 ? _mm512_maskz_loadu_epi32(lanes[3], e.off + 48) : o0;
#define AOTC_Q_DECL(r) __m512i c##r##_0 = o0, c##r##_1 = o1, c##r##_2 = o2, c##r##_3 = o3;
  AOTC_Q_ROWS12(AOTC_Q_DECL)
#undef AOTC_Q_DECL
  // Row r's 4 activations (dword) broadcast against the NV weight vectors.
#define AOTC_Q_STEP(r)                                                      \
  if constexpr (r < MR) {                                                   \
    const __m512i b = _mm512_set1_epi32(static_cast<int>(AOTC_Q_DWORD(r))); \
    c##r##_0 = _mm512_dpbusd_epi32(c##r##_0, b, w0);                        \
    if constexpr (NV > 1) c##r##_1 = _mm512_dpbusd_epi32(c##r##_1, b, w1);  \
    if constexpr (NV > 2) c##r##_2 = _mm512_dpbusd_epi32(c##r##_2, b, w2);  \
    if constexpr (NV > 3) c##r##_3 = _mm512_dpbusd_epi32(c##r##_3, b, w3);  \
  }
  const uint8_t* a = t.a;
  const int64_t lda = t.lda;
  const int8_t* w = t.w;
  const __m512i zw = _mm512_setzero_si512();
  for (int64_t kk = 0; kk < t.k4; ++kk, w += t.ldw, a += 4) {
    const __m512i w0 = _mm512_loadu_si512(w);
    const __m512i w1 = NV > 1 ? _mm512_loadu_si512(w + 64) : zw;
    const __m512i w2 = NV > 2 ? _mm512_loadu_si512(w + 128) : zw;
    const __m512i w3 = NV > 3 ? _mm512_loadu_si512(w + 192) : zw;
#define AOTC_Q_DWORD(r) load_u32(a + (r)*lda)
    AOTC_Q_ROWS12(AOTC_Q_STEP)
#undef AOTC_Q_DWORD
  }
#undef AOTC_Q_STEP
  // The sums out once, for an epilogue that loops. (The last partial dword of depth is added
  // here, not in a second step after the loop: with one, GCC 12 stored every accumulator
  // inside the loop again.)
  alignas(64) int32_t sums[MR][4][16];
#define AOTC_Q_SAVE(r)                                              \
  if constexpr (r < MR) {                                           \
    _mm512_store_si512(sums[r][0], c##r##_0);                       \
    if constexpr (NV > 1) _mm512_store_si512(sums[r][1], c##r##_1); \
    if constexpr (NV > 2) _mm512_store_si512(sums[r][2], c##r##_2); \
    if constexpr (NV > 3) _mm512_store_si512(sums[r][3], c##r##_3); \
  }
  AOTC_Q_ROWS12(AOTC_Q_SAVE)
#undef AOTC_Q_SAVE
  if (t.tail)
    for (int v = 0; v < NV; ++v) {
      const __m512i wv = _mm512_loadu_si512(w + 64 * v);
      for (int r = 0; r < MR; ++r)
        _mm512_store_si512(sums[r][v],
                           _mm512_dpbusd_epi32(_mm512_load_si512(sums[r][v]),
                                               _mm512_set1_epi32(static_cast<int>(t.tail[r])), wv));
    }
  store_rows_vnni(t, sums, MR, NV, false);
}

template <int NV, int... R>
constexpr std::array<TileFn, sizeof...(R)> vnni_fns(std::integer_sequence<int, R...>) {
  return {&tile_vnni<R + 1, NV>...};
}
// Rows of a tile of NV vectors: as many accumulators as the registers hold beside the weights.
constexpr int vnni_rows(int nv) { return nv == 4 ? 6 : nv == 3 ? 8 : 12; }
const std::array<TileFn, 6> kVnni4 = vnni_fns<4>(std::make_integer_sequence<int, 6>());
const std::array<TileFn, 8> kVnni3 = vnni_fns<3>(std::make_integer_sequence<int, 8>());
const std::array<TileFn, 12> kVnni2 = vnni_fns<2>(std::make_integer_sequence<int, 12>());
const std::array<TileFn, 12> kVnni1 = vnni_fns<1>(std::make_integer_sequence<int, 12>());
TileFn vnni_fn(int nv, int64_t rows) {
  switch (nv) {
    case 4:
      return kVnni4[rows - 1];
    case 3:
      return kVnni3[rows - 1];
    case 2:
      return kVnni2[rows - 1];
    default:
      return kVnni1[rows - 1];
  }
}

// MR rows x 8 channels (t.w at the 8 channels' first dword) on AVX2, exact: see the top.
constexpr int kAvx2Rows = 6;
template <int MR>
void tile_avx2(const QTile& t) {
  static_assert(MR >= 1 && MR <= 6, "tile shape");
#define AOTC_Q_DECL(r) __m256i l##r = _mm256_setzero_si256(), h##r = l##r;
  AOTC_Q_ROWS6(AOTC_Q_DECL)
#undef AOTC_Q_DECL
  // Row r's 4 activations widened to int16 and repeated, against channels 0-3 and 4-7.
#define AOTC_Q_STEP(r)                                       \
  if constexpr (r < MR) {                                    \
    const __m256i b = _mm256_cvtepu8_epi16(AOTC_Q_DWORD(r)); \
    l##r = _mm256_add_epi32(l##r, _mm256_madd_epi16(b, wl)); \
    h##r = _mm256_add_epi32(h##r, _mm256_madd_epi16(b, wh)); \
  }
  const uint8_t* a = t.a;
  const int64_t lda = t.lda;
  const int8_t* w = t.w;
  for (int64_t kk = 0; kk < t.k4; ++kk, w += t.ldw, a += 4) {
    // Channels 0-3 and 4-7, 4 depths each: int16 [c][4].
    const __m256i wl = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
    const __m256i wh = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16)));
    // vbroadcastss from memory: a load, no shuffle (set1 of the dword took two).
#define AOTC_Q_DWORD(r) _mm_castps_si128(_mm_broadcast_ss(reinterpret_cast<const float*>(a + (r)*lda)))
    AOTC_Q_ROWS6(AOTC_Q_STEP)
#undef AOTC_Q_DWORD
  }
#undef AOTC_Q_STEP
  // The pairs' sums out once (the last partial dword of depth added there, as tile_vnni does).
  alignas(32) int32_t sums[MR][2][8];
#define AOTC_Q_SAVE(r)                                                \
  if constexpr (r < MR) {                                             \
    _mm256_store_si256(reinterpret_cast<__m256i*>(sums[r][0]), l##r); \
    _mm256_store_si256(reinterpret_cast<__m256i*>(sums[r][1]), h##r); \
  }
  AOTC_Q_ROWS6(AOTC_Q_SAVE)
#undef AOTC_Q_SAVE
  if (t.tail) {
    const __m256i wl = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
    const __m256i wh = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16)));
    for (int r = 0; r < MR; ++r) {
      const __m256i b = _mm256_cvtepu8_epi16(_mm_set1_epi32(static_cast<int>(t.tail[r])));
      auto* lp = reinterpret_cast<__m256i*>(sums[r][0]);
      auto* hp = reinterpret_cast<__m256i*>(sums[r][1]);
      _mm256_store_si256(lp, _mm256_add_epi32(_mm256_load_si256(lp), _mm256_madd_epi16(b, wl)));
      _mm256_store_si256(hp, _mm256_add_epi32(_mm256_load_si256(hp), _mm256_madd_epi16(b, wh)));
    }
  }
  const QEpi& e = t.e;
  const int64_t cols = t.cols < 8 ? t.cols : 8;
  const __m256i mask = first_lanes_mask(cols);
  const __m256i off = _mm256_maskload_epi32(e.off, mask);
  const __m256 bias = _mm256_maskload_ps(e.bias, mask);
  const __m256 mult = _mm256_maskload_ps(e.mult, mask);
  const __m256i wz = t.rowsum ? _mm256_maskload_epi32(e.wz, mask) : _mm256_setzero_si256();
  const __m256 scale = e.scale ? _mm256_maskload_ps(e.scale, mask) : _mm256_setzero_ps();
  const __m256i zero = _mm256_set1_epi32(e.zero), lo_z = _mm256_set1_epi32(e.lo_z),
                hi_z = _mm256_set1_epi32(e.hi_z);
  const __m256 zero_f = _mm256_set1_ps(static_cast<float>(e.zero)),
               lo_f = _mm256_set1_ps(static_cast<float>(e.lo)),
               hi_f = _mm256_set1_ps(static_cast<float>(e.hi));
  for (int r = 0; r < MR; ++r) {
    // hadd: [c0 c1 c4 c5 | c2 c3 c6 c7] from the pairs' sums; the permute puts them in order.
    const __m256i l = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums[r][0]));
    const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums[r][1]));
    __m256i s = _mm256_permute4x64_epi64(_mm256_hadd_epi32(l, h), _MM_SHUFFLE(3, 1, 2, 0));
    s = _mm256_add_epi32(s, off);
    if (t.rowsum) s = _mm256_sub_epi32(s, _mm256_mullo_epi32(wz, _mm256_set1_epi32(t.rowsum[r])));
    if (t.y32) {
      _mm256_maskstore_epi32(t.y32 + r * t.ldy, mask, s);
      continue;
    }
    store_bytes8(t.y + r * t.ldy,
                 e.scale ? requant_x86_x8(s, scale, bias, mult, zero_f, lo_f, hi_f)
                         : requant_x8(s, bias, mult, zero, lo_z, hi_z),
                 cols);
  }
}
template <int... R>
constexpr std::array<TileFn, sizeof...(R)> avx2_fns(std::integer_sequence<int, R...>) {
  return {&tile_avx2<R + 1>...};
}
const std::array<TileFn, kAvx2Rows> kAvx2 = avx2_fns(std::make_integer_sequence<int, kAvx2Rows>());
#undef AOTC_Q_ROWS12
#undef AOTC_Q_ROWS6

// ---- AMX (use_amx): tdpbusd multiplies a tile of 16 rows x 64 uint8 depths by a tile of 16
// dwords of depth x 16 channels x 4 int8 depths, adding into 16 x 16 int32 sums. The
// weights' tile is 16 rows of a block's [K4][nb][4] layout read at a stride of nb * 4 bytes,
// so the packed weights serve as they are. One tile configuration: tmm0-3 the sums of 2 x 2
// tiles (32 rows x 32 channels), tmm4-5 two row tiles of A, tmm6-7 two channel tiles of the
// weights, all 16 rows x 64 bytes. Rows and depths in whole tiles only: a strip's last rows
// (fewer than 16) take the vpdpbusd tiles, and the last depths (fewer than 64) of the rows
// and of the weights are copied into zero-padded blocks, so that no tile reads past a row or
// past the weights.
#define AOTC_AMX_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,amx-tile,amx-int8")))
constexpr int64_t kAmxRows = 16;   // rows of a tile
constexpr int64_t kAmxDepth = 64;  // depths (bytes) of an A tile's row; 16 dwords of weights

// The 64-byte operand of ldtilecfg (palette 1): 8 tiles of 16 rows x 64 bytes. A constant in
// memory: GCC 12 drops stores into a local operand as dead (it does not see ldtilecfg read them).
struct alignas(64) AmxConfig {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
constexpr AmxConfig kAmxConfig = {
    1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};
static_assert(sizeof(AmxConfig) == 64 && kAmxDepth == 64 && kAmxRows == 16, "tile configuration");
AOTC_AMX_TARGET void amx_configure() { _tile_loadconfig(&kAmxConfig); }
// Back to the initial state: the tiles no longer cost a context switch their 8 KB.
AOTC_AMX_TARGET void amx_release() { _tile_release(); }

// The products of `chunks` depth tiles: A's rows at a (stride lda), the weights' dwords at w
// (stride ldw), into the sums' tiles (TwoRows: rows 16-31, TwoCols: channels 16-31).
template <bool TwoRows, bool TwoCols>
AOTC_AMX_TARGET inline __attribute__((always_inline)) void amx_chunks(const uint8_t* a, int64_t lda,
                                                                      const int8_t* w, int64_t ldw,
                                                                      int64_t chunks) {
  for (int64_t c = 0; c < chunks; ++c, a += kAmxDepth, w += 16 * ldw) {
    _tile_loadd(4, a, lda);
    if constexpr (TwoRows) _tile_loadd(5, a + kAmxRows * lda, lda);
    _tile_loadd(6, w, ldw);
    if constexpr (TwoCols) _tile_loadd(7, w + 4 * kPanel, ldw);
    _tile_dpbusd(0, 4, 6);
    if constexpr (TwoCols) _tile_dpbusd(1, 4, 7);
    if constexpr (TwoRows) _tile_dpbusd(2, 5, 6);
    if constexpr (TwoRows && TwoCols) _tile_dpbusd(3, 5, 7);
  }
}

// A block's depths past the whole tiles, zero-padded: of 32 rows (a, 64 bytes each) and of
// the weights (w, 16 dwords of depth at the block's stride).
struct AmxTail {
  alignas(64) uint8_t a[2 * kAmxRows][kAmxDepth];
  alignas(64) int8_t w[16 * kBlock * 4];
};

// The int32 sums (without offsets) of 16 rows (32 with TwoRows) of A by a block's nv panels of
// 16 channels: `chunks` depth tiles read in place, then the tail's (tail: null where none).
// sums[r][v] is row r's panel v.
template <bool TwoRows>
AOTC_AMX_TARGET void amx_rows(const uint8_t* a, int64_t lda, int64_t chunks, const int8_t* w, int64_t ldw,
                              int nv, const AmxTail* tail, int32_t (*sums)[4][16]) {
  constexpr int64_t ld_sums = 4 * 16 * sizeof(int32_t);
  for (int v = 0; v < nv; v += 2) {
    const int8_t* wv = w + v * 4 * kPanel;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    if (v + 1 < nv) {
      amx_chunks<TwoRows, true>(a, lda, wv, ldw, chunks);
      if (tail) amx_chunks<TwoRows, true>(tail->a[0], kAmxDepth, tail->w + v * 4 * kPanel, ldw, 1);
      _tile_stored(1, sums[0][v + 1], ld_sums);
      if constexpr (TwoRows) _tile_stored(3, sums[kAmxRows][v + 1], ld_sums);
    } else {
      amx_chunks<TwoRows, false>(a, lda, wv, ldw, chunks);
      if (tail) amx_chunks<TwoRows, false>(tail->a[0], kAmxDepth, tail->w + v * 4 * kPanel, ldw, 1);
    }
    _tile_stored(0, sums[0][v], ld_sums);
    if constexpr (TwoRows) _tile_stored(2, sums[kAmxRows][v], ld_sums);
  }
}
#endif

#if AOTC_KERNELS_NEON
#if defined(__clang__)
#define AOTC_DOTPROD_TARGET __attribute__((target("dotprod")))
#else
#define AOTC_DOTPROD_TARGET __attribute__((target("+dotprod")))
#endif
#define AOTC_ALWAYS_INLINE __attribute__((always_inline)) inline

// Output channels of a NEON tile: 4 weight vectors of a block's dword of depth, each 4
// channels' 4 depths (byte 4 i + d: channel i, depth d), against 4 int32 lanes.
constexpr int64_t kNeonPanel = 16;

// clang 14's arm_neon.h declares the DotProd intrinsics only where the whole file targets
// DotProd (later versions declare them with target attributes, and rename the builtin): there,
// the builtin they wrap.
#if defined(__clang__) && !defined(__ARM_FEATURE_DOTPROD)
#if __has_builtin(__builtin_neon_vdotq_v)
#define AOTC_SDOT_BUILTIN 1
#endif
#endif

// acc + the dot products of w's 4 channels (4 depths each) with dword L of a, as int8.
template <int L>
AOTC_DOTPROD_TARGET AOTC_ALWAYS_INLINE int32x4_t sdot_lane(int32x4_t acc, int8x16_t w, int8x16_t a) {
#if defined(AOTC_SDOT_BUILTIN)
  // The dup of the lane folds into sdot's by-element form.
  const int8x16_t b = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(a), L));
  return (int32x4_t)__builtin_neon_vdotq_v((int8x16_t)acc, w, b, 34);
#else
  return vdotq_laneq_s32(acc, w, a, L);
#endif
}

// One dword of depth (dword L of each row's a) against a panel's 4 weight vectors at w; Corr:
// corr gathers the weights' sums (sdot with ones).
template <int MR, bool Corr, int L>
AOTC_DOTPROD_TARGET AOTC_ALWAYS_INLINE void dot_step(int32x4_t (&acc)[MR][4], int32x4_t (&corr)[4],
                                                     const int8x16_t (&a)[MR], const int8_t* w) {
  const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16), w2 = vld1q_s8(w + 32), w3 = vld1q_s8(w + 48);
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = sdot_lane<L>(acc[r][0], w0, a[r]);
    acc[r][1] = sdot_lane<L>(acc[r][1], w1, a[r]);
    acc[r][2] = sdot_lane<L>(acc[r][2], w2, a[r]);
    acc[r][3] = sdot_lane<L>(acc[r][3], w3, a[r]);
  }
  if constexpr (Corr) {
    const int8x16_t ones = vdupq_n_s8(1);
    corr[0] = sdot_lane<0>(corr[0], w0, ones);
    corr[1] = sdot_lane<0>(corr[1], w1, ones);
    corr[2] = sdot_lane<0>(corr[2], w2, ones);
    corr[3] = sdot_lane<0>(corr[3], w3, ones);
  }
}

// The epilogue of MR rows of a 16-channel panel: the sums (the offsets included), less the
// weights' zero points times the rows' sums, to bytes. (The sums come through memory, stored
// once: read from the accumulators in this loop, they were stored at every step.)
template <int MR>
AOTC_ALWAYS_INLINE void panel_epilogue(const QTile& t, const int32_t (&sums)[MR][kNeonPanel]) {
  const QEpi& e = t.e;
  float32x4_t bias[4], mult[4], scale[4];
  int32x4_t wz[4];
  for (int v = 0; v < 4; ++v) {
    bias[v] = vld1q_f32(e.bias + 4 * v);
    mult[v] = vld1q_f32(e.mult + 4 * v);
    wz[v] = t.rowsum ? vld1q_s32(e.wz + 4 * v) : vdupq_n_s32(0);
    scale[v] = e.scale ? vld1q_f32(e.scale + 4 * v) : vdupq_n_f32(0.0f);
  }
  const int32x4_t zero = vdupq_n_s32(e.zero), lo_z = vdupq_n_s32(e.lo_z), hi_z = vdupq_n_s32(e.hi_z);
  const int32x4_t lo = vdupq_n_s32(e.lo), hi = vdupq_n_s32(e.hi);
  const float32x4_t zero_f = vdupq_n_f32(static_cast<float>(e.zero));
  for (int r = 0; r < MR; ++r) {
    int32x4_t q[4];
    for (int v = 0; v < 4; ++v) {
      int32x4_t sv = vld1q_s32(sums[r] + 4 * v);
      if (t.rowsum) sv = vmlsq_s32(sv, wz[v], vdupq_n_s32(t.rowsum[r]));  // wraps, as the scalar form
      if (t.y32) {
        int32_t lanes[4];
        vst1q_s32(lanes, sv);
        for (int64_t i = 0; i < 4 && 4 * v + i < t.cols; ++i) t.y32[r * t.ldy + 4 * v + i] = lanes[i];
        q[v] = vdupq_n_s32(0);
        continue;
      }
      q[v] = e.scale ? requant_x86_x4(sv, scale[v], bias[v], mult[v], zero_f, lo, hi)
                     : requant_x4(sv, bias[v], mult[v], zero, lo_z, hi_z);
    }
    if (!t.y32) store_bytes16(t.y + r * t.ldy, pack_u8x16(q[0], q[1], q[2], q[3]), t.cols);
  }
}

// MR rows x 16 channels (t.w at the panel's first dword; t.e's arrays at its first channel,
// zero past the columns) with sdot, exact: sum (a - 128) * w in int32, plus t.e.off, which
// holds 128 * sum_kk w unless Corr (then counted here).
constexpr int kDotRows = 4;
template <int MR, bool Corr>
AOTC_DOTPROD_TARGET void tile_dot(const QTile& t) {
  static_assert(MR >= 1 && MR <= kDotRows, "tile shape");
  int32x4_t acc[MR][4], corr[4];
  for (int v = 0; v < 4; ++v) {
    const int32x4_t o = vld1q_s32(t.e.off + 4 * v);
    for (int r = 0; r < MR; ++r) acc[r][v] = o;
    corr[v] = vdupq_n_s32(0);
  }
  const int8x16_t flip = vdupq_n_s8(-128);  // a ^ 0x80 = a - 128 as int8
  const uint8_t* a = t.a;
  const int64_t lda = t.lda, ldw = t.ldw;
  const int8_t* w = t.w;
  int8x16_t av[MR];
  int64_t kk = 0;
  // 16 bytes of each row: 4 dwords of depth.
  for (; kk + 4 <= t.k4; kk += 4, w += 4 * ldw) {
    for (int r = 0; r < MR; ++r) av[r] = veorq_s8(vreinterpretq_s8_u8(vld1q_u8(a + r * lda + 4 * kk)), flip);
    dot_step<MR, Corr, 0>(acc, corr, av, w);
    dot_step<MR, Corr, 1>(acc, corr, av, w + ldw);
    dot_step<MR, Corr, 2>(acc, corr, av, w + 2 * ldw);
    dot_step<MR, Corr, 3>(acc, corr, av, w + 3 * ldw);
  }
  for (; kk < t.k4; ++kk, w += ldw) {
    for (int r = 0; r < MR; ++r)
      av[r] = veorq_s8(vreinterpretq_s8_u32(vdupq_n_u32(load_u32(a + r * lda + 4 * kk))), flip);
    dot_step<MR, Corr, 0>(acc, corr, av, w);
  }
  if (t.tail) {
    for (int r = 0; r < MR; ++r) av[r] = veorq_s8(vreinterpretq_s8_u32(vdupq_n_u32(t.tail[r])), flip);
    dot_step<MR, Corr, 0>(acc, corr, av, w);
  }
  alignas(16) int32_t sums[MR][kNeonPanel];
  for (int v = 0; v < 4; ++v) {
    const int32x4_t c = Corr ? vshlq_n_s32(corr[v], 7) : vdupq_n_s32(0);
    for (int r = 0; r < MR; ++r) vst1q_s32(sums[r] + 4 * v, vaddq_s32(acc[r][v], c));
  }
  panel_epilogue<MR>(t, sums);
}

// One dword of depth (a - 128 as int8, repeated in each a[r]) against a panel's 4 weight
// vectors at w, for tile_mull.
template <int MR, bool Corr>
AOTC_ALWAYS_INLINE void mull_step(int32x4_t (&acc)[MR][8], int32x4_t (&corr)[4], const int8x16_t (&a)[MR],
                                  const int8_t* w) {
  const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16), w2 = vld1q_s8(w + 32), w3 = vld1q_s8(w + 48);
  // Unrolled: the accumulators stay in registers.
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
    const int8x8_t al = vget_low_s8(a[r]);
    acc[r][0] = vpadalq_s16(acc[r][0], vmull_s8(al, vget_low_s8(w0)));
    acc[r][1] = vpadalq_s16(acc[r][1], vmull_high_s8(a[r], w0));
    acc[r][2] = vpadalq_s16(acc[r][2], vmull_s8(al, vget_low_s8(w1)));
    acc[r][3] = vpadalq_s16(acc[r][3], vmull_high_s8(a[r], w1));
    acc[r][4] = vpadalq_s16(acc[r][4], vmull_s8(al, vget_low_s8(w2)));
    acc[r][5] = vpadalq_s16(acc[r][5], vmull_high_s8(a[r], w2));
    acc[r][6] = vpadalq_s16(acc[r][6], vmull_s8(al, vget_low_s8(w3)));
    acc[r][7] = vpadalq_s16(acc[r][7], vmull_high_s8(a[r], w3));
  }
  if constexpr (Corr) {
    corr[0] = vpadalq_s16(corr[0], vpaddlq_s8(w0));
    corr[1] = vpadalq_s16(corr[1], vpaddlq_s8(w1));
    corr[2] = vpadalq_s16(corr[2], vpaddlq_s8(w2));
    corr[3] = vpadalq_s16(corr[3], vpaddlq_s8(w3));
  }
}

// MR rows x 16 channels without DotProd, exact: a row's dword (a - 128 as int8) repeated
// against 2 channels' 4 depths by smull (int16 products, at most 2^14 in magnitude), sadalp
// into int32 lanes (channel, depths 0-1) and (channel, depths 2-3); the pairs added at the end.
// Offsets and Corr as tile_dot.
constexpr int kMullRows = 2;
template <int MR, bool Corr>
void tile_mull(const QTile& t) {
  static_assert(MR >= 1 && MR <= kMullRows, "tile shape");
  int32x4_t acc[MR][8], corr[4];
  for (int r = 0; r < MR; ++r)
    for (int h = 0; h < 8; ++h) acc[r][h] = vdupq_n_s32(0);
  for (int v = 0; v < 4; ++v) corr[v] = vdupq_n_s32(0);
  const int8x16_t flip = vdupq_n_s8(-128);
  const uint8_t* a = t.a;
  const int64_t lda = t.lda;
  const int8_t* w = t.w;
  int8x16_t av[MR];
  for (int64_t kk = 0; kk < t.k4; ++kk, w += t.ldw) {
    for (int r = 0; r < MR; ++r)
      av[r] = veorq_s8(vreinterpretq_s8_u32(vdupq_n_u32(load_u32(a + r * lda + 4 * kk))), flip);
    mull_step<MR, Corr>(acc, corr, av, w);
  }
  if (t.tail) {
    for (int r = 0; r < MR; ++r) av[r] = veorq_s8(vreinterpretq_s8_u32(vdupq_n_u32(t.tail[r])), flip);
    mull_step<MR, Corr>(acc, corr, av, w);
  }
  alignas(16) int32_t sums[MR][kNeonPanel];
  for (int v = 0; v < 4; ++v) {
    int32x4_t o = vld1q_s32(t.e.off + 4 * v);
    if constexpr (Corr) o = vaddq_s32(o, vshlq_n_s32(corr[v], 7));
    for (int r = 0; r < MR; ++r)
      vst1q_s32(sums[r] + 4 * v, vaddq_s32(vpaddq_s32(acc[r][2 * v], acc[r][2 * v + 1]), o));
  }
  panel_epilogue<MR>(t, sums);
}

// 128 * (the weights' sum) of each of a block's nb channels (k4 dwords of depth) added to off.
void add_weight_sums(const int8_t* w, int64_t k4, int64_t nb, int32_t* off) {
  int32x4_t acc[kBlock / 4];
  const int64_t nv = nb / 4;
  for (int64_t v = 0; v < nv; ++v) acc[v] = vdupq_n_s32(0);
  for (int64_t kk = 0; kk < k4; ++kk, w += nb * 4)
    for (int64_t v = 0; v < nv; ++v) acc[v] = vpadalq_s16(acc[v], vpaddlq_s8(vld1q_s8(w + 16 * v)));
  for (int64_t v = 0; v < nv; ++v)
    vst1q_s32(off + 4 * v, vaddq_s32(vld1q_s32(off + 4 * v), vshlq_n_s32(acc[v], 7)));
}

template <bool Corr, int... R>
constexpr std::array<TileFn, sizeof...(R)> dot_fns(std::integer_sequence<int, R...>) {
  return {&tile_dot<R + 1, Corr>...};
}
template <bool Corr, int... R>
constexpr std::array<TileFn, sizeof...(R)> mull_fns(std::integer_sequence<int, R...>) {
  return {&tile_mull<R + 1, Corr>...};
}
// [Corr][rows - 1]
const std::array<TileFn, kDotRows> kDot[2] = {dot_fns<false>(std::make_integer_sequence<int, kDotRows>()),
                                              dot_fns<true>(std::make_integer_sequence<int, kDotRows>())};
const std::array<TileFn, kMullRows> kMull[2] = {mull_fns<false>(std::make_integer_sequence<int, kMullRows>()),
                                                mull_fns<true>(std::make_integer_sequence<int, kMullRows>())};

// A block's epilogue arrays, zero past its columns: the tiles read whole panels.
struct NeonBlock {
  alignas(16) int32_t off[kBlock];
  alignas(16) float bias[kBlock];
  alignas(16) float mult[kBlock];
  alignas(16) int32_t wz[kBlock];
  alignas(16) float scale[kBlock];
};
#undef AOTC_ALWAYS_INLINE
#undef AOTC_DOTPROD_TARGET
#undef AOTC_SDOT_BUILTIN
#endif

#if !AOTC_KERNELS_AVX2 && !AOTC_KERNELS_NEON
// The epilogue of one sum in plain C++.
inline uint8_t epilogue_value(const QEpi& e, int64_t j, int32_t sum, int32_t rowsum) {
  uint32_t s = static_cast<uint32_t>(sum) + static_cast<uint32_t>(e.off[j]);
  if (e.wz) s -= static_cast<uint32_t>(e.wz[j]) * static_cast<uint32_t>(rowsum);
  if (e.scale)
    return requant_value_x86(static_cast<int32_t>(s), e.scale[j], e.bias[j], e.mult[j], e.zero, e.lo, e.hi);
  return requant_value(static_cast<int32_t>(s), e.bias[j], e.mult[j], e.zero, e.lo, e.hi);
}

// One row of a block of nb channels in plain C++ (other ISAs).
void row_portable(const QTile& t, int64_t nb, int32_t rowsum) {
  int32_t acc[kBlock] = {};
  const int64_t steps = t.k4 + (t.tail ? 1 : 0);
  for (int64_t kk = 0; kk < steps; ++kk) {
    uint8_t a4[4];
    if (kk < t.k4)
      std::memcpy(a4, t.a + 4 * kk, 4);
    else
      std::memcpy(a4, t.tail, 4);
    const int8_t* wk = t.w + kk * t.ldw;
    for (int64_t j = 0; j < nb; ++j)
      acc[j] += a4[0] * wk[4 * j] + a4[1] * wk[4 * j + 1] + a4[2] * wk[4 * j + 2] + a4[3] * wk[4 * j + 3];
  }
  for (int64_t j = 0; j < t.cols; ++j) {
    if (t.y32) {
      uint32_t s = static_cast<uint32_t>(acc[j]) + static_cast<uint32_t>(t.e.off[j]);
      if (t.e.wz) s -= static_cast<uint32_t>(t.e.wz[j]) * static_cast<uint32_t>(rowsum);
      t.y32[j] = static_cast<int32_t>(s);
    } else {
      t.y[j] = epilogue_value(t.e, j, acc[j], rowsum);
    }
  }
}
#endif

// What the epilogue reads for a block where QRequant has no bias or multiplier (int32 sums out).
alignas(64) constexpr float kZeroFloats[kBlock] = {};

// How a product is cut: strips of `rows` rows (chunks of them), channel blocks in `parts`.
struct Plan {
  int64_t kp, k4p, n16, blocks, group_bytes;
  int64_t rows, chunks, parts;
  bool gather;
};

// Rows [m0, m1) of group g times channel blocks [b0, b1); strip holds the gathered rows,
// rowsum their sums.
void run_chunk(const QGemmDesc& d, const Plan& pl, int64_t g, int64_t m0, int64_t m1, int64_t b0, int64_t b1,
               uint8_t* strip, int32_t* rowsum) {
  const int64_t rows = m1 - m0;
  QTile t{};
  int64_t rem = 0;  // depths past the whole dwords of a row read in place
  if (pl.gather) {
    d.fill(d.fill_ctx, g, m0, m1, strip, pl.kp);
    t.a = strip;
    t.lda = pl.kp;
    t.k4 = pl.k4p;
  } else {
    t.a = d.a + g * d.a_group + m0 * d.lda;
    t.lda = d.lda;
    t.k4 = d.k / 4;
    rem = d.k % 4;
  }
  t.ldy = d.ldy;
  const QRequant& rq = *d.rq;
  const bool wz = rq.w_zero != nullptr;
  if (wz)
    for (int64_t r = 0; r < rows; ++r) rowsum[r] = byte_sum(t.a + r * t.lda, d.k);
  const int32_t lo = requant_lo(rq), hi = requant_hi(rq);
  const uint8_t* a0 = t.a;
#if AOTC_KERNELS_NEON
  NeonBlock blk;
#endif
  // The rows' last depths (rem of them) in dwords, for the tile at row r0 of the chunk.
  uint32_t tails[12];
#if AOTC_KERNELS_AVX2
  // AMX: strips of at least one tile of rows, depths of at least one tile (below that the
  // padded tile, its copies and the sums' round trip through memory cost more than vpdpbusd
  // saves); the depth in whole tiles read in place (amx_chunks_in) and the rest (tail_bytes of
  // each row) copied.
  const int64_t depth_bytes = t.k4 * 4 + rem, amx_chunks_in = depth_bytes / kAmxDepth,
                tail_bytes = depth_bytes - amx_chunks_in * kAmxDepth;
  const bool amx = rows >= kAmxRows && amx_chunks_in > 0 && use_amx();
  alignas(64) int32_t amx_sums[2 * kAmxRows][4][16];
  AmxTail amx_tail;
  if (amx) {
    if (tail_bytes > 0) std::memset(amx_tail.a, 0, sizeof amx_tail.a);
    amx_configure();
  }
#endif
  auto set_tails = [&](QTile& s, int64_t r0, int64_t n_rows) {
    if (rem == 0) return;
    for (int64_t r = 0; r < n_rows; ++r) tails[r] = load_u32_partial(a0 + (r0 + r) * t.lda + 4 * t.k4, rem);
    s.tail = tails;
  };
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t col0 = b * kBlock, nb = min_i64(kBlock, pl.n16 - col0), cols = min_i64(nb, d.n - col0);
    const int64_t j0 = g * d.n + col0;  // the block's first channel in rq and y
    t.e = QEpi{rq.acc_offset + j0,
               rq.bias_over_scale ? rq.bias_over_scale + j0 : kZeroFloats,
               rq.multiplier ? rq.multiplier + j0 : kZeroFloats,
               wz ? rq.w_zero + j0 : nullptr,
               rq.acc_scale ? rq.acc_scale + j0 : nullptr,
               rq.out_zero,
               lo,
               hi,
               lo - rq.out_zero,
               hi - rq.out_zero};
    const int8_t* wb = d.w + g * pl.group_bytes + col0 * pl.k4p * 4;
    t.ldw = nb * 4;
    uint8_t* yb = d.y32 ? nullptr : d.y + m0 * d.ldy + j0;
    int32_t* yb32 = d.y32 ? d.y32 + m0 * d.ldy + j0 : nullptr;
    // The output at an element offset from the block's first: bytes, or int32 sums.
    auto out_at = [&](QTile& o, int64_t at) {
      o.y = yb ? yb + at : nullptr;
      o.y32 = yb32 ? yb32 + at : nullptr;
    };
#if AOTC_KERNELS_AVX2
    if (use_avx512_vnni()) {
      const int nv = static_cast<int>(nb / kPanel), mr = vnni_rows(nv);
      t.w = wb;
      t.cols = cols;
      int64_t r = 0;
      if (amx) {
        // The weights' dwords past the whole depth tiles, then 32 (or 16) rows at a time.
        const int64_t tail_w = pl.k4p - amx_chunks_in * 16;
        if (tail_bytes > 0) {
          std::memset(amx_tail.w, 0, sizeof amx_tail.w);
          std::memcpy(amx_tail.w, wb + amx_chunks_in * 16 * t.ldw, static_cast<size_t>(tail_w * t.ldw));
        }
        for (int64_t n_rows = 0; r + kAmxRows <= rows; r += n_rows) {
          const bool two = r + 2 * kAmxRows <= rows;
          n_rows = two ? 2 * kAmxRows : kAmxRows;
          const uint8_t* ar = a0 + r * t.lda;
          if (tail_bytes > 0)
            for (int64_t i = 0; i < n_rows; ++i)
              std::memcpy(amx_tail.a[i], ar + i * t.lda + amx_chunks_in * kAmxDepth,
                          static_cast<size_t>(tail_bytes));
          const AmxTail* tail = tail_bytes > 0 ? &amx_tail : nullptr;
          if (two)
            amx_rows<true>(ar, t.lda, amx_chunks_in, wb, t.ldw, nv, tail, amx_sums);
          else
            amx_rows<false>(ar, t.lda, amx_chunks_in, wb, t.ldw, nv, tail, amx_sums);
          QTile s = t;
          s.rowsum = wz ? rowsum + r : nullptr;
          out_at(s, r * d.ldy);
          store_rows_vnni(s, amx_sums, n_rows, nv, true);
        }
      }
      for (; r < rows; r += mr) {
        const int64_t n_rows = min_i64(mr, rows - r);
        t.a = a0 + r * t.lda;
        t.rowsum = wz ? rowsum + r : nullptr;
        out_at(t, r * d.ldy);
        set_tails(t, r, n_rows);
        vnni_fn(nv, n_rows)(t);
      }
      continue;
    }
    for (int64_t c8 = 0; c8 * 8 < cols; ++c8) {
      QTile s = t;
      s.w = wb + c8 * 32;
      s.cols = cols - c8 * 8;
      QEpi& e = s.e;
      e.off += c8 * 8;
      e.bias += c8 * 8;
      e.mult += c8 * 8;
      if (e.wz) e.wz += c8 * 8;
      if (e.scale) e.scale += c8 * 8;
      for (int64_t r = 0; r < rows; r += kAvx2Rows) {
        const int64_t n_rows = min_i64(kAvx2Rows, rows - r);
        s.a = a0 + r * t.lda;
        s.rowsum = wz ? rowsum + r : nullptr;
        out_at(s, r * d.ldy + c8 * 8);
        set_tails(s, r, n_rows);
        kAvx2[n_rows - 1](s);
      }
    }
#elif AOTC_KERNELS_NEON
    // The tiles' rows; where a strip is one tile high the tile counts the weights' sums.
    const bool dot = use_dotprod();
    const int64_t mr = dot ? kDotRows : kMullRows;
    const bool corr_in_tile = rows <= mr;
    for (int64_t j = 0; j < nb; ++j) {
      const bool in = j < cols;
      blk.off[j] = in ? rq.acc_offset[j0 + j] : 0;
      blk.bias[j] = in && rq.bias_over_scale ? rq.bias_over_scale[j0 + j] : 0.0f;
      blk.mult[j] = in && rq.multiplier ? rq.multiplier[j0 + j] : 0.0f;
      blk.wz[j] = in && wz ? rq.w_zero[j0 + j] : 0;
      blk.scale[j] = in && rq.acc_scale ? rq.acc_scale[j0 + j] : 0.0f;
    }
    if (!corr_in_tile) add_weight_sums(wb, pl.k4p, nb, blk.off);
    for (int64_t c16 = 0; c16 * kNeonPanel < cols; ++c16) {
      QTile s = t;
      s.w = wb + c16 * kNeonPanel * 4;
      s.cols = cols - c16 * kNeonPanel;
      s.e.off = blk.off + c16 * kNeonPanel;
      s.e.bias = blk.bias + c16 * kNeonPanel;
      s.e.mult = blk.mult + c16 * kNeonPanel;
      s.e.wz = blk.wz + c16 * kNeonPanel;
      s.e.scale = rq.acc_scale ? blk.scale + c16 * kNeonPanel : nullptr;
      for (int64_t r = 0; r < rows; r += mr) {
        const int64_t n_rows = min_i64(mr, rows - r);
        s.a = a0 + r * t.lda;
        s.rowsum = wz ? rowsum + r : nullptr;
        out_at(s, r * d.ldy + c16 * kNeonPanel);
        set_tails(s, r, n_rows);
        (dot ? kDot[corr_in_tile][n_rows - 1] : kMull[corr_in_tile][n_rows - 1])(s);
      }
    }
#else
    t.w = wb;
    t.cols = cols;
    for (int64_t r = 0; r < rows; ++r) {
      t.a = a0 + r * t.lda;
      out_at(t, r * d.ldy);
      set_tails(t, r, 1);
      row_portable(t, nb, wz ? rowsum[r] : 0);
    }
#endif
  }
#if AOTC_KERNELS_AVX2
  if (amx) amx_release();
#endif
}

// Stack scratch where the pool has none (or too little): strips of fewer rows.
constexpr int64_t kFallbackBytes = 32768;

}  // namespace

#if AOTC_KERNELS_AVX2
bool request_amx_permission() {
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;  // the kernel's ABI
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
#endif

void qgemm_u8(ThreadPool& pool, const QGemmDesc& d) {
  if (d.m <= 0 || d.n <= 0 || d.groups <= 0) return;
  Plan pl{};
  pl.gather = d.fill != nullptr;
  pl.kp = qgemm::round_up(d.k, 4);
  pl.k4p = pl.kp / 4;
  pl.n16 = qgemm::round_up(d.n, kPanel);
  pl.blocks = ceil_div(pl.n16, kBlock);
  pl.group_bytes = pl.k4p * 4 * pl.n16;
  const int64_t row_bytes = (pl.gather ? pl.kp : 0) + 4;
  int64_t rows_max = qgemm::chunk_rows(pl.kp);
  const bool pool_scratch = static_cast<int64_t>(pool.thread_scratch_bytes()) >= rows_max * row_bytes &&
                            pool.thread_scratch(0) != nullptr;
  if (!pool_scratch) rows_max = min_i64(rows_max, kFallbackBytes / row_bytes);
  // The caller checks qgemm_fits first: at least one row fits.
  pl.chunks = ceil_div(d.m, rows_max);
  pl.rows = min_i64(rows_max, qgemm::round_up(ceil_div(d.m, pl.chunks), qgemm::kRowUnit));
  pl.chunks = ceil_div(d.m, pl.rows);
  const double macs = static_cast<double>(d.m) * static_cast<double>(d.n) * static_cast<double>(d.k) *
                      static_cast<double>(d.groups);
  const bool single = pool.size() <= 1 || macs < 2.0 * kGemmMinFlopsPerRange;
  pl.parts = 1;
  if (!single) {
    const int64_t want = 2 * static_cast<int64_t>(pool.size()), have = d.groups * pl.chunks;
    if (have < want) pl.parts = min_i64(pl.blocks, ceil_div(want, have));
  }
  const int64_t units = d.groups * pl.chunks * pl.parts;
  auto body = [&](int64_t lo, int64_t hi, int thread) {
    alignas(64) uint8_t fallback[kFallbackBytes];
    uint8_t* scratch = pool_scratch ? pool.thread_scratch(thread) : fallback;
    uint8_t* strip = scratch;
    auto* rowsum = reinterpret_cast<int32_t*>(scratch + (pl.gather ? pl.rows * pl.kp : 0));
    for (int64_t u = lo; u < hi; ++u) {
      const int64_t g = u / (pl.chunks * pl.parts), rest = u % (pl.chunks * pl.parts);
      const int64_t chunk = rest / pl.parts, part = rest % pl.parts;
      const int64_t m0 = chunk * pl.rows, m1 = min_i64(d.m, m0 + pl.rows);
      run_chunk(d, pl, g, m0, m1, pl.blocks * part / pl.parts, pl.blocks * (part + 1) / pl.parts, strip,
                rowsum);
    }
  };
  if (single)
    body(0, units, 0);
  else
    pool.parallel_pieces(units, 1, body);
}

bool qgemm_fits(ThreadPool& pool, const QGemmDesc& d) {
  const int64_t kp = qgemm::round_up(d.k, 4), row_bytes = (d.fill ? kp : 0) + 4;
  return row_bytes <= kFallbackBytes ||
         (pool.thread_scratch(0) != nullptr &&
          static_cast<int64_t>(pool.thread_scratch_bytes()) >= qgemm::chunk_rows(kp) * row_bytes);
}

}  // namespace aotc::rt::detail

namespace aotc::rt {

void qlinear_u8(ThreadPool& pool, const QLinearParams& p, const uint8_t* x, const int8_t* w_packed,
                const QRequant& rq, uint8_t* y) {
  if (p.m <= 0 || p.n <= 0) return;
  detail::QGemmDesc d;
  d.m = p.m;
  d.n = p.n;
  d.k = p.k;
  d.a = x;
  d.lda = p.k;
  d.w = w_packed;
  d.rq = &rq;
  d.y = y;
  d.ldy = p.n;
  detail::qgemm_u8(pool, d);
}

}  // namespace aotc::rt
