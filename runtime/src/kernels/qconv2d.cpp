// qconv2d.cpp - torch's quantized conv2d on NHWC uint8 (qconv2d_u8): the product in
// qgemm.cpp over rows of the input read in place (1x1, stride 1, no padding) or gathered
// (im2col, padding as the input's zero point), and depthwise layers directly, vectorised
// along the channels.
//
// Depthwise: for each output pixel the taps' input pixels (or a row of in_zero bytes where
// a tap lies in the padding) times the weights, packed as int32 [tap][channel]: an
// activation zero-extended to int32 times such a weight is one vpmaddwd lane (the upper
// halves are 0 x the sign), or one vpdpwssd with AVX512-VNNI, summed exactly in int32.
// Weights with zero points are used as w - w_zero (in [-255, 255], still one int16), so
// that sum (w - w_zero) * a = sum w * a - w_zero * sum a with no per-channel sums of a.
// On aarch64 (NEON) the same weights as int16 [tap][channel]: an activation widened to int16
// times one is an smlal lane into int32, exact.
#include <aotc/rt/thread_pool.h>

#include "qgemm.h"

namespace aotc::rt {
namespace {

using detail::ceil_div;
using detail::min_i64;

// ---------------------------------------------------------------- im2col rows
struct Gather {
  const QConv2dParams* p;
  const uint8_t* x;
};

// n bytes from src to dst, and n bytes of v at dst: inline for the short runs of a gathered
// row (the stem's 7 x 3 channels a kernel row), where a call to memcpy cost more than the
// copy; fixed-size memcpy compiles to single moves, overlapping at the end.
inline void copy_bytes(uint8_t* dst, const uint8_t* src, int64_t n) {
  if (n >= 16) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) std::memcpy(dst + i, src + i, 16);
    if (i < n) std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}
inline void fill_bytes(uint8_t* dst, uint8_t v, int64_t n) {
  if (n >= 16) {
    uint8_t block[16];
    std::memset(block, v, sizeof block);
    copy_bytes(dst, block, 16);
    int64_t i = 16;
    for (; i + 16 <= n; i += 16) std::memcpy(dst + i, block, 16);
    if (i < n) std::memcpy(dst + n - 16, block, 16);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = v;
  }
}

// detail::valid_taps without its divisions where the step is 1.
inline detail::TapRange tap_range(int64_t start, int64_t step, int64_t taps, int64_t size) {
  if (step != 1) return detail::valid_taps(start, step, taps, size);
  const int64_t lo = start < 0 ? detail::min_i64(taps, -start) : 0;
  const int64_t hi = detail::max_i64(lo, detail::min_i64(taps, size - start));
  return {lo, hi};
}

// Rows [m0, m1) of group g's A at dst (ld bytes each): [kh][kw][ci], padding in_zero,
// the bytes past the depth zero.
void gather_rows(const void* ctx, int64_t g, int64_t m0, int64_t m1, uint8_t* dst, int64_t ld) {
  const auto& gc = *static_cast<const Gather*>(ctx);
  const QConv2dParams& p = *gc.p;
  const int64_t cig = p.c_in / p.groups, k = cig * p.kernel_h * p.kernel_w, span = p.kernel_w * cig;
  const auto z = static_cast<uint8_t>(p.in_zero);
  // One kernel row's taps are one run of the input row when they are adjacent pixels and
  // a group is all of a pixel's channels.
  const bool runs = p.dilation_w == 1 && cig == p.c_in;
  int64_t ow = m0 % p.w_out, oh = m0 / p.w_out % p.h_out, n = m0 / (p.w_out * p.h_out);
  for (int64_t m = m0; m < m1; ++m) {
    uint8_t* row = dst + (m - m0) * ld;
    const int64_t ih0 = oh * p.stride_h - p.pad_h, iw0 = ow * p.stride_w - p.pad_w;
    const detail::TapRange rr = tap_range(ih0, p.dilation_h, p.kernel_h, p.h_in);
    const detail::TapRange cr = tap_range(iw0, p.dilation_w, p.kernel_w, p.w_in);
    for (int64_t i = 0; i < p.kernel_h; ++i) {
      uint8_t* ri = row + i * span;
      if (i < rr.lo || i >= rr.hi || cr.lo == cr.hi) {
        fill_bytes(ri, z, span);
        continue;
      }
      const uint8_t* xrow = gc.x + (n * p.h_in + ih0 + i * p.dilation_h) * p.w_in * p.c_in + g * cig;
      fill_bytes(ri, z, cr.lo * cig);
      if (runs) {
        copy_bytes(ri + cr.lo * cig, xrow + (iw0 + cr.lo) * p.c_in, (cr.hi - cr.lo) * cig);
      } else {
        for (int64_t j = cr.lo; j < cr.hi; ++j)
          copy_bytes(ri + j * cig, xrow + (iw0 + j * p.dilation_w) * p.c_in, cig);
      }
      fill_bytes(ri + cr.hi * cig, z, (p.kernel_w - cr.hi) * cig);
    }
    fill_bytes(row + k, 0, ld - k);
    if (++ow == p.w_out) {
      ow = 0;
      if (++oh == p.h_out) {
        oh = 0;
        ++n;
      }
    }
  }
}

// ---------------------------------------------------------------- depthwise
struct DwArgs {
  const QConv2dParams* p;
  const QRequant* rq;
  int64_t taps, t4, c64;
  int32_t lo, hi;
  // The VNNI form's requant arrays, in its channel order per 64-channel block (see layouts.h):
  // entry 16 k + 4 L + i of block b is channel 64 b + 16 L + 4 k + i.
  const int32_t* off_p;
  const float* bias_p;
  const float* mult_p;
  const float* scale_p;  // QRequant::acc_scale's, or null
  const int32_t* w32;    // the other forms' weights: int32 [tap][c64], less the weight zero points
  const int16_t* w16;    // the NEON form's: the same as int16 (in w32's place)
};

// Output pixel's taps: the input pixel of each, or zrow.
void tap_pointers(const QConv2dParams& p, const uint8_t* x, const uint8_t* zrow, int64_t n, int64_t oh,
                  int64_t ow, const uint8_t** ptr) {
  const int64_t ih0 = oh * p.stride_h - p.pad_h, iw0 = ow * p.stride_w - p.pad_w;
  for (int64_t i = 0; i < p.kernel_h; ++i) {
    const int64_t ih = ih0 + i * p.dilation_h;
    for (int64_t j = 0; j < p.kernel_w; ++j) {
      const int64_t iw = iw0 + j * p.dilation_w;
      const bool in = ih >= 0 && ih < p.h_in && iw >= 0 && iw < p.w_in;
      ptr[i * p.kernel_w + j] = in ? x + ((n * p.h_in + ih) * p.w_in + iw) * p.c_in : zrow;
    }
  }
}

#if !AOTC_KERNELS_NEON
// Channels [c0, c1) of one output pixel in plain C++.
void dw_pixel_scalar(const DwArgs& d, const uint8_t* const* ptr, int64_t c0, int64_t c1, uint8_t* yp) {
  const QRequant& rq = *d.rq;
  for (int64_t c = c0; c < c1; ++c) {
    uint32_t s = 0;
    for (int64_t t = 0; t < d.taps; ++t)
      s += static_cast<uint32_t>(static_cast<int32_t>(ptr[t][c]) * d.w32[t * d.c64 + c]);
    s += static_cast<uint32_t>(rq.acc_offset[c]);
    yp[c] = detail::requant_channel(rq, c, static_cast<int32_t>(s), d.lo, d.hi);
  }
}
#endif

#if AOTC_KERNELS_AVX2
#define AOTC_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

// cvtps2dq((float(s + offset) + bias) * multiplier) of the 16 channels at e in the VNNI
// form's order; in QRequant's oneDNN form, its clamped result with the zero point.
AOTC_VNNI_TARGET inline __m512i dw_scaled(const DwArgs& d, __m512i s, int64_t e) {
  if (d.scale_p)
    return detail::requant_x86_cvt16(
        _mm512_add_epi32(s, _mm512_loadu_si512(d.off_p + e)), _mm512_loadu_ps(d.scale_p + e),
        _mm512_loadu_ps(d.bias_p + e), _mm512_loadu_ps(d.mult_p + e),
        _mm512_set1_ps(static_cast<float>(d.rq->out_zero)), _mm512_set1_ps(static_cast<float>(d.lo)),
        _mm512_set1_ps(static_cast<float>(d.hi)));
  const __m512 f = _mm512_add_ps(
      _mm512_maskz_cvtepi32_ps(detail::kAllLanes16, _mm512_add_epi32(s, _mm512_loadu_si512(d.off_p + e))),
      _mm512_loadu_ps(d.bias_p + e));
  return _mm512_maskz_cvtps_epi32(detail::kAllLanes16, _mm512_mul_ps(f, _mm512_loadu_ps(d.mult_p + e)));
}

// 64 channels from c0 (block bw of the packed weights) of one output pixel, 4 taps a
// vpdpbusd; Masked: the first `cols` of them (the input read no further).
template <bool Masked>
AOTC_VNNI_TARGET void dw4_zmm(const DwArgs& d, const uint8_t* const* ptr, const int8_t* bw, int64_t c0,
                              int64_t cols, uint8_t* yp) {
  const __mmask64 m = Masked ? _cvtu64_mask64((1ull << cols) - 1u) : _cvtu64_mask64(~0ull);
  __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t g = 0; g < d.t4; ++g, bw += 256) {
    const uint8_t* const* pg = ptr + 4 * g;
    const __m512i t0 = Masked ? _mm512_maskz_loadu_epi8(m, pg[0] + c0) : _mm512_loadu_si512(pg[0] + c0);
    const __m512i t1 = Masked ? _mm512_maskz_loadu_epi8(m, pg[1] + c0) : _mm512_loadu_si512(pg[1] + c0);
    const __m512i t2 = Masked ? _mm512_maskz_loadu_epi8(m, pg[2] + c0) : _mm512_loadu_si512(pg[2] + c0);
    const __m512i t3 = Masked ? _mm512_maskz_loadu_epi8(m, pg[3] + c0) : _mm512_loadu_si512(pg[3] + c0);
    const __m512i u01l = _mm512_unpacklo_epi8(t0, t1), u01h = _mm512_unpackhi_epi8(t0, t1);
    const __m512i u23l = _mm512_unpacklo_epi8(t2, t3), u23h = _mm512_unpackhi_epi8(t2, t3);
    s0 = _mm512_dpbusd_epi32(s0, _mm512_unpacklo_epi16(u01l, u23l), _mm512_loadu_si512(bw));
    s1 = _mm512_dpbusd_epi32(s1, _mm512_unpackhi_epi16(u01l, u23l), _mm512_loadu_si512(bw + 64));
    s2 = _mm512_dpbusd_epi32(s2, _mm512_unpacklo_epi16(u01h, u23h), _mm512_loadu_si512(bw + 128));
    s3 = _mm512_dpbusd_epi32(s3, _mm512_unpackhi_epi16(u01h, u23h), _mm512_loadu_si512(bw + 192));
  }
  // fbgemm's saturating packs: 128-bit lane L gets the bytes of lane L of s0..s3, channels
  // 16 L + 0..15 in order; clamp(zero + r, lo, hi) as sat16(sat16(r) + zero), u8, the bounds.
  // (The oneDNN form's lanes hold the zero point already.)
  const __m512i z16 = _mm512_set1_epi16(static_cast<int16_t>(d.scale_p ? 0 : d.rq->out_zero));
  const __m512i p01 =
      _mm512_adds_epi16(_mm512_packs_epi32(dw_scaled(d, s0, c0), dw_scaled(d, s1, c0 + 16)), z16);
  const __m512i p23 =
      _mm512_adds_epi16(_mm512_packs_epi32(dw_scaled(d, s2, c0 + 32), dw_scaled(d, s3, c0 + 48)), z16);
  __m512i b = _mm512_packus_epi16(p01, p23);
  b = _mm512_min_epu8(_mm512_max_epu8(b, _mm512_set1_epi8(static_cast<char>(d.lo))),
                      _mm512_set1_epi8(static_cast<char>(d.hi)));
  if (Masked)
    _mm512_mask_storeu_epi8(yp + c0, m, b);
  else
    _mm512_storeu_si512(yp + c0, b);
}

// The first `cols` (<= 32) channels of a block from c0 with ymm: the same on lanes 0-1.
AOTC_VNNI_TARGET void dw4_ymm(const DwArgs& d, const uint8_t* const* ptr, const int8_t* bw, int64_t c0,
                              int64_t cols, uint8_t* yp) {
  const __mmask32 m = _cvtu32_mask32(cols >= 32 ? ~0u : (1u << cols) - 1u);
  __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t g = 0; g < d.t4; ++g, bw += 256) {
    const uint8_t* const* pg = ptr + 4 * g;
    const __m256i t0 = _mm256_maskz_loadu_epi8(m, pg[0] + c0), t1 = _mm256_maskz_loadu_epi8(m, pg[1] + c0);
    const __m256i t2 = _mm256_maskz_loadu_epi8(m, pg[2] + c0), t3 = _mm256_maskz_loadu_epi8(m, pg[3] + c0);
    const __m256i u01l = _mm256_unpacklo_epi8(t0, t1), u01h = _mm256_unpackhi_epi8(t0, t1);
    const __m256i u23l = _mm256_unpacklo_epi8(t2, t3), u23h = _mm256_unpackhi_epi8(t2, t3);
    auto wv = [&](int k) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bw + 64 * k)); };
    s0 = _mm256_dpbusd_epi32(s0, _mm256_unpacklo_epi16(u01l, u23l), wv(0));
    s1 = _mm256_dpbusd_epi32(s1, _mm256_unpackhi_epi16(u01l, u23l), wv(1));
    s2 = _mm256_dpbusd_epi32(s2, _mm256_unpacklo_epi16(u01h, u23h), wv(2));
    s3 = _mm256_dpbusd_epi32(s3, _mm256_unpackhi_epi16(u01h, u23h), wv(3));
  }
  auto scaled = [&](__m256i s, int k) {
    const __m256i o = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d.off_p + c0 + 16 * k));
    if (d.scale_p)
      return detail::requant_x86_cvt8(
          _mm256_add_epi32(s, o), _mm256_loadu_ps(d.scale_p + c0 + 16 * k),
          _mm256_loadu_ps(d.bias_p + c0 + 16 * k), _mm256_loadu_ps(d.mult_p + c0 + 16 * k),
          _mm256_set1_ps(static_cast<float>(d.rq->out_zero)), _mm256_set1_ps(static_cast<float>(d.lo)),
          _mm256_set1_ps(static_cast<float>(d.hi)));
    const __m256 f =
        _mm256_add_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s, o)), _mm256_loadu_ps(d.bias_p + c0 + 16 * k));
    return _mm256_cvtps_epi32(_mm256_mul_ps(f, _mm256_loadu_ps(d.mult_p + c0 + 16 * k)));
  };
  const __m256i z16 = _mm256_set1_epi16(static_cast<int16_t>(d.scale_p ? 0 : d.rq->out_zero));
  const __m256i p01 = _mm256_adds_epi16(_mm256_packs_epi32(scaled(s0, 0), scaled(s1, 1)), z16);
  const __m256i p23 = _mm256_adds_epi16(_mm256_packs_epi32(scaled(s2, 2), scaled(s3, 3)), z16);
  __m256i b = _mm256_packus_epi16(p01, p23);
  b = _mm256_min_epu8(_mm256_max_epu8(b, _mm256_set1_epi8(static_cast<char>(d.lo))),
                      _mm256_set1_epi8(static_cast<char>(d.hi)));
  _mm256_mask_storeu_epi8(yp + c0, m, b);
}

AOTC_VNNI_TARGET void dw_pixel_vnni4(const DwArgs& d, const uint8_t* const* ptr, const int8_t* w,
                                     uint8_t* yp) {
  const int64_t c = d.p->c_out;
  const int64_t block_bytes = d.t4 * 256;
  int64_t c0 = 0;
  for (; c0 + 64 <= c; c0 += 64) dw4_zmm<false>(d, ptr, w + c0 / 64 * block_bytes, c0, 64, yp);
  if (c0 < c) {
    if (c - c0 <= 32)
      dw4_ymm(d, ptr, w + c0 / 64 * block_bytes, c0, c - c0, yp);
    else
      dw4_zmm<true>(d, ptr, w + c0 / 64 * block_bytes, c0, c - c0, yp);
  }
}

// With weight zero points: NV * 16 channels from c0, one tap a vpdpwssd on int32 lanes (the
// zero-extended activation times the int32 weight less its zero point); masked: the last
// 16 (cols of them valid, NV == 1).
template <int NV, bool Masked>
AOTC_VNNI_TARGET void dw_chunk_vnni(const DwArgs& d, const uint8_t* const* ptr, int64_t c0, int64_t cols,
                                    uint8_t* yp) {
  const auto m = static_cast<__mmask16>(Masked ? (1u << cols) - 1u : 0xFFFFu);
  __m512i acc[NV];
  for (int v = 0; v < NV; ++v) acc[v] = _mm512_setzero_si512();
  for (int64_t t = 0; t < d.taps; ++t) {
    const uint8_t* xp = ptr[t] + c0;
    const int32_t* wt = d.w32 + t * d.c64 + c0;
    for (int v = 0; v < NV; ++v) {
      const __m128i bytes = Masked ? _mm_maskz_loadu_epi8(m, xp + 16 * v)
                                   : _mm_loadu_si128(reinterpret_cast<const __m128i*>(xp + 16 * v));
      acc[v] = _mm512_dpwssd_epi32(acc[v], _mm512_maskz_cvtepu8_epi32(detail::kAllLanes16, bytes),
                                   _mm512_loadu_si512(wt + 16 * v));
    }
  }
  const QRequant& rq = *d.rq;
  const __m512i zero = _mm512_set1_epi32(rq.out_zero), lo_z = _mm512_set1_epi32(d.lo - rq.out_zero),
                hi_z = _mm512_set1_epi32(d.hi - rq.out_zero);
  for (int v = 0; v < NV; ++v) {
    const int64_t c = c0 + 16 * v;
    const __m512i s = _mm512_add_epi32(acc[v], _mm512_maskz_loadu_epi32(m, rq.acc_offset + c));
    const __m512 bias = _mm512_maskz_loadu_ps(m, rq.bias_over_scale + c),
                 mult = _mm512_maskz_loadu_ps(m, rq.multiplier + c);
    const __m128i q = rq.acc_scale
                          ? detail::requant_x86_x16(s, _mm512_maskz_loadu_ps(m, rq.acc_scale + c), bias, mult,
                                                    _mm512_set1_ps(static_cast<float>(rq.out_zero)),
                                                    _mm512_set1_ps(static_cast<float>(d.lo)),
                                                    _mm512_set1_ps(static_cast<float>(d.hi)))
                          : detail::requant_x16(s, bias, mult, zero, lo_z, hi_z);
    _mm_mask_storeu_epi8(yp + c, m, q);
  }
}

AOTC_VNNI_TARGET void dw_pixel_vnni32(const DwArgs& d, const uint8_t* const* ptr, uint8_t* yp) {
  const int64_t c = d.p->c_out;
  int64_t c0 = 0;
  for (; c0 + 64 <= c; c0 += 64) dw_chunk_vnni<4, false>(d, ptr, c0, 64, yp);
  for (; c0 + 16 <= c; c0 += 16) dw_chunk_vnni<1, false>(d, ptr, c0, 16, yp);
  if (c0 < c) dw_chunk_vnni<1, true>(d, ptr, c0, c - c0, yp);
}

// NV * 8 channels from c0 of one output pixel on AVX2 (vpmaddwd on int32 lanes).
template <int NV>
void dw_chunk_avx2(const DwArgs& d, const uint8_t* const* ptr, int64_t c0, uint8_t* yp) {
  __m256i acc[NV];
  for (int v = 0; v < NV; ++v) acc[v] = _mm256_setzero_si256();
  for (int64_t t = 0; t < d.taps; ++t) {
    const uint8_t* xp = ptr[t] + c0;
    const int32_t* wt = d.w32 + t * d.c64 + c0;
    for (int v = 0; v < NV; ++v) {
      const __m256i a = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(xp + 8 * v)));
      acc[v] = _mm256_add_epi32(
          acc[v], _mm256_madd_epi16(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wt + 8 * v))));
    }
  }
  const QRequant& rq = *d.rq;
  const __m256i zero = _mm256_set1_epi32(rq.out_zero), lo_z = _mm256_set1_epi32(d.lo - rq.out_zero),
                hi_z = _mm256_set1_epi32(d.hi - rq.out_zero);
  for (int v = 0; v < NV; ++v) {
    const int64_t c = c0 + 8 * v;
    const __m256i s =
        _mm256_add_epi32(acc[v], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rq.acc_offset + c)));
    const __m256 bias = _mm256_loadu_ps(rq.bias_over_scale + c), mult = _mm256_loadu_ps(rq.multiplier + c);
    const __m128i q = rq.acc_scale ? detail::requant_x86_x8(s, _mm256_loadu_ps(rq.acc_scale + c), bias, mult,
                                                            _mm256_set1_ps(static_cast<float>(rq.out_zero)),
                                                            _mm256_set1_ps(static_cast<float>(d.lo)),
                                                            _mm256_set1_ps(static_cast<float>(d.hi)))
                                   : detail::requant_x8(s, bias, mult, zero, lo_z, hi_z);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(yp + c), q);
  }
}

void dw_pixel_avx2(const DwArgs& d, const uint8_t* const* ptr, uint8_t* yp) {
  const int64_t c = d.p->c_out;
  int64_t c0 = 0;
  for (; c0 + 32 <= c; c0 += 32) dw_chunk_avx2<4>(d, ptr, c0, yp);
  for (; c0 + 8 <= c; c0 += 8) dw_chunk_avx2<1>(d, ptr, c0, yp);
  if (c0 < c) dw_pixel_scalar(d, ptr, c0, c, yp);
}
#endif

#if AOTC_KERNELS_NEON
// NQ * 16 channels from c0 of one output pixel with NEON; the first `cols` of them valid
// (fewer than NQ * 16: read through copies, the input no further).
template <int NQ>
void dw_chunk_neon(const DwArgs& d, const uint8_t* const* ptr, int64_t c0, int64_t cols, uint8_t* yp) {
  const bool partial = cols < 16 * NQ;
  int32x4_t acc[4 * NQ];
  for (int v = 0; v < 4 * NQ; ++v) acc[v] = vdupq_n_s32(0);
  uint8_t tmp[16 * NQ] = {};
  for (int64_t t = 0; t < d.taps; ++t) {
    const uint8_t* xp = ptr[t] + c0;
    if (partial) {
      std::memcpy(tmp, xp, static_cast<size_t>(cols));
      xp = tmp;
    }
    // The weights: c64 covers whole chunks, zero past c_out. (The loop unrolled: the
    // accumulators stay in registers.)
    const int16_t* wt = d.w16 + t * d.c64 + c0;
#pragma GCC unroll 2
    for (int q = 0; q < NQ; ++q) {
      const uint8x16_t a = vld1q_u8(xp + 16 * q);
      const int16x8_t al = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(a)));
      const int16x8_t ah = vreinterpretq_s16_u16(vmovl_high_u8(a));
      const int16x8_t wl = vld1q_s16(wt + 16 * q), wh = vld1q_s16(wt + 16 * q + 8);
      acc[4 * q] = vmlal_s16(acc[4 * q], vget_low_s16(al), vget_low_s16(wl));
      acc[4 * q + 1] = vmlal_high_s16(acc[4 * q + 1], al, wl);
      acc[4 * q + 2] = vmlal_s16(acc[4 * q + 2], vget_low_s16(ah), vget_low_s16(wh));
      acc[4 * q + 3] = vmlal_high_s16(acc[4 * q + 3], ah, wh);
    }
  }
  const QRequant& rq = *d.rq;
  const int32_t* off = rq.acc_offset + c0;
  const float* bias = rq.bias_over_scale + c0;
  const float* mult = rq.multiplier + c0;
  const float* scale = rq.acc_scale ? rq.acc_scale + c0 : nullptr;
  int32_t off_t[16 * NQ];
  float bias_t[16 * NQ], mult_t[16 * NQ], scale_t[16 * NQ];
  if (partial) {  // the per-channel arrays end at c_out
    for (int64_t i = 0; i < 16 * NQ; ++i) {
      off_t[i] = i < cols ? off[i] : 0;
      bias_t[i] = i < cols ? bias[i] : 0.0f;
      mult_t[i] = i < cols ? mult[i] : 0.0f;
      scale_t[i] = i < cols && scale ? scale[i] : 0.0f;
    }
    off = off_t;
    bias = bias_t;
    mult = mult_t;
    if (scale) scale = scale_t;
  }
  const int32x4_t lo = vdupq_n_s32(d.lo), hi = vdupq_n_s32(d.hi);
  const float32x4_t zero_f = vdupq_n_f32(static_cast<float>(rq.out_zero));
  const int32x4_t zero = vdupq_n_s32(rq.out_zero), lo_z = vdupq_n_s32(d.lo - rq.out_zero),
                  hi_z = vdupq_n_s32(d.hi - rq.out_zero);
  for (int q = 0; q < NQ; ++q) {
    int32x4_t r[4];
    for (int v = 0; v < 4; ++v) {
      const int64_t i = 16 * q + 4 * v;
      const int32x4_t s = vaddq_s32(acc[4 * q + v], vld1q_s32(off + i));
      r[v] = scale ? detail::requant_x86_x4(s, vld1q_f32(scale + i), vld1q_f32(bias + i), vld1q_f32(mult + i),
                                            zero_f, lo, hi)
                   : detail::requant_x4(s, vld1q_f32(bias + i), vld1q_f32(mult + i), zero, lo_z, hi_z);
    }
    if (cols > 16 * q)
      detail::store_bytes16(yp + c0 + 16 * q, detail::pack_u8x16(r[0], r[1], r[2], r[3]), cols - 16 * q);
  }
}

void dw_pixel_neon(const DwArgs& d, const uint8_t* const* ptr, uint8_t* yp) {
  const int64_t c = d.p->c_out;
  int64_t c0 = 0;
  for (; c0 + 32 <= c; c0 += 32) dw_chunk_neon<2>(d, ptr, c0, 32, yp);
  for (; c0 < c; c0 += 16) dw_chunk_neon<1>(d, ptr, c0, min_i64(16, c - c0), yp);
}
#endif

constexpr int64_t kFallbackBytes = 32768;

void depthwise(ThreadPool& pool, const QConv2dParams& p, const uint8_t* x, const int8_t* w_packed,
               const QRequant& rq, uint8_t* y, bool use_pool_scratch) {
  const int64_t taps = p.kernel_h * p.kernel_w, t4 = qdepthwise::tap_groups(taps);
  const int64_t c64 = qgemm::round_up(p.c_out, qdepthwise::kBlock);
#if AOTC_KERNELS_AVX2
  const bool vnni = detail::use_avx512_vnni();
#else
  const bool vnni = false;
#endif
  const bool packed4 = vnni && rq.w_zero == nullptr;  // the 4-tap form, on the packed weights
  const int64_t rows = p.n * p.h_out;
  const double macs = static_cast<double>(rows) * static_cast<double>(p.w_out * p.c_out * taps);
  auto body = [&](int64_t r0, int64_t r1, int thread) {
    alignas(64) uint8_t fallback[kFallbackBytes];
    uint8_t* scratch = use_pool_scratch ? pool.thread_scratch(thread) : fallback;
    // The parts as qconv2d_thread_scratch_bytes counts them.
    uint8_t* zrow = scratch;
    auto** ptr = reinterpret_cast<const uint8_t**>(scratch + c64);
    auto* tap_off = reinterpret_cast<int64_t*>(scratch + c64 + t4 * 4 * 8);
    auto* off_p = reinterpret_cast<int32_t*>(scratch + c64 + qgemm::round_up(t4 * 4 * 8 * 2, 64));
    auto* bias_p = reinterpret_cast<float*>(off_p + c64);
    auto* mult_p = bias_p + c64;
    auto* scale_p = mult_p + c64;
    auto* w32 = reinterpret_cast<int32_t*>(scale_p + c64);
    auto* w16 = reinterpret_cast<int16_t*>(w32);
    std::memset(zrow, static_cast<uint8_t>(p.in_zero), static_cast<size_t>(c64));
    for (int64_t t = taps; t < t4 * 4; ++t) ptr[t] = zrow;  // taps past the last: zero weights
    for (int64_t i = 0; i < p.kernel_h; ++i)
      for (int64_t j = 0; j < p.kernel_w; ++j)
        tap_off[i * p.kernel_w + j] = (i * p.dilation_h * p.w_in + j * p.dilation_w) * p.c_in;
    if (packed4) {
      for (int64_t c = 0; c < c64; ++c) {
        const int64_t cc = c % 64, at = c - cc + 16 * (cc % 16 / 4) + 4 * (cc / 16) + cc % 4;
        off_p[at] = c < p.c_out ? rq.acc_offset[c] : 0;
        bias_p[at] = c < p.c_out ? rq.bias_over_scale[c] : 0.0f;
        mult_p[at] = c < p.c_out ? rq.multiplier[c] : 0.0f;
        scale_p[at] = c < p.c_out && rq.acc_scale ? rq.acc_scale[c] : 0.0f;
      }
    } else {
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t c = 0; c < c64; ++c) {
          const int32_t wv =
              c < p.c_out ? w_packed[qdepthwise::packed_offset(taps, c, t)] - (rq.w_zero ? rq.w_zero[c] : 0)
                          : 0;
          if (AOTC_KERNELS_NEON)
            w16[t * c64 + c] = static_cast<int16_t>(wv);
          else
            w32[t * c64 + c] = wv;
        }
    }
    const DwArgs d{&p,
                   &rq,
                   taps,
                   t4,
                   c64,
                   detail::requant_lo(rq),
                   detail::requant_hi(rq),
                   off_p,
                   bias_p,
                   mult_p,
                   packed4 && rq.acc_scale ? scale_p : nullptr,
                   w32,
                   w16};
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / p.h_out, oh = r % p.h_out;
      const int64_t ih0 = oh * p.stride_h - p.pad_h;
      const detail::TapRange rr = detail::valid_taps(ih0, p.dilation_h, p.kernel_h, p.h_in);
      const bool rows_in = rr.lo == 0 && rr.hi == p.kernel_h;
      uint8_t* yrow = y + r * p.w_out * p.c_out;
      for (int64_t ow = 0; ow < p.w_out; ++ow) {
        const int64_t iw0 = ow * p.stride_w - p.pad_w;
        const bool inside = rows_in && iw0 >= 0 && iw0 + (p.kernel_w - 1) * p.dilation_w < p.w_in;
        if (inside) {
          const uint8_t* base = x + ((n * p.h_in + ih0) * p.w_in + iw0) * p.c_in;
          for (int64_t t = 0; t < taps; ++t) ptr[t] = base + tap_off[t];
        } else {
          tap_pointers(p, x, zrow, n, oh, ow, ptr);
        }
        uint8_t* yp = yrow + ow * p.c_out;
#if AOTC_KERNELS_AVX2
        if (packed4)
          dw_pixel_vnni4(d, ptr, w_packed, yp);
        else if (vnni)
          dw_pixel_vnni32(d, ptr, yp);
        else
          dw_pixel_avx2(d, ptr, yp);
#elif AOTC_KERNELS_NEON
        dw_pixel_neon(d, ptr, yp);
#else
        dw_pixel_scalar(d, ptr, 0, p.c_out, yp);
#endif
      }
    }
  };
  if (pool.size() <= 1 || macs < 2.0 * detail::kGemmMinFlopsPerRange)
    body(0, rows, 0);
  else  // pieces of a few rows at least: each prepares its scratch
    pool.parallel_pieces(rows, detail::max_i64(1, rows / (4 * pool.size())), body);
}

// ---------------------------------------------------------------- without scratch
// Any layer, one output at a time in plain C++, reading the packed weights: only where
// neither the pool's thread scratch nor the stack block holds what the fast paths need.
void qconv2d_direct(const QConv2dParams& p, const uint8_t* x, const int8_t* w_packed, const QRequant& rq,
                    uint8_t* y) {
  const bool dw = qconv2d_is_depthwise(p);
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups, k = qconv2d_depth(p);
  const int32_t lo = detail::requant_lo(rq), hi = detail::requant_hi(rq);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oh = 0; oh < p.h_out; ++oh)
      for (int64_t ow = 0; ow < p.w_out; ++ow)
        for (int64_t co = 0; co < p.c_out; ++co) {
          const int64_t g = co / cog, j = co % cog;
          uint32_t s = 0, sum_a = 0;
          for (int64_t i = 0; i < p.kernel_h; ++i)
            for (int64_t jw = 0; jw < p.kernel_w; ++jw)
              for (int64_t ci = 0; ci < cig; ++ci) {
                const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
                const int64_t iw = ow * p.stride_w - p.pad_w + jw * p.dilation_w;
                const bool in = ih >= 0 && ih < p.h_in && iw >= 0 && iw < p.w_in;
                const int32_t a =
                    in ? x[((n * p.h_in + ih) * p.w_in + iw) * p.c_in + g * cig + ci] : p.in_zero;
                const int64_t t = i * p.kernel_w + jw;
                const int32_t wv = dw ? w_packed[qdepthwise::packed_offset(p.kernel_h * p.kernel_w, co, t)]
                                      : w_packed[qgemm::packed_offset(k, cog, g, j, t * cig + ci)];
                s += static_cast<uint32_t>(a * wv);
                sum_a += static_cast<uint32_t>(a);
              }
          s += static_cast<uint32_t>(rq.acc_offset[co]);
          if (rq.w_zero) s -= static_cast<uint32_t>(rq.w_zero[co]) * sum_a;
          y[((n * p.h_out + oh) * p.w_out + ow) * p.c_out + co] =
              detail::requant_channel(rq, co, static_cast<int32_t>(s), lo, hi);
        }
}

}  // namespace

void qconv2d_u8(ThreadPool& pool, const QConv2dParams& p, const uint8_t* x, const int8_t* w_packed,
                const QRequant& rq, uint8_t* y) {
  if (p.n <= 0 || p.c_out <= 0 || p.h_out <= 0 || p.w_out <= 0 || p.groups <= 0) return;
  if (qconv2d_is_depthwise(p)) {
    const int64_t need = qconv2d_thread_scratch_bytes(p);
    const bool pool_scratch =
        pool.thread_scratch(0) != nullptr && static_cast<int64_t>(pool.thread_scratch_bytes()) >= need;
    if (pool_scratch || need <= kFallbackBytes)
      depthwise(pool, p, x, w_packed, rq, y, pool_scratch);
    else
      qconv2d_direct(p, x, w_packed, rq, y);
    return;
  }
  Gather gather{&p, x};
  detail::QGemmDesc d;
  d.m = p.n * p.h_out * p.w_out;
  d.n = p.c_out / p.groups;
  d.k = qconv2d_depth(p);
  d.groups = p.groups;
  if (qconv2d_is_pointwise(p)) {
    d.a = x;
    d.lda = p.c_in;
    d.a_group = p.c_in / p.groups;
  } else {
    d.fill = gather_rows;
    d.fill_ctx = &gather;
  }
  d.w = w_packed;
  d.rq = &rq;
  d.y = y;
  d.ldy = p.c_out;
  if (detail::qgemm_fits(pool, d))
    detail::qgemm_u8(pool, d);
  else
    qconv2d_direct(p, x, w_packed, rq, y);
}

}  // namespace aotc::rt
