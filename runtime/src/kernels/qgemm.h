// qgemm.h - the uint8 x int8 product that qconv2d_u8 and qlinear_u8 share, and the scalar
// forms of the quantized kernels' rounding, which every vector path reproduces (internal
// to the runtime).
#pragma once

#include <aotc/rt/kernels.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernel_util.h"

namespace aotc::rt::detail {

// x86's float -> int32 conversion in the current rounding mode (cvtps2dq): nearbyint, and
// INT32_MIN for NaN and for values outside the int32 range, on every ISA.
inline int32_t cvt_nearest_i32(float v) {
  const float r = std::nearbyint(v);
  return r >= -2147483648.0f && r < 2147483648.0f ? static_cast<int32_t>(r) : INT32_MIN;
}

// The largest float below 2^31 (torch's int32_float_max_val), where quantization clips.
constexpr float kQuantizeClip = 2147483520.0f;

// torch's float -> quint8 step as its vectorised code (fbgemm's QuantizeAvx2, and the qadd
// kernel's Vectorized<quint8>::quantize) computes it on t = x * inv_scale:
//   t = min(t, kQuantizeClip) (minps: a NaN gives kQuantizeClip), r = cvtps2dq(t),
//   r + zero (int32, wrapping), clamped to [0, 255].
// For a finite t in the int32 range that is clamp(zero + nearbyint(t), 0, 255); NaN, +inf and
// values near 2^31 give 255 where zero < 128 (255 - zero < 128 for the wrap) and 0 otherwise,
// as torch 2.11 does.
inline uint8_t quantize_scaled(float t, int32_t zero) {
  t = t < kQuantizeClip ? t : kQuantizeClip;
  const auto r =
      static_cast<int32_t>(static_cast<uint32_t>(cvt_nearest_i32(t)) + static_cast<uint32_t>(zero));
  return static_cast<uint8_t>(r < 0 ? 0 : r > 255 ? 255 : r);
}

// QRequant's output step for one sum: clamp(zero + cvtps2dq((float(acc) + bias) * mult),
// lo, hi), which is what fbgemm's saturating packs give (an out-of-range product converts to
// INT32_MIN and ends at lo).
inline uint8_t requant_value(int32_t acc, float bias, float mult, int32_t zero, int32_t lo, int32_t hi) {
  const float f = (static_cast<float>(acc) + bias) * mult;
  const int64_t v = static_cast<int64_t>(cvt_nearest_i32(f)) + zero;
  return static_cast<uint8_t>(v < lo ? lo : v > hi ? hi : v);
}

// v as the float it is: the compiler may not fuse it into a multiply-add with what follows
// (GCC and clang contract a * b + c by default, where torch rounds each step).
inline float held(float v) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__("" : "+x"(v));
#elif defined(__aarch64__)
  __asm__("" : "+w"(v));
#else
  volatile float t = v;
  v = t;
#endif
  return v;
}

// QRequant's oneDNN form (acc_scale set) for one sum: cvtps2dq(clamp(fma(fma(float(acc), scale,
// bias), mult, float(zero)), lo, hi)). A NaN takes lo, as maxps(f, lo) gives it.
inline uint8_t requant_value_x86(int32_t acc, float scale, float bias, float mult, int32_t zero, int32_t lo,
                                 int32_t hi) {
  float f = std::fma(std::fma(static_cast<float>(acc), scale, bias), mult, static_cast<float>(zero));
  const float lo_f = static_cast<float>(lo), hi_f = static_cast<float>(hi);
  f = f > lo_f ? f : lo_f;
  f = f < hi_f ? f : hi_f;
  return static_cast<uint8_t>(cvt_nearest_i32(f));
}

// QRequant's step for channel j's sum acc (offsets and weight zero points applied), in
// whichever form rq holds; lo and hi as requant_lo and requant_hi give them.
inline uint8_t requant_channel(const QRequant& rq, int64_t j, int32_t acc, int32_t lo, int32_t hi) {
  return rq.acc_scale ? requant_value_x86(acc, rq.acc_scale[j], rq.bias_over_scale[j], rq.multiplier[j],
                                          rq.out_zero, lo, hi)
                      : requant_value(acc, rq.bias_over_scale[j], rq.multiplier[j], rq.out_zero, lo, hi);
}

// QRequant's bounds within [0, 255].
inline int32_t requant_lo(const QRequant& rq) { return rq.lo < 0 ? 0 : rq.lo > 255 ? 255 : rq.lo; }
inline int32_t requant_hi(const QRequant& rq) { return rq.hi < 0 ? 0 : rq.hi > 255 ? 255 : rq.hi; }

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// The first `count` (0..3) bytes at p in a dword, the rest zero: the last depths of a row
// read in place, never past its end.
inline uint32_t load_u32_partial(const uint8_t* p, int64_t count) {
  uint32_t v = 0;
  std::memcpy(&v, p, static_cast<size_t>(count));
  return v;
}

// One product per group: y[m][g * n + j] = requant(sum_kk A_g[m][kk] * W_g[kk][j]) for m < m,
// j < n, with W packed as layouts.h's qgemm section describes. A's rows: read in place at
// a + g * a_group + m * lda (k bytes each), or, where fill is set, gathered by
// fill(fill_ctx, g, m0, m1, dst, ld) into rows of ld = k rounded up to 4 bytes (the bytes
// past k zero).
struct QGemmDesc {
  int64_t m = 0, n = 0, k = 0, groups = 1;
  const uint8_t* a = nullptr;
  int64_t lda = 0, a_group = 0;
  void (*fill)(const void* ctx, int64_t g, int64_t m0, int64_t m1, uint8_t* dst, int64_t ld) = nullptr;
  const void* fill_ctx = nullptr;
  const int8_t* w = nullptr;
  const QRequant* rq = nullptr;
  uint8_t* y = nullptr;
  // Instead of y: the int32 sums (rq's offsets and weight zero points applied; its bias and
  // multiplier may be null).
  int32_t* y32 = nullptr;
  int64_t ldy = 0;
};
void qgemm_u8(ThreadPool& pool, const QGemmDesc& d);
// Whether qgemm_u8 can run d: a gathered row (and its sum) fits in the pool's thread scratch
// or in the stack block it uses where the pool has none.
bool qgemm_fits(ThreadPool& pool, const QGemmDesc& d);

#if AOTC_KERNELS_AVX2
// QRequant's step on 16 sums s (acc + offset - w_zero * rowsum): bytes clamp(zero +
// cvtps2dq((float(s) + bias) * mult), lo, hi), with lo_z = lo - zero and hi_z = hi - zero.
// (Zero-masking forms with every lane set: GCC 12 warns that the plain forms' undefined
// pass-through "may be used uninitialized".)
constexpr __mmask16 kAllLanes16 = 0xFFFF;
__attribute__((target("avx512f"))) inline __m128i requant_x16(__m512i s, __m512 bias, __m512 mult,
                                                              __m512i zero, __m512i lo_z, __m512i hi_z) {
  const __m512 f = _mm512_mul_ps(_mm512_add_ps(_mm512_maskz_cvtepi32_ps(kAllLanes16, s), bias), mult);
  const __m512i r = _mm512_maskz_cvtps_epi32(kAllLanes16, f);
  const __m512i q = _mm512_maskz_min_epi32(kAllLanes16, _mm512_maskz_max_epi32(kAllLanes16, r, lo_z), hi_z);
  return _mm512_maskz_cvtepi32_epi8(kAllLanes16, _mm512_add_epi32(q, zero));
}
// QRequant's oneDNN form on 16 sums: int32 lanes cvtps2dq(clamp(((float(s) * scale) + bias)
// * mult + zero_f, lo_f, hi_f)), the zero point included, each in [lo, hi].
__attribute__((target("avx512f"))) inline __m512i requant_x86_cvt16(__m512i s, __m512 scale, __m512 bias,
                                                                    __m512 mult, __m512 zero_f, __m512 lo_f,
                                                                    __m512 hi_f) {
  const __m512 t = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(kAllLanes16, s), scale, bias);
  const __m512 f = _mm512_fmadd_ps(t, mult, zero_f);
  return _mm512_maskz_cvtps_epi32(
      kAllLanes16, _mm512_maskz_min_ps(kAllLanes16, _mm512_maskz_max_ps(kAllLanes16, f, lo_f), hi_f));
}
// The same as 16 bytes.
__attribute__((target("avx512f"))) inline __m128i requant_x86_x16(__m512i s, __m512 scale, __m512 bias,
                                                                  __m512 mult, __m512 zero_f, __m512 lo_f,
                                                                  __m512 hi_f) {
  return _mm512_maskz_cvtepi32_epi8(kAllLanes16, requant_x86_cvt16(s, scale, bias, mult, zero_f, lo_f, hi_f));
}
// 8 int32 lanes (each in [0, 255]) as bytes, in the low 8 of the result.
inline __m128i pack_u8x8(__m256i q) {
  const __m256i p16 = _mm256_packs_epi32(q, q);      // q0-3 q0-3 | q4-7 q4-7 (int16)
  const __m256i p8 = _mm256_packus_epi16(p16, p16);  // bytes 0-3: q0-3 | q4-7
  return _mm_unpacklo_epi32(_mm256_castsi256_si128(p8), _mm256_extracti128_si256(p8, 1));
}
// The same on 8 sums, the bytes in the low 8 of the result.
inline __m128i requant_x8(__m256i s, __m256 bias, __m256 mult, __m256i zero, __m256i lo_z, __m256i hi_z) {
  const __m256 f = _mm256_mul_ps(_mm256_add_ps(_mm256_cvtepi32_ps(s), bias), mult);
  return pack_u8x8(
      _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(f), lo_z), hi_z), zero));
}
// QRequant's oneDNN form on 8 sums: int32 lanes, the zero point included, each in [lo, hi].
inline __m256i requant_x86_cvt8(__m256i s, __m256 scale, __m256 bias, __m256 mult, __m256 zero_f, __m256 lo_f,
                                __m256 hi_f) {
  const __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scale, bias);
  const __m256 f = _mm256_fmadd_ps(t, mult, zero_f);
  return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(f, lo_f), hi_f));
}
// The same as bytes in the low 8 of the result.
inline __m128i requant_x86_x8(__m256i s, __m256 scale, __m256 bias, __m256 mult, __m256 zero_f, __m256 lo_f,
                              __m256 hi_f) {
  return pack_u8x8(requant_x86_cvt8(s, scale, bias, mult, zero_f, lo_f, hi_f));
}
// quantize_scaled on 8 lanes t (= x * inv_scale): bytes in the low 8 of the result.
inline __m128i quantize_x8(__m256 t, __m256i zero) {
  // minps returns its second operand where either is NaN: the clip value, as torch's.
  const __m256i r =
      _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_min_ps(t, _mm256_set1_ps(kQuantizeClip))), zero);
  return pack_u8x8(_mm256_min_epi32(_mm256_max_epi32(r, _mm256_setzero_si256()), _mm256_set1_epi32(255)));
}
// The first count (0..8) bytes of v's low 8 at dst.
inline void store_bytes8(uint8_t* dst, __m128i v, int64_t count) {
  if (count == 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), v);
    return;
  }
  alignas(16) uint8_t tmp[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(tmp), v);
  std::memcpy(dst, tmp, static_cast<size_t>(count));
}
#endif

#if AOTC_KERNELS_NEON
// QRequant's step on 4 sums s (acc + offset - w_zero * rowsum), as requant_value: int32
// lanes clamp(zero + cvtps2dq((float(s) + bias) * mult), lo, hi), with lo_z = lo - zero and
// hi_z = hi - zero. fcvtns rounds half to even as nearbyint does, but saturates (and gives 0
// for NaN) where x86 gives INT32_MIN, which ends at lo: such lanes take lo_z.
inline int32x4_t requant_x4(int32x4_t s, float32x4_t bias, float32x4_t mult, int32x4_t zero, int32x4_t lo_z,
                            int32x4_t hi_z) {
  const float32x4_t f = vmulq_f32(vaddq_f32(vcvtq_f32_s32(s), bias), mult);
  // In the int32 range after rounding: -2^31 <= f < 2^31 (false for NaN).
  const uint32x4_t in_range =
      vandq_u32(vcgeq_f32(f, vdupq_n_f32(-2147483648.0f)), vcltq_f32(f, vdupq_n_f32(2147483648.0f)));
  const int32x4_t r = vbslq_s32(in_range, vcvtnq_s32_f32(f), lo_z);
  return vaddq_s32(vminq_s32(vmaxq_s32(r, lo_z), hi_z), zero);
}
// QRequant's oneDNN form on 4 sums: int32 lanes in [lo, hi] (a NaN, 0 from fcvtns, takes lo
// from the integer clamp, as on x86).
inline int32x4_t requant_x86_x4(int32x4_t s, float32x4_t scale, float32x4_t bias, float32x4_t mult,
                                float32x4_t zero_f, int32x4_t lo, int32x4_t hi) {
  const float32x4_t t = vfmaq_f32(bias, vcvtq_f32_s32(s), scale);
  const float32x4_t f = vfmaq_f32(zero_f, t, mult);
  const float32x4_t c = vminq_f32(vmaxq_f32(f, vcvtq_f32_s32(lo)), vcvtq_f32_s32(hi));
  return vminq_s32(vmaxq_s32(vcvtnq_s32_f32(c), lo), hi);
}
// 16 int32 lanes (each in [0, 255]) as bytes, in order.
inline uint8x16_t pack_u8x16(int32x4_t q0, int32x4_t q1, int32x4_t q2, int32x4_t q3) {
  const uint16x8_t h01 = vuzp1q_u16(vreinterpretq_u16_s32(q0), vreinterpretq_u16_s32(q1));
  const uint16x8_t h23 = vuzp1q_u16(vreinterpretq_u16_s32(q2), vreinterpretq_u16_s32(q3));
  return vuzp1q_u8(vreinterpretq_u8_u16(h01), vreinterpretq_u8_u16(h23));
}
// The first count (0..16) bytes of v at dst.
inline void store_bytes16(uint8_t* dst, uint8x16_t v, int64_t count) {
  if (count >= 16) {
    vst1q_u8(dst, v);
    return;
  }
  uint8_t tmp[16];
  vst1q_u8(tmp, v);
  std::memcpy(dst, tmp, static_cast<size_t>(count));
}
#endif

}  // namespace aotc::rt::detail
