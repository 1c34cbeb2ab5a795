// q_lookup.cpp - lookup_u8: y = table[x] on uint8, the element-wise ops of quantized
// tensors whose 256 results torch computed at compile time (hardswish, hardsigmoid, ...).
#include <aotc/rt/thread_pool.h>

#include "qgemm.h"

namespace aotc::rt {

#if AOTC_KERNELS_AVX2
namespace {

// 64 lookups at once: the table in four zmm registers, two vpermi2b picks by the low 7
// bits, the high bit choosing between them.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void lookup_avx512(const uint8_t* table,
                                                                          const uint8_t* x, uint8_t* y,
                                                                          int64_t begin, int64_t end) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = begin;
  for (; i < end; i += 64) {
    const __mmask64 m = end - i >= 64 ? ~__mmask64{0} : (__mmask64{1} << (end - i)) - 1;
    const __m512i v = _mm512_maskz_loadu_epi8(m, x + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);
    const __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);
    const __mmask64 high = _mm512_movepi8_mask(v);
    _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(high, lo, hi));
  }
}

bool cpu_has_avx512_vbmi() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (ebx & (1u << 30)) != 0 && (ecx & (1u << 1)) != 0;  // AVX512BW, AVX512VBMI
}

}  // namespace
#endif

void lookup_u8(ThreadPool& pool, int64_t count, const uint8_t* table, const uint8_t* x, uint8_t* y) {
  if (count <= 0) return;
#if AOTC_KERNELS_AVX2
  static const bool vbmi = detail::use_avx512() && cpu_has_avx512_vbmi();
#endif
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t i0, int64_t i1) {
#if AOTC_KERNELS_AVX2
    if (vbmi) return lookup_avx512(table, x, y, i0, i1);
#endif
    for (int64_t i = i0; i < i1; ++i) y[i] = table[x[i]];
  });
}

}  // namespace aotc::rt
