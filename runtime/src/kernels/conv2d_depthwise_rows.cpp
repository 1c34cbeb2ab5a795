// conv2d_depthwise_rows.cpp - depthwise convolution of narrow planes on AVX-512, straight
// from NCHW: one vector holds a whole output row of one channel (at most 16 columns: a ymm
// up to 8, a zmm up to 16), and a kernel tap (i, j) adds weight (i, j) times input row
// oh * stride_h + i * dilation_h - pad_h, its columns ow * stride_w + j * dilation_w - pad_w
// picked out of the row (at most 32 columns, in two registers) by one masked two-source
// permute. Columns that fall in the padding are zeroed by the permute's mask; rows that do
// are skipped. Any stride, dilation and padding, no buffer, no transpose.
//
// Why: the 8-channel kernel (conv2d_depthwise_c8.cpp) interleaves 8 planes into lanes and
// transposes its results back; on 14 x 14 and 7 x 7 planes that bookkeeping outweighs the
// 9 FMAs a position, and this kernel, which has none, takes less time on those planes
// (bench/results_cpu.md). Tried and slower: a masked unaligned load per tap instead of the
// permute, planes copied into zero-padded rows read by plain unaligned loads (the loads
// cross cache lines), valignd rotations for stride-1 shifts of 1-3, output rows in pairs
// sharing each input row's permutes (the branches and spills ate the gain).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt::detail {

bool conv2d_depthwise_rows_applies(const Conv2dParams& p) {
  return use_avx512() && conv2d_depthwise_rows_fits(p);
}

#if AOTC_KERNELS_AVX2
namespace {

constexpr int64_t kMaxKernelW = 16;

// The input columns tap column j reads for output columns 0..15, and which of those are
// output columns (ow < w_out) inside the image (0 <= column < w_in).
struct TapColumns {
  alignas(64) int32_t index[kMaxKernelW][16];
  uint16_t valid[kMaxKernelW];
  // Output column ow reads input column ow for every ow < w_out (at stride 1, the tap with
  // j * dilation_w == pad_w: the middle one of a "same" padding): the row's first register
  // as it is, no permute. Its lanes past w_out hold other columns, but those lanes are never
  // stored.
  bool identity[kMaxKernelW];
};

TapColumns tap_columns(const Conv2dParams& p) {
  TapColumns t{};
  for (int64_t j = 0; j < p.kernel_w; ++j) {
    uint32_t valid = 0;
    for (int64_t ow = 0; ow < 16; ++ow) {
      const int64_t col = ow * p.stride_w + j * p.dilation_w - p.pad_w;
      const bool in = ow < p.w_out && col >= 0 && col < p.w_in;
      t.index[j][ow] = in ? static_cast<int32_t>(col) : 0;
      if (in) valid |= 1u << ow;
    }
    t.valid[j] = static_cast<uint16_t>(valid);
    t.identity[j] = p.stride_w == 1 && j * p.dilation_w == p.pad_w && p.w_out <= p.w_in;
  }
  return t;
}

// The vector forms: a zmm holds up to 16 columns (the input row in two), a ymm up to 8 (the
// input row, at most 16 columns, in two): a zmm would do twice the work for the same 8
// lanes on Zen 4, which runs a zmm FMA as two ymm halves.
struct Zmm {
  using V = __m512;
  using I = __m512i;
  using M = __mmask16;
  static constexpr int kLanes = 16;
  __attribute__((target("avx512f"))) static I load_index(const int32_t* p) { return _mm512_load_si512(p); }
  __attribute__((target("avx512f"))) static V load(M m, const float* p) {
    return _mm512_maskz_loadu_ps(m, p);
  }
  __attribute__((target("avx512f"))) static V set1(float v) { return _mm512_set1_ps(v); }
  __attribute__((target("avx512f"))) static V pick(M m, V a, I i, V b) {
    return _mm512_maskz_permutex2var_ps(m, a, i, b);
  }
  __attribute__((target("avx512f"))) static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  __attribute__((target("avx512f"))) static V add(V a, V b) { return _mm512_add_ps(a, b); }
  // max/min return their second operand when either is NaN: a NaN result stays NaN.
  // (The zero-masking forms: GCC 12 warns that _mm512_max_ps's pass-through is unset.)
  __attribute__((target("avx512f"))) static V clamp(V v, V lo, V hi) {
    return _mm512_maskz_min_ps(0xffff, hi, _mm512_maskz_max_ps(0xffff, lo, v));
  }
  __attribute__((target("avx512f"))) static void store(float* p, M m, V v) { _mm512_mask_storeu_ps(p, m, v); }
};
struct Ymm {
  using V = __m256;
  using I = __m256i;
  using M = __mmask8;
  static constexpr int kLanes = 8;
  __attribute__((target("avx512f,avx512vl"))) static I load_index(const int32_t* p) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
  }
  __attribute__((target("avx512f,avx512vl"))) static V load(M m, const float* p) {
    return _mm256_maskz_loadu_ps(m, p);
  }
  __attribute__((target("avx512f,avx512vl"))) static V set1(float v) { return _mm256_set1_ps(v); }
  __attribute__((target("avx512f,avx512vl"))) static V pick(M m, V a, I i, V b) {
    return _mm256_maskz_permutex2var_ps(m, a, i, b);
  }
  __attribute__((target("avx512f,avx512vl"))) static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  __attribute__((target("avx512f,avx512vl"))) static V add(V a, V b) { return _mm256_add_ps(a, b); }
  __attribute__((target("avx512f,avx512vl"))) static V clamp(V v, V lo, V hi) {
    return _mm256_maskz_min_ps(0xff, hi, _mm256_maskz_max_ps(0xff, lo, v));
  }
  __attribute__((target("avx512f,avx512vl"))) static void store(float* p, M m, V v) {
    _mm256_mask_storeu_ps(p, m, v);
  }
};

template <class T>
typename T::M first_lanes(int64_t n) {
  return static_cast<typename T::M>(n >= T::kLanes ? (1u << T::kLanes) - 1u : n <= 0 ? 0u : (1u << n) - 1u);
}

// Kernel row i of output row oh of G planes from q into acc: the input row's two registers,
// then each tap column's view of it (the row itself for an identity tap, else a permute).
// wp[g]: plane q + g's weights (the G planes may span two images).
template <class T, int G>
__attribute__((target("avx512f,avx512vl"), always_inline)) inline void kernel_row(
    const Conv2dParams& p, const TapColumns& t, const typename T::I* index, const float* x,
    const float* const (&wp)[G], int64_t q, int64_t oh, int64_t i, typename T::V (&acc)[G]) {
  using V = typename T::V;
  const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
  if (ih < 0 || ih >= p.h_in) return;
  const int64_t hw_in = p.h_in * p.w_in;
  const typename T::M lo_mask = first_lanes<T>(p.w_in), hi_mask = first_lanes<T>(p.w_in - T::kLanes);
  V r0[G], r1[G];
  for (int g = 0; g < G; ++g) {
    const float* row = x + (q + g) * hw_in + ih * p.w_in;
    r0[g] = T::load(lo_mask, row);
    // The second register only where the row reaches it: row + kLanes may lie past x's end.
    r1[g] = p.w_in > T::kLanes ? T::load(hi_mask, row + T::kLanes) : T::set1(0.0f);
  }
  for (int64_t j = 0; j < p.kernel_w; ++j) {
    const int64_t tap = i * p.kernel_w + j;
    if (t.identity[j]) {
      for (int g = 0; g < G; ++g) acc[g] = T::fma(r0[g], T::set1(wp[g][tap]), acc[g]);
      continue;
    }
    const typename T::M valid = static_cast<typename T::M>(t.valid[j]);
    for (int g = 0; g < G; ++g)
      acc[g] = T::fma(T::pick(valid, r0[g], index[j], r1[g]), T::set1(wp[g][tap]), acc[g]);
  }
}

// G planes from q (image * channels + channel), an output row at a time. The taps of even
// and odd kernel rows go to two sums, added at the end: with G planes that is 2G
// independent FMA chains, which hide the FMA latency (one chain is latency-bound).
template <class T, int G>
__attribute__((target("avx512f,avx512vl"))) inline void plane_group(const Conv2dParams& p,
                                                                    const TapColumns& t,
                                                                    const typename T::I* index,
                                                                    const float* x, const float* w,
                                                                    const float* bias, float* y, int64_t q) {
  using V = typename T::V;
  const int64_t hw_out = p.h_out * p.w_out, taps = p.kernel_h * p.kernel_w;
  const typename T::M out_mask = first_lanes<T>(p.w_out);
  const bool clamp = has_clamp(p.clamp_lo, p.clamp_hi);
  const V lo = T::set1(p.clamp_lo), hi = T::set1(p.clamp_hi);
  const float* wp[G];
  V b[G];
  for (int g = 0; g < G; ++g) {
    const int64_t ch = (q + g) % p.c_in;
    wp[g] = w + ch * taps;
    b[g] = T::set1(p.has_bias ? bias[ch] : 0.0f);
  }
  for (int64_t oh = 0; oh < p.h_out; ++oh) {
    V even[G], odd[G];
    for (int g = 0; g < G; ++g) {
      even[g] = b[g];
      odd[g] = T::set1(0.0f);
    }
    for (int64_t i = 0; i < p.kernel_h; i += 2) {
      kernel_row<T, G>(p, t, index, x, wp, q, oh, i, even);
      if (i + 1 < p.kernel_h) kernel_row<T, G>(p, t, index, x, wp, q, oh, i + 1, odd);
    }
    for (int g = 0; g < G; ++g) {
      V a = T::add(even[g], odd[g]);
      if (clamp) a = T::clamp(a, lo, hi);
      T::store(y + (q + g) * hw_out + oh * p.w_out, out_mask, a);
    }
  }
}

// Planes [q0, q1), G at a time, then one at a time.
template <class T, int G>
__attribute__((target("avx512f,avx512vl"))) void planes(const Conv2dParams& p, const TapColumns& t,
                                                        const float* x, const float* w, const float* bias,
                                                        float* y, int64_t q0, int64_t q1) {
  int64_t q = q0;
  typename T::I index[kMaxKernelW];
  for (int64_t j = 0; j < p.kernel_w; ++j) index[j] = T::load_index(t.index[j]);
  for (; q + G <= q1; q += G) plane_group<T, G>(p, t, index, x, w, bias, y, q);
  for (; q < q1; ++q) plane_group<T, 1>(p, t, index, x, w, bias, y, q);
}

}  // namespace
#endif

void conv2d_depthwise_rows(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w,
                           const float* bias, float* y) {
#if AOTC_KERNELS_AVX2
  const TapColumns t = tap_columns(p);
  const bool narrow = p.w_out <= 8 && p.w_in <= 16;
  const int64_t plane_flops = 2 * p.h_out * p.w_out * p.kernel_h * p.kernel_w;
  const auto min_flops = static_cast<int64_t>(kDepthwiseMinFlopsPerRange);
  pool.parallel_for(p.n * p.c_in, min_chunk_for(plane_flops, min_flops), [&](int64_t q0, int64_t q1) {
    // 8 ymm planes keep 32 row registers and sums live, so GCC spills some; 4 at a time
    // were still slower (960 x 7 x 7: 1.13x, 1152 x 7 x 7 5x5: 1.28x, 2 threads).
    if (narrow)
      planes<Ymm, 8>(p, t, x, w, bias, y, q0, q1);
    else
      planes<Zmm, 4>(p, t, x, w, bias, y, q0, q1);
  });
#else
  (void)pool, (void)p, (void)x, (void)w, (void)bias, (void)y;  // conv2d_depthwise_rows_applies is false
#endif
}

}  // namespace aotc::rt::detail
