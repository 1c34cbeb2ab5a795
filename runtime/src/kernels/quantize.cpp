// quantize.cpp - float <-> quint8 per tensor (quantize_u8, dequantize_u8, and
// quantize_to_nhwc_u8 for a model's NCHW input going into a convolution), with torch's
// rounding and clipping (qgemm.h, quantize_scaled), 8 lanes at a time on AVX2.
#include <aotc/rt/thread_pool.h>

#include <array>

#include "qgemm.h"

namespace aotc::rt {

void quantize_u8(ThreadPool& pool, int64_t count, float inv_scale, int32_t zero, const float* x, uint8_t* q) {
  if (count <= 0) return;
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
#if AOTC_KERNELS_AVX2
    const __m256 inv = _mm256_set1_ps(inv_scale);
    const __m256i z = _mm256_set1_epi32(zero);
    for (; i + 8 <= i1; i += 8)
      _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i),
                       detail::quantize_x8(_mm256_mul_ps(_mm256_loadu_ps(x + i), inv), z));
#endif
    for (; i < i1; ++i) q[i] = detail::quantize_scaled(x[i] * inv_scale, zero);
  });
}

namespace {

constexpr int64_t kPixelBlock = 64;      // pixels quantized per plane before they are interleaved
constexpr int64_t kMaxBlockPlanes = 16;  // more channels: quantized straight to their places

#if AOTC_KERNELS_AVX2
// Three planes of 16 bytes (channels 0, 1, 2 of 16 pixels) interleaved into 48 bytes.
void interleave3(const uint8_t* c0, const uint8_t* c1, const uint8_t* c2, uint8_t* out) {
  alignas(16) static const auto masks = [] {
    std::array<std::array<std::array<uint8_t, 16>, 3>, 3> m{};  // [output vector][channel][byte]
    for (int v = 0; v < 3; ++v)
      for (int k = 0; k < 16; ++k)
        for (int ch = 0; ch < 3; ++ch) {
          const int g = 16 * v + k;
          m[v][ch][k] = g % 3 == ch ? static_cast<uint8_t>(g / 3) : 0x80;
        }
    return m;
  }();
  const __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c0));
  const __m128i g = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c1));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c2));
  for (int v = 0; v < 3; ++v) {
    auto mask = [&](int ch) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(masks[v][ch].data()));
    };
    const __m128i o = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, mask(0)), _mm_shuffle_epi8(g, mask(1))),
                                   _mm_shuffle_epi8(b, mask(2)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * v), o);
  }
}
#endif

// count floats quantized into q (contiguous).
void quantize_run(const float* x, int64_t count, float inv_scale, int32_t zero, uint8_t* q) {
  int64_t i = 0;
#if AOTC_KERNELS_AVX2
  const __m256 inv = _mm256_set1_ps(inv_scale);
  const __m256i z = _mm256_set1_epi32(zero);
  for (; i + 8 <= count; i += 8)
    _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i),
                     detail::quantize_x8(_mm256_mul_ps(_mm256_loadu_ps(x + i), inv), z));
#endif
  for (; i < count; ++i) q[i] = detail::quantize_scaled(x[i] * inv_scale, zero);
}

}  // namespace

void quantize_to_nhwc_u8(ThreadPool& pool, int64_t n, int64_t c, int64_t hw, float inv_scale, int32_t zero,
                         const float* x, uint8_t* q) {
  if (n <= 0 || c <= 0 || hw <= 0) return;
  const int64_t blocks = detail::ceil_div(hw, kPixelBlock);
  pool.parallel_for(n * blocks, detail::min_chunk_for(kPixelBlock * c), [&](int64_t b0, int64_t b1) {
    alignas(64) uint8_t planes[kMaxBlockPlanes][kPixelBlock];
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t image = b / blocks, p0 = b % blocks * kPixelBlock,
                    count = detail::min_i64(kPixelBlock, hw - p0);
      const float* xb = x + image * c * hw + p0;
      uint8_t* qb = q + (image * hw + p0) * c;
      if (c > kMaxBlockPlanes) {
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t p = 0; p < count; ++p)
            qb[p * c + ch] = detail::quantize_scaled(xb[ch * hw + p] * inv_scale, zero);
        continue;
      }
      for (int64_t ch = 0; ch < c; ++ch) quantize_run(xb + ch * hw, count, inv_scale, zero, planes[ch]);
      int64_t p = 0;
#if AOTC_KERNELS_AVX2
      if (c == 3)
        for (; p + 16 <= count; p += 16) interleave3(planes[0] + p, planes[1] + p, planes[2] + p, qb + p * 3);
#endif
      for (; p < count; ++p)
        for (int64_t ch = 0; ch < c; ++ch) qb[p * c + ch] = planes[ch][p];
    }
  });
}

void dequantize_u8(ThreadPool& pool, int64_t count, float scale, int32_t zero, const uint8_t* q, float* x) {
  if (count <= 0) return;
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
#if AOTC_KERNELS_AVX2
    const __m256 s = _mm256_set1_ps(scale);
    const __m256i z = _mm256_set1_epi32(zero);
    for (; i + 8 <= i1; i += 8) {
      const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i)));
      _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, z)), s));
    }
#endif
    for (; i < i1; ++i) x[i] = static_cast<float>(static_cast<int32_t>(q[i]) - zero) * scale;
  });
}

}  // namespace aotc::rt
