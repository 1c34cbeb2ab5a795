// attention_mma_16bit.cu - attention over more than 64 keys (vit_b_16's 197, BERT-base's 128)
// with both products on fp16 / bf16 tensor cores, for --precision fp16 and bf16, where
// torch's own 16-bit model and its flash attention take 16-bit products too. (--precision
// fp32 and tf32 keep attention_fused.cu's exact float32 kernel; at most 64 keys take
// attention_short_tf32.cu's.)
//
// attention_fused.cu's float32 kernel took 13.6 us of each vit_b_16 layer at fp16, the
// model's largest kernel (bench/results_gpu.md), bound by shared-memory loads and latency:
// every score is 64 FMAs on float4s read from shared memory. Here a block takes 16 x
// `groups` query rows of one (batch, head); its warps are groups x splits:
//   1. the block stages the head's keys and values (float32, cp.async) in shared memory, and
//      each warp meanwhile reads its 16 query rows into 16-bit A fragments;
//   2. the block converts the keys and values once into 16-bit rows, zero-padded to 64-key
//      chunks and to the kernel's head size D (64 or 128), 8 elements more per row, so
//      that ldmatrix's 8 rows of a matrix fall on distinct banks;
//   3. warp (group, split) takes the group's rows against chunks split, split + splits, ...:
//      S = Q K^T (mma.sync m16n8k16, K's fragments by ldmatrix.x4), scale, mask and causal
//      masking, and an online softmax in the accumulator registers (a row's keys are spread
//      over a quad: 2 shuffles), which rescales the row's earlier sums by
//      2^(old maximum - new maximum) when the maximum grows. The score accumulators are P's
//      A fragments as they stand, rounded to 16 bits, and O += P V takes V's fragments by
//      ldmatrix.x4.trans;
//   4. with one split, each warp writes out = O / sum; with more, the warps' maxima, sums
//      and O meet in shared memory (over the float32 staging) and the block's threads
//      combine them with the weights 2^(maximum_s - maximum) in split order.
// Q, K and V may also come in the 16-bit type itself (attention_mma_16bit_qkv: a projection
// whose output store_activations_16bit.cpp keeps 16-bit). Then step 1 copies the keys and
// values straight into the 16-bit rows and step 2 has nothing to do: half the bytes staged
// and no conversion pass, which were most of a block's time where the grid is a block per
// multiprocessor or less (batch 1); the parts of step 4 get a space of their own.
// It runs where its grid of 64-row blocks fills the GPU (encoders at batch 8 and more);
// smaller grids keep the float32 kernel, faster there. The other block shapes
// (AOTC_CUDA_ATTENTION_MMA) serve its checks and timings. A row whose every key is masked
// gets zeros, as torch's safe softmax and the other kernels give; an infinite or NaN score
// gives NaN, as in float32. The softmax, its sums and the combination are float32; Q, K, V
// and P are rounded to the 16-bit type to nearest. A tf32 kernel of this shape (operands
// rounded per fragment, scalar loads of V) was no faster than the float32 kernel
// (bench/results_gpu.md, "Tried and dropped").
#include <aotc/rt/cuda/attention_plan.h>
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/attention_staging.cuh>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace aotc::rt::cuda {
namespace {

constexpr int kShortKeys = 64;              // attention_short_tf32.cu's sequences
constexpr int kChunk = kAttentionMmaChunk;  // keys a pass: 8 score tiles of 8 keys
constexpr int kWarpRows = 16;               // an mma's rows
// Warps a block (groups x splits): at most 8, so that a thread may hold 255 registers (at
// 16 warps, D = 64 spilled at the 128 left).
constexpr int kMaxWarps = kAttentionMmaMaxWarps;
constexpr float kLog2e = 1.4426950408889634f;

// The 16-bit type's packing of two floats (the first in the low half) and its mma.
template <typename T>
struct Half16;
template <>
struct Half16<__half> {
  static __device__ __forceinline__ uint32_t pack(float a, float b) {
    const __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  // d += a b: a 16 x 16 A fragment, a 16 x 8 B fragment, float32 sums.
  static __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};
template <>
struct Half16<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t pack(float a, float b) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  static __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

// Four 8 x 8 matrices of 16-bit elements from shared memory: lanes 8 i .. 8 i + 7 give the
// row addresses of matrix i; lane 4 g + t receives elements (g, 2 t) and (g, 2 t + 1) of
// each, or with .trans (2 t, g) and (2 t + 1, g).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(row))));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(row))));
}

// dst (sp x ld16, 16-bit) = src (rows x src_ld float32), zero past rows and src_ld columns up
// to D: four elements a thread at a time.
template <typename T, int D>
__device__ __forceinline__ void convert_rows(const float* src, int src_ld, int rows, T* dst, int sp,
                                             int ld16) {
  constexpr int kQuads = D / 4;
  for (int i = static_cast<int>(threadIdx.x); i < sp * kQuads; i += static_cast<int>(blockDim.x)) {
    const int r = i / kQuads, c = 4 * (i % kQuads);
    float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (r < rows && c < src_ld) x = *reinterpret_cast<const float4*>(src + r * src_ld + c);
    *reinterpret_cast<uint2*>(dst + r * ld16 + c) =
        make_uint2(Half16<T>::pack(x.x, x.y), Half16<T>::pack(x.z, x.w));
  }
}

// dst (sp x ld16) = src (rows x cols 16-bit elements, row stride src_ld), zero past rows and
// cols up to D: 16 bytes a thread at a time, copied without waiting where vec
// (vector_rows_16bit) and the 8 columns are all the row's.
template <int D>
__device__ __forceinline__ void stage_rows_16bit(const uint16_t* src, int64_t src_ld, int rows, int cols,
                                                 bool vec, uint16_t* dst, int sp, int ld16) {
  constexpr int kUnits = D / 8;
  for (int i = static_cast<int>(threadIdx.x); i < sp * kUnits; i += static_cast<int>(blockDim.x)) {
    const int r = i / kUnits, c = 8 * (i % kUnits);
    uint16_t* const d = dst + r * ld16 + c;
    const uint16_t* const s = src + r * src_ld + c;
    if (r < rows && vec && c + 8 <= cols) {
      copy16_async(d, s);
      continue;
    }
    uint32_t x[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const uint32_t lo = r < rows && c + 2 * u < cols ? s[2 * u] : 0u;
      const uint32_t hi = r < rows && c + 2 * u + 1 < cols ? s[2 * u + 1] : 0u;
      x[u] = lo | hi << 16;
    }
    *reinterpret_cast<uint4*>(d) = make_uint4(x[0], x[1], x[2], x[3]);
  }
}

// kIn16: q, k and v hold the 16-bit type T, else float32.
template <typename T, int D, bool kIn16>
__global__ void __launch_bounds__(32 * kMaxWarps)
    attention_mma_kernel(AttentionParams p, AttentionMmaLayout l, bool vec_k, bool vec_v, bool pair_out,
                         const void* __restrict__ q, const void* __restrict__ k, const void* __restrict__ v,
                         const void* __restrict__ mask, void* __restrict__ out, AttentionOut out_type) {
  using In = std::conditional_t<kIn16, uint16_t, float>;
  extern __shared__ float4 shared4[];
  char* const smem = reinterpret_cast<char*>(shared4);
  float* const k32 = reinterpret_cast<float*>(smem);
  float* const v32 = k32 + l.v32_floats;
  T* const k16 = reinterpret_cast<T*>(smem + l.k16_bytes);
  T* const v16 = reinterpret_cast<T*>(smem + l.v16_bytes);
  const int S = static_cast<int>(p.kv_len), E = static_cast<int>(p.head_dim),
            Ev = static_cast<int>(p.v_head_dim), L = static_cast<int>(p.q_len);
  const int threads = static_cast<int>(blockDim.x);
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  const int group = warp / l.splits, split = warp % l.splits;
  const int block_row0 = static_cast<int>(blockIdx.x) * kWarpRows * l.groups;
  const int row0 = block_row0 + kWarpRows * group;  // the warp's first query row

  // 1. Keys and values (float32 into the staging, 16-bit into their rows), in flight while
  //    the warp reads its query rows.
  const In* const kh = static_cast<const In*>(k) + b * p.k_strides[0] + h * p.k_strides[1];
  const In* const vh = static_cast<const In*>(v) + b * p.v_strides[0] + h * p.v_strides[1];
  if constexpr (kIn16) {
    stage_rows_16bit<D>(kh, p.k_strides[2], S, E, vec_k, reinterpret_cast<uint16_t*>(k16), l.sp, l.ld16);
    stage_rows_16bit<D>(vh, p.v_strides[2], S, Ev, vec_v, reinterpret_cast<uint16_t*>(v16), l.sp, l.ld16);
  } else {
    stage(threads, k32, l.e4, kh, p.k_strides[2], S, S, E, l.e4, vec_k);
    stage(threads, v32, l.ev4, vh, p.v_strides[2], S, S, Ev, l.ev4, vec_v);
  }
  commit_copies();
  // Q's A fragments: step kk holds dimensions 16 kk + 2 t (+ 1) and 16 kk + 8 + 2 t (+ 1) of
  // rows g and g + 8 (zeros past the rows and the head dimension).
  uint32_t qa[D / 16][4];
  {
    const In* const qh = static_cast<const In*>(q) + b * p.q_strides[0] + h * p.q_strides[1];
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int half = 0; half < 2; ++half)
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          const int row = row0 + g + 8 * hi, col = 16 * kk + 8 * half + 2 * t;
          const In* const qr = qh + static_cast<int64_t>(row) * p.q_strides[2];
          if constexpr (kIn16) {
            const uint32_t x0 = row < L && col < E ? qr[col] : 0u;
            const uint32_t x1 = row < L && col + 1 < E ? qr[col + 1] : 0u;
            qa[kk][hi + 2 * half] = x0 | x1 << 16;
          } else {
            const float x0 = row < L && col < E ? qr[col] : 0.0f;
            const float x1 = row < L && col + 1 < E ? qr[col + 1] : 0.0f;
            qa[kk][hi + 2 * half] = Half16<T>::pack(x0, x1);
          }
        }
  }
  wait_copies<0>();
  __syncthreads();

  // 2. 16-bit rows (already so where the input is).
  if constexpr (!kIn16) {
    convert_rows<T, D>(k32, l.e4, S, k16, l.sp, l.ld16);
    convert_rows<T, D>(v32, l.ev4, S, v16, l.sp, l.ld16);
    __syncthreads();
  }

  // 3. The warp's chunks: score tile nt holds keys j0 + 8 nt + 2 t (+ 1) of rows g, g + 8.
  const int matrix = lane / 8, matrix_row = lane % 8;
  const float scale2 = p.scale * kLog2e;
  const int64_t mask_base =
      (p.mask_batch_period > 0 ? b % p.mask_batch_period : b) * p.mask_strides[0] + h * p.mask_strides[1];
  float o[D / 8][4] = {};
  float m[2] = {kAttentionNegInf, kAttentionNegInf}, sum[2] = {0.0f, 0.0f};
  for (int j0 = split * kChunk; j0 < S; j0 += l.splits * kChunk) {
    float s[kChunk / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int pair = 0; pair < kChunk / 16; ++pair) {
        if (j0 + 16 * pair >= S) break;  // (the same for the whole warp)
        // Matrices: keys +0..7 and +8..15 (matrix / 2) x dimensions +0..7 and +8..15.
        uint32_t r[4];
        ldmatrix_x4(
            r, k16 + (j0 + 16 * pair + 8 * (matrix / 2) + matrix_row) * l.ld16 + 16 * kk + 8 * (matrix % 2));
        Half16<T>::mma(s[2 * pair], qa[kk], r[0], r[1]);
        Half16<T>::mma(s[2 * pair + 1], qa[kk], r[2], r[3]);
      }
    // Scale, mask, causal (log2 units), the rows' maxima.
    float top[2] = {kAttentionNegInf, kAttentionNegInf};
#pragma unroll
    for (int nt = 0; nt < kChunk / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int hi = e / 2, j = j0 + 8 * nt + 2 * t + e % 2;
        const int i = min(row0 + g + 8 * hi, L - 1);  // (rows past the last: not written)
        float x = kAttentionNegInf;
        if (j < S) {
          x = s[nt][e] * scale2;
          if (p.mask_kind != AttentionMask::None) {
            const float term = mask_term(p, mask, mask_base + i * p.mask_strides[2] + j * p.mask_strides[3]);
            x = term == kAttentionNegInf && p.mask_kind != AttentionMask::Additive ? kAttentionNegInf
                                                                                   : x + term * kLog2e;
          }
          if (p.causal && j > i) x = kAttentionNegInf;  // query i sees keys j <= i
        }
        s[nt][e] = x;
        top[hi] = fmaxf(top[hi], x);
      }
    float base[2];
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      top[hi] = fmaxf(top[hi], __shfl_xor_sync(0xffffffffu, top[hi], 1));
      top[hi] = fmaxf(top[hi], __shfl_xor_sync(0xffffffffu, top[hi], 2));
      const float grown = fmaxf(m[hi], top[hi]);
      // Nothing seen yet (every key so far masked): nothing to rescale, and exp2 of -inf
      // scores against 0 gives their zeros.
      const float rescale = grown == kAttentionNegInf ? 1.0f : exp2f(m[hi] - grown);
      base[hi] = grown == kAttentionNegInf ? 0.0f : grown;
      m[hi] = grown;
      sum[hi] *= rescale;
#pragma unroll
      for (int vt = 0; vt < D / 8; ++vt) {
        o[vt][2 * hi] *= rescale;
        o[vt][2 * hi + 1] *= rescale;
      }
    }
#pragma unroll
    for (int nt = 0; nt < kChunk / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float x = exp2f(s[nt][e] - base[e / 2]);
        s[nt][e] = x;
        sum[e / 2] += x;
      }
      // O += P V: P's A fragment of keys 16 ks .. 16 ks + 15 is score tiles 2 ks and 2 ks + 1.
#pragma unroll
    for (int ks = 0; ks < kChunk / 16; ++ks) {
      if (j0 + 16 * ks >= S) break;
      const uint32_t pa[4] = {Half16<T>::pack(s[2 * ks][0], s[2 * ks][1]),
                              Half16<T>::pack(s[2 * ks][2], s[2 * ks][3]),
                              Half16<T>::pack(s[2 * ks + 1][0], s[2 * ks + 1][1]),
                              Half16<T>::pack(s[2 * ks + 1][2], s[2 * ks + 1][3])};
#pragma unroll
      for (int vp = 0; vp < D / 16; ++vp) {
        // Matrices: keys +0..7 and +8..15 (matrix % 2) x value columns +0..7 and +8..15.
        uint32_t r[4];
        ldmatrix_x4_trans(
            r, v16 + (j0 + 16 * ks + 8 * (matrix % 2) + matrix_row) * l.ld16 + 16 * vp + 8 * (matrix / 2));
        Half16<T>::mma(o[2 * vp], pa, r[0], r[1]);
        Half16<T>::mma(o[2 * vp + 1], pa, r[2], r[3]);
      }
    }
  }
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    sum[hi] += __shfl_xor_sync(0xffffffffu, sum[hi], 1);
    sum[hi] += __shfl_xor_sync(0xffffffffu, sum[hi], 2);
  }

  // 4. out = O / sum: from the registers with one split, else combined in shared memory.
  if (l.splits == 1) {
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int i = row0 + g + 8 * hi;
      if (i >= L) continue;
      const float inv = m[hi] == kAttentionNegInf ? 0.0f : 1.0f / sum[hi];
      const int64_t at = b * p.out_strides[0] + h * p.out_strides[1] + i * p.out_strides[2];
#pragma unroll
      for (int vt = 0; vt < D / 8; ++vt) {
        const int c = 8 * vt + 2 * t;
        const float o0 = o[vt][2 * hi] * inv, o1 = o[vt][2 * hi + 1] * inv;
        if (pair_out && c + 1 < Ev) {
          store_out_pair(out, out_type, at + c, o0, o1);
          continue;
        }
        if (c < Ev) store_out(out, out_type, at + c, o0);
        if (c + 1 < Ev) store_out(out, out_type, at + c + 1, o1);
      }
    }
    return;
  }
  // The warps' parts over the float32 staging (no warp reads it after the conversion), or in
  // their own space (16-bit input): O as 16 x D, then the rows' maxima and sums.
  float* const part = k32 + warp * l.part_floats;
#pragma unroll
  for (int vt = 0; vt < D / 8; ++vt)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi)
      *reinterpret_cast<float2*>(part + (g + 8 * hi) * D + 8 * vt + 2 * t) =
          make_float2(o[vt][2 * hi], o[vt][2 * hi + 1]);
  if (t == 0)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      part[kWarpRows * D + g + 8 * hi] = m[hi];
      part[kWarpRows * D + kWarpRows + g + 8 * hi] = sum[hi];
    }
  __syncthreads();
  for (int idx = static_cast<int>(threadIdx.x); idx < kWarpRows * l.groups * Ev; idx += threads) {
    const int r = idx / Ev, c = idx - r * Ev, i = block_row0 + r;
    if (i >= L) break;  // (rows ascend with idx)
    const float* const parts = k32 + (r / kWarpRows) * l.splits * l.part_floats;
    const int rr = r % kWarpRows;
    float top = kAttentionNegInf;
    for (int sp = 0; sp < l.splits; ++sp) top = fmaxf(top, parts[sp * l.part_floats + kWarpRows * D + rr]);
    float value = 0.0f;
    if (top != kAttentionNegInf) {
      float num = 0.0f, den = 0.0f;
      for (int sp = 0; sp < l.splits; ++sp) {
        const float* const ps = parts + sp * l.part_floats;
        const float w = exp2f(ps[kWarpRows * D + rr] - top);
        num += w * ps[rr * D + c];
        den += w * ps[kWarpRows * D + kWarpRows + rr];
      }
      value = num / den;
    }
    store_out(out, out_type, b * p.out_strides[0] + h * p.out_strides[1] + i * p.out_strides[2] + c, value);
  }
}

template <typename T, bool kIn16>
auto* mma_kernel(int d) {
  return d == 64 ? attention_mma_kernel<T, 64, kIn16> : attention_mma_kernel<T, 128, kIn16>;
}

// The sizes the kernel takes (head sizes up to 128, no weights).
bool mma_applies(const Exec& ex, const AttentionParams& p) {
  return (ex.precision == Precision::Fp16 || ex.precision == Precision::Bf16) &&
         p.weights == AttentionWeights::None && p.kv_len > 0 && p.kv_len <= 65536 && p.head_dim > 0 &&
         p.head_dim <= 128 && p.v_head_dim > 0 && p.v_head_dim <= 128 && p.q_len > 0 &&
         p.q_len <= INT32_MAX / 2 && p.heads <= 65535 && p.batch <= 65535;
}

// AOTC_CUDA_ATTENTION_MMA=G,S: G groups of 16 rows and S splits of the keys a block (for the
// checks and timings of bench/cuda/attention_fused_bench.cu); false where it is unset.
bool forced_shape(int& groups, int& splits) {
  const char* env = std::getenv("AOTC_CUDA_ATTENTION_MMA");
  int g = 0, s = 0;
  if (!env || std::sscanf(env, "%d,%d", &g, &s) != 2 || g <= 0 || s <= 0 || g * s > kMaxWarps) return false;
  groups = g;
  splits = s;
  return true;
}

// The kernel on a grid of blocks of `groups` x `splits` warps; false, nothing enqueued, where
// its shared memory does not fit the device.
bool launch_mma(const Exec& ex, const AttentionParams& p, const AttentionDevice& device, int groups,
                int splits, bool in16, const void* q, const void* k, const void* v, const void* mask,
                void* out, AttentionOut out_type) {
  const AttentionMmaLayout l = attention_mma_layout(p, groups, splits, in16);
  if (l.total_bytes > device.max_block_bytes) return false;
  const bool bf16 = ex.precision == Precision::Bf16;
  auto* const kernel = in16 ? (bf16 ? mma_kernel<__nv_bfloat16, true>(l.d) : mma_kernel<__half, true>(l.d))
                            : (bf16 ? mma_kernel<__nv_bfloat16, false>(l.d) : mma_kernel<__half, false>(l.d));
  if (!allow_block_bytes(kernel, device)) return false;
  const bool vec_k = in16 ? vector_rows_16bit(k, p.k_strides)
                          : vector_rows(static_cast<const float*>(k), p.k_strides, p.head_dim);
  const bool vec_v = in16 ? vector_rows_16bit(v, p.v_strides)
                          : vector_rows(static_cast<const float*>(v), p.v_strides, p.v_head_dim);
  const dim3 grid(static_cast<unsigned>((p.q_len + kWarpRows * groups - 1) / (kWarpRows * groups)),
                  static_cast<unsigned>(p.heads), static_cast<unsigned>(p.batch));
  kernel<<<grid, 32 * groups * splits, static_cast<size_t>(l.total_bytes), ex.stream>>>(
      p, l, vec_k, vec_v, pair_rows(out, out_type, p.out_strides), q, k, v, mask, out, out_type);
  check_launch("attention_mma_kernel");
  return true;
}

}  // namespace

bool attention_mma_16bit(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                         const float* v, const void* mask, void* out, AttentionOut out_type) {
  if (!mma_applies(ex, p) || p.kv_len <= kShortKeys) return false;
  // AOTC_CUDA_ATTENTION_MMA=0: never (for comparisons).
  if (const char* env = std::getenv("AOTC_CUDA_ATTENTION_MMA"); env && env[0] == '0' && env[1] == '\0')
    return false;
  AttentionDevice device;
  if (!attention_device(device)) return false;
  // Blocks of 4 groups (64 query rows), the keys split in two from 4 chunks on: where those
  // make a grid of a block per multiprocessor or more. On smaller grids the block's latency
  // is the kernel's time, and staging and widening a head's keys and values in each block
  // cost more than the float32 kernel's whole run (vit_b_16 and BERT-base at batch 1: 16.4
  // and 15.4 us at their fastest shapes against 13.9 and 8.5; at batch 8: 68.0 against 78.5
  // and 17.2 against 32.0; bench/results_gpu.md).
  int groups = 4, splits = p.kv_len > 3 * kChunk ? 2 : 1;
  const int64_t blocks = (p.q_len + kWarpRows * groups - 1) / (kWarpRows * groups) * p.heads * p.batch;
  if (!forced_shape(groups, splits) && blocks < device.sms) return false;
  return launch_mma(ex, p, device, groups, splits, false, q, k, v, mask, out, out_type);
}

bool attention_mma_16bit_qkv(const Exec& ex, const AttentionParams& p, const void* q, const void* k,
                             const void* v, const void* mask, void* out, AttentionOut out_type) {
  if (!mma_applies(ex, p)) return false;
  AttentionDevice device;
  if (!attention_device(device)) return false;
  // Blocks of 64 rows, the keys not split, where those fill the GPU (vit_b_16 at batch 8:
  // 26.7 us a layer against 45.1 with two splits; with float32 input two splits were
  // faster, as the staging then dominates); on smaller grids one group of 16 rows and the
  // keys split over up to four warps (vit_b_16 and BERT-base at batch 1: 14.8 and 13.2 us,
  // still behind attention_fused.cu's float32 kernel on float32 input, 14.0 and 8.4;
  // bench/results_gpu.md).
  const int chunks = (static_cast<int>(p.kv_len) + kChunk - 1) / kChunk;
  int groups = 4, splits = 1;
  const int64_t blocks = (p.q_len + kWarpRows * groups - 1) / (kWarpRows * groups) * p.heads * p.batch;
  if (blocks < device.sms) {
    groups = 1;
    splits = chunks < 4 ? chunks : 4;
  }
  forced_shape(groups, splits);
  // Shapes with fewer warps' parts where the keys leave no room for them, down to one warp
  // (no parts: the keys' and values' 16-bit rows alone).
  return launch_mma(ex, p, device, groups, splits, true, q, k, v, mask, out, out_type) ||
         launch_mma(ex, p, device, 1, splits, true, q, k, v, mask, out, out_type) ||
         launch_mma(ex, p, device, 1, 1, true, q, k, v, mask, out, out_type);
}

}  // namespace aotc::rt::cuda
