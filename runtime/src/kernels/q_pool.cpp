// q_pool.cpp - pooling on quint8: max pooling (exact; padding never wins, an empty window
// gives 0, the least quint8) and adaptive average pooling with torch's two roundings (see
// kernels/quantized.h), each on NHWC (vectorised along the channels) or NCHW planes.
#include <aotc/rt/thread_pool.h>

#include "qgemm.h"

namespace aotc::rt {
namespace {

using detail::TapRange;
using detail::valid_taps;

// ---------------------------------------------------------------- max pooling
void max_pool_nhwc(const Pool2dParams& p, const uint8_t* x, uint8_t* y, int64_t r0, int64_t r1) {
  const int64_t c = p.c;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / p.h_out, oh = r % p.h_out;
    const int64_t ih0 = oh * p.stride_h - p.pad_h;
    const TapRange rows = valid_taps(ih0, p.dilation_h, p.kernel_h, p.h_in);
    for (int64_t ow = 0; ow < p.w_out; ++ow) {
      const int64_t iw0 = ow * p.stride_w - p.pad_w;
      const TapRange cols = valid_taps(iw0, p.dilation_w, p.kernel_w, p.w_in);
      uint8_t* yp = y + (r * p.w_out + ow) * c;
      auto at = [&](int64_t i, int64_t j) {
        return x + ((n * p.h_in + ih0 + i * p.dilation_h) * p.w_in + iw0 + j * p.dilation_w) * c;
      };
      int64_t c0 = 0;
#if AOTC_KERNELS_AVX2
      for (; c0 + 32 <= c; c0 += 32) {
        __m256i m = _mm256_setzero_si256();
        for (int64_t i = rows.lo; i < rows.hi; ++i)
          for (int64_t j = cols.lo; j < cols.hi; ++j)
            m = _mm256_max_epu8(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at(i, j) + c0)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(yp + c0), m);
      }
      for (; c0 + 16 <= c; c0 += 16) {
        __m128i m = _mm_setzero_si128();
        for (int64_t i = rows.lo; i < rows.hi; ++i)
          for (int64_t j = cols.lo; j < cols.hi; ++j)
            m = _mm_max_epu8(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(at(i, j) + c0)));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(yp + c0), m);
      }
#endif
      for (; c0 < c; ++c0) {
        uint8_t m = 0;
        for (int64_t i = rows.lo; i < rows.hi; ++i)
          for (int64_t j = cols.lo; j < cols.hi; ++j) {
            const uint8_t v = at(i, j)[c0];
            m = v > m ? v : m;
          }
        yp[c0] = m;
      }
    }
  }
}

// acc[i] = max(acc[i], row[i]) for i < count.
void max_into(uint8_t* acc, const uint8_t* row, int64_t count) {
  int64_t i = 0;
#if AOTC_KERNELS_AVX2
  for (; i + 32 <= count; i += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + i), _mm256_max_epu8(a, b));
  }
#endif
  for (; i < count; ++i) acc[i] = row[i] > acc[i] ? row[i] : acc[i];
}

// NCHW planes [q0, q1): per output row the maximum over the window's input rows first
// (contiguous, vectorised), then over the window's columns of that.
constexpr int64_t kRowBytes = 4096;
void max_pool_nchw(const Pool2dParams& p, const uint8_t* x, uint8_t* y, int64_t q0, int64_t q1) {
  alignas(32) uint8_t rowmax[kRowBytes];
  const bool separable = p.w_in <= kRowBytes;
  for (int64_t q = q0; q < q1; ++q) {
    const uint8_t* xp = x + q * p.h_in * p.w_in;
    uint8_t* yp = y + q * p.h_out * p.w_out;
    for (int64_t oh = 0; oh < p.h_out; ++oh) {
      const int64_t ih0 = oh * p.stride_h - p.pad_h;
      const TapRange rows = valid_taps(ih0, p.dilation_h, p.kernel_h, p.h_in);
      uint8_t* yrow = yp + oh * p.w_out;
      for (int64_t ow = 0; ow < p.w_out; ++ow) yrow[ow] = 0;
      if (separable) {
        for (int64_t i = 0; i < p.w_in; ++i) rowmax[i] = 0;
        for (int64_t i = rows.lo; i < rows.hi; ++i)
          max_into(rowmax, xp + (ih0 + i * p.dilation_h) * p.w_in, p.w_in);
      }
      for (int64_t j = 0; j < p.kernel_w; ++j) {
        const int64_t off = j * p.dilation_w - p.pad_w;
        const TapRange outs = detail::valid_outputs(off, p.stride_w, p.w_out, p.w_in);
        if (separable) {
          if (p.stride_w == 1) {
            max_into(yrow + outs.lo, rowmax + outs.lo + off, outs.hi - outs.lo);
          } else {
            for (int64_t ow = outs.lo; ow < outs.hi; ++ow) {
              const uint8_t v = rowmax[ow * p.stride_w + off];
              yrow[ow] = v > yrow[ow] ? v : yrow[ow];
            }
          }
          continue;
        }
        for (int64_t i = rows.lo; i < rows.hi; ++i) {
          const uint8_t* xrow = xp + (ih0 + i * p.dilation_h) * p.w_in;
          for (int64_t ow = outs.lo; ow < outs.hi; ++ow) {
            const uint8_t v = xrow[ow * p.stride_w + off];
            yrow[ow] = v > yrow[ow] ? v : yrow[ow];
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------- adaptive average pooling
inline int64_t bin_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
inline int64_t bin_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

// y = clamp(zero + nearbyint(float(sum - size * zero) * inv), 0, 255), as torch's NHWC kernel.
inline uint8_t avg_nhwc_value(int32_t sum, int32_t size, float inv, int32_t zero) {
  const int64_t v =
      static_cast<int64_t>(detail::cvt_nearest_i32(static_cast<float>(sum - size * zero) * inv)) + zero;
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

struct AvgArgs {
  int64_t c, h_in, w_in, h_out, w_out;
  int32_t zero;
};

void avg_pool_nhwc(const AvgArgs& a, const uint8_t* x, uint8_t* y, int64_t r0, int64_t r1) {
  const int64_t c = a.c;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / a.h_out, oh = r % a.h_out;
    const int64_t ih0 = bin_start(oh, a.h_in, a.h_out), ih1 = bin_end(oh, a.h_in, a.h_out);
    for (int64_t ow = 0; ow < a.w_out; ++ow) {
      const int64_t iw0 = bin_start(ow, a.w_in, a.w_out), iw1 = bin_end(ow, a.w_in, a.w_out);
      const auto size = static_cast<int32_t>((ih1 - ih0) * (iw1 - iw0));
      const float inv = 1.0f / static_cast<float>(size);
      uint8_t* yp = y + (r * a.w_out + ow) * c;
      auto at = [&](int64_t ih, int64_t iw) { return x + ((n * a.h_in + ih) * a.w_in + iw) * c; };
      int64_t c0 = 0;
#if AOTC_KERNELS_AVX2
      const __m256i zero = _mm256_set1_epi32(a.zero), base = _mm256_set1_epi32(size * a.zero);
      const __m256 vinv = _mm256_set1_ps(inv);
      const __m256i lo = _mm256_setzero_si256(), hi = _mm256_set1_epi32(255);
      auto finish = [&](__m256i sum, int64_t at_c) {
        const __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sum, base)), vinv);
        const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), zero);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(yp + at_c),
                         detail::pack_u8x8(_mm256_min_epi32(_mm256_max_epi32(q, lo), hi)));
      };
      for (; c0 + 32 <= c; c0 += 32) {
        __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
        for (int64_t ih = ih0; ih < ih1; ++ih)
          for (int64_t iw = iw0; iw < iw1; ++iw) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at(ih, iw) + c0));
            const __m128i v0 = _mm256_castsi256_si128(v), v1 = _mm256_extracti128_si256(v, 1);
            s0 = _mm256_add_epi32(s0, _mm256_cvtepu8_epi32(v0));
            s1 = _mm256_add_epi32(s1, _mm256_cvtepu8_epi32(_mm_srli_si128(v0, 8)));
            s2 = _mm256_add_epi32(s2, _mm256_cvtepu8_epi32(v1));
            s3 = _mm256_add_epi32(s3, _mm256_cvtepu8_epi32(_mm_srli_si128(v1, 8)));
          }
        finish(s0, c0);
        finish(s1, c0 + 8);
        finish(s2, c0 + 16);
        finish(s3, c0 + 24);
      }
      for (; c0 + 8 <= c; c0 += 8) {
        __m256i s = _mm256_setzero_si256();
        for (int64_t ih = ih0; ih < ih1; ++ih)
          for (int64_t iw = iw0; iw < iw1; ++iw)
            s = _mm256_add_epi32(
                s, _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(at(ih, iw) + c0))));
        finish(s, c0);
      }
#endif
      for (; c0 < c; ++c0) {
        int32_t s = 0;
        for (int64_t ih = ih0; ih < ih1; ++ih)
          for (int64_t iw = iw0; iw < iw1; ++iw) s += at(ih, iw)[c0];
        yp[c0] = avg_nhwc_value(s, size, inv, a.zero);
      }
    }
  }
}

// NCHW planes [q0, q1): y = clamp(nearbyint(float(sum) * inv), 0, 255), as torch's NCHW kernel.
void avg_pool_nchw(const AvgArgs& a, const uint8_t* x, uint8_t* y, int64_t q0, int64_t q1) {
  for (int64_t q = q0; q < q1; ++q) {
    const uint8_t* xp = x + q * a.h_in * a.w_in;
    uint8_t* yp = y + q * a.h_out * a.w_out;
    for (int64_t oh = 0; oh < a.h_out; ++oh) {
      const int64_t ih0 = bin_start(oh, a.h_in, a.h_out), ih1 = bin_end(oh, a.h_in, a.h_out);
      for (int64_t ow = 0; ow < a.w_out; ++ow) {
        const int64_t iw0 = bin_start(ow, a.w_in, a.w_out), iw1 = bin_end(ow, a.w_in, a.w_out);
        const auto size = static_cast<int32_t>((ih1 - ih0) * (iw1 - iw0));
        int32_t s = 0;
        for (int64_t ih = ih0; ih < ih1; ++ih) {
          const uint8_t* xr = xp + ih * a.w_in;
          for (int64_t iw = iw0; iw < iw1; ++iw) s += xr[iw];
        }
        const int32_t v = detail::cvt_nearest_i32(static_cast<float>(s) * (1.0f / static_cast<float>(size)));
        yp[oh * a.w_out + ow] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
      }
    }
  }
}

}  // namespace

void max_pool2d_u8(ThreadPool& pool, const Pool2dParams& p, bool channels_last, const uint8_t* x,
                   uint8_t* y) {
  if (p.n <= 0 || p.c <= 0 || p.h_out <= 0 || p.w_out <= 0) return;
  const int64_t taps = p.kernel_h * p.kernel_w;
  if (channels_last) {
    pool.parallel_for(p.n * p.h_out, detail::min_chunk_for(p.w_out * p.c * taps),
                      [&](int64_t r0, int64_t r1) { max_pool_nhwc(p, x, y, r0, r1); });
  } else {
    pool.parallel_for(p.n * p.c, detail::min_chunk_for(p.h_out * p.w_out * taps),
                      [&](int64_t q0, int64_t q1) { max_pool_nchw(p, x, y, q0, q1); });
  }
}

void adaptive_avg_pool2d_u8(ThreadPool& pool, int64_t n, int64_t c, int64_t h_in, int64_t w_in, int64_t h_out,
                            int64_t w_out, bool channels_last, int32_t zero, const uint8_t* x, uint8_t* y) {
  if (n <= 0 || c <= 0 || h_out <= 0 || w_out <= 0) return;
  const AvgArgs a{c, h_in, w_in, h_out, w_out, zero};
  // Each output reads about (h_in / h_out) x (w_in / w_out) inputs.
  const int64_t per_out = detail::max_i64(1, (h_in / h_out + 1) * (w_in / w_out + 1));
  if (channels_last) {
    pool.parallel_for(n * h_out, detail::min_chunk_for(w_out * c * per_out),
                      [&](int64_t r0, int64_t r1) { avg_pool_nhwc(a, x, y, r0, r1); });
  } else {
    pool.parallel_for(n * c, detail::min_chunk_for(h_out * w_out * per_out),
                      [&](int64_t q0, int64_t q1) { avg_pool_nchw(a, x, y, q0, q1); });
  }
}

}  // namespace aotc::rt
