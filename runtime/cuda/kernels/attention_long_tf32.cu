// attention_long_tf32.cu - attention over more than 64 keys (vit_b_16's 197, BERT-base's
// 128) with both products on tf32 tensor cores, for --precision tf32 and the 16-bit
// precisions, as attention_short_tf32.cu does for at most 64 keys. (--precision fp32 keeps
// attention_fused.cu's exact float32 kernel, which took 13.6 us of vit_b_16's layer at fp16:
// the largest kernel of that model, bench/results_gpu.md.)
//
// A block takes 16 x `groups` query rows of one (batch, head) and stages them, the head's
// keys and its values in shared memory, zero-padded to mma tiles. Its warps are groups x
// shares: warp (group, share) takes the group's 16 rows against the share's range of 8-key
// tiles, in passes of up to 64 keys:
//   1. the pass's scores S = Q K^T in registers (mma.sync m16n8k8; k positions t and t + 4
//      read from columns 2 t and 2 t + 1, as attention_short_tf32.cu does);
//   2. scale, mask and causal masking; each row's running maximum (over the row's quad),
//      and exp(score - maximum): an online softmax, which rescales the row's earlier sums
//      by exp(old maximum - new maximum) when the maximum grows;
//   3. O += P V: the score accumulators are P's A fragments as they stand (keys 2 t and
//      2 t + 1 of a tile), and O holds every value column (at most 128) in registers.
// Then the shares meet in shared memory, over the keys' and values' space: each warp
// writes its rows' maximum, sum and value sums, and the group's threads combine them with
// the weights exp(maximum_s - maximum) into out = sums / sum. A row whose every key is
// masked gets zeros, as torch's safe softmax and the other kernels give.
// Operands are rounded to tf32 to nearest (tf32_round_any); the softmax, its sums and the
// combination are float32.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/attention_staging.cuh>
#include <aotc/rt/cuda/tf32_mma.cuh>

#include <cstdlib>
#include <string_view>
#include <type_traits>

namespace aotc::rt::cuda {
namespace {

constexpr int kShortKeys = 64;  // attention_short_tf32.cu's sequences
constexpr int kPassTiles = 8;   // 8-key tiles a pass: 64 scores of a row in registers
constexpr int kWarpRows = 16;   // an mma's rows
constexpr int kWarps = 8;       // a block's: groups x shares
constexpr int kMaxGroups = 2;   // groups of 16 rows a block
constexpr int kMaxValueColumns = 128;
constexpr float kLog2e = 1.4426950408889634f;

// Shared-memory layout (in floats), the same on host and device.
struct LongLayout {
  int groups, shares, block_rows;
  int e8;        // head_dim rounded up to 8: query and key rows zero-padded to it
  int qk_ld;     // query and key row stride: e8 rounded up to 32, plus 8 (attention_short_tf32.cu)
  int s8;        // kv_len rounded up to 8: key and value rows staged (pad rows zero)
  int ev8;       // v_head_dim rounded up to 8: value columns staged (pad columns zero)
  int v_ld;      // value row stride: ev8 rounded up to 32, plus 4
  int merge_ld;  // a row of a warp's results in the merge: maximum, sum, ev8 value sums
  int q_floats, k_floats, v_floats, merge_floats;
  int total() const {
    return q_floats + (k_floats + v_floats > merge_floats ? k_floats + v_floats : merge_floats);
  }
  int64_t bytes() const { return static_cast<int64_t>(total()) * static_cast<int64_t>(sizeof(float)); }
};

LongLayout long_layout(const AttentionParams& p, int groups) {
  LongLayout l;
  l.groups = groups;
  l.block_rows = groups * kWarpRows;
  l.e8 = round_up(p.head_dim, 8);
  l.qk_ld = round_up(l.e8, 32) + 8;
  l.s8 = round_up(p.kv_len, 8);
  l.ev8 = round_up(p.v_head_dim, 8);
  l.v_ld = round_up(l.ev8, 32) + 4;
  // The block's 8 warps split each group's keys, never into more shares than tiles: every
  // warp has keys (the kernel's barriers in its first pass).
  const int tiles = l.s8 / 8;
  l.shares = kWarps / groups < tiles ? kWarps / groups : tiles;
  l.merge_ld = l.ev8 + 2;
  l.q_floats = l.block_rows * l.qk_ld;
  l.k_floats = l.s8 * l.qk_ld;
  l.v_floats = l.s8 * l.v_ld;
  l.merge_floats = groups * l.shares * kWarpRows * l.merge_ld;
  return l;
}

__device__ __forceinline__ uint32_t tf32_of(float x) { return tf32_round_any(__float_as_uint(x)); }

// Rows x cols (a multiple of 4) floats at `at`, rows `ld` apart, rounded to tf32 in place by
// the block's threads: once per staged value, where rounding at each use cost 4 integer
// instructions per operand of every mma (ncu: the kernel was issue-bound).
__device__ __forceinline__ void round_staged(int threads, float* at, int ld, int rows, int cols) {
  const int c4 = cols / 4;
  for (int i = static_cast<int>(threadIdx.x); i < rows * c4; i += threads) {
    const int r = i / c4, c = i - r * c4;
    uint4* const v = reinterpret_cast<uint4*>(at + r * ld + 4 * c);
    uint4 x = *v;
    x.x = tf32_round_any(x.x);
    x.y = tf32_round_any(x.y);
    x.z = tf32_round_any(x.z);
    x.w = tf32_round_any(x.w);
    *v = x;
  }
}

// MaskT: the mask's elements (float, unsigned char for bool masks, void for none); VT: the
// 8-column value tiles held in registers (at least ev8 / 8).
template <typename MaskT, int VT>
__global__ void __launch_bounds__(32 * kWarps)
    attention_long_tf32_kernel(AttentionParams p, LongLayout l, bool vec_q, bool vec_k, bool vec_v,
                               bool pair_out, const float* __restrict__ q, const float* __restrict__ k,
                               const float* __restrict__ v, const void* __restrict__ mask,
                               float* __restrict__ out) {
  extern __shared__ float4 shared4[];
  float* const qs = reinterpret_cast<float*>(shared4);  // block rows x qk_ld
  float* const ks = qs + l.q_floats;                    // s8 x qk_ld
  float* const vs = ks + l.k_floats;                    // s8 x v_ld
  const int S = static_cast<int>(p.kv_len), E = static_cast<int>(p.head_dim),
            Ev = static_cast<int>(p.v_head_dim), L = static_cast<int>(p.q_len);
  const int threads = 32 * l.groups * l.shares;
  const int row0 = blockIdx.x * l.block_rows;
  const int rows = min(l.block_rows, L - row0);
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int group = warp / l.shares, share = warp - group * l.shares;
  const int tiles = l.s8 / 8;
  const int tile_begin = share * tiles / l.shares, tile_end = (share + 1) * tiles / l.shares;

  // Query rows and keys (group 0), values (group 1).
  stage(threads, qs, l.qk_ld, q + b * p.q_strides[0] + h * p.q_strides[1] + row0 * p.q_strides[2],
        p.q_strides[2], rows, l.block_rows, E, l.e8, vec_q);
  stage(threads, ks, l.qk_ld, k + b * p.k_strides[0] + h * p.k_strides[1], p.k_strides[2], S, l.s8, E, l.e8,
        vec_k);
  commit_copies();
  stage(threads, vs, l.v_ld, v + b * p.v_strides[0] + h * p.v_strides[1], p.v_strides[2], S, l.s8, Ev, l.ev8,
        vec_v);
  commit_copies();
  wait_copies<1>();
  __syncthreads();
  round_staged(threads, qs, l.qk_ld, l.block_rows, l.e8);
  round_staged(threads, ks, l.qk_ld, l.s8, l.e8);
  __syncthreads();

  const MaskT* mask_rows[2] = {};
  int row_of[2];  // the query index of rows g and g + 8 (rows past the last: the last one's)
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    row_of[hi] = row0 + min(group * kWarpRows + g + 8 * hi, rows - 1);
    if constexpr (!std::is_void_v<MaskT>)
      mask_rows[hi] = static_cast<const MaskT*>(mask) +
                      (p.mask_batch_period > 0 ? b % p.mask_batch_period : b) * p.mask_strides[0] +
                      h * p.mask_strides[1] + row_of[hi] * p.mask_strides[2];
  }

  // Scores in base 2 (score x log2(e)), so that each exponential is one exp2.
  const float scale2 = p.scale * kLog2e;
  float running_max[2] = {kAttentionNegInf, kAttentionNegInf}, running_sum[2] = {0.0f, 0.0f};
  float o[VT][4] = {};
  const float* const qr = qs + (group * kWarpRows + g) * l.qk_ld + 2 * t;
  for (int base = tile_begin; base < tile_end; base += kPassTiles) {
    const int count = min(kPassTiles, tile_end - base);
    // 1. Scores: tile nt holds keys 8 (base + nt) + 2 t and + 1 of rows g and g + 8.
    float x[kPassTiles][4] = {};
    const float* const kr = ks + (base * 8 + g) * l.qk_ld + 2 * t;
    for (int e = 0; e < l.e8; e += 8) {
      const float2 lo = *reinterpret_cast<const float2*>(qr + e);
      const float2 hi = *reinterpret_cast<const float2*>(qr + 8 * l.qk_ld + e);
      const uint32_t a[4] = {__float_as_uint(lo.x), __float_as_uint(hi.x), __float_as_uint(lo.y),
                             __float_as_uint(hi.y)};
#pragma unroll
      for (int nt = 0; nt < kPassTiles; ++nt) {
        if (nt >= count) break;
        const float2 kx = *reinterpret_cast<const float2*>(kr + nt * 8 * l.qk_ld + e);
        const uint32_t bk[2] = {__float_as_uint(kx.x), __float_as_uint(kx.y)};
        mma_tf32(x[nt], a, bk);
      }
    }
    // The mask's terms of the pass's scores: every load unconditional (keys past the last
    // read the last one's), all in flight before the first is used.
    float term[2][kPassTiles][2] = {};
    if constexpr (!std::is_void_v<MaskT>) {
      MaskT raw[2][kPassTiles][2];
#pragma unroll
      for (int hi = 0; hi < 2; ++hi)
#pragma unroll
        for (int nt = 0; nt < kPassTiles; ++nt)
#pragma unroll
          for (int c = 0; c < 2; ++c)
            raw[hi][nt][c] = mask_rows[hi][min(8 * (base + nt) + 2 * t + c, S - 1) * p.mask_strides[3]];
#pragma unroll
      for (int hi = 0; hi < 2; ++hi)
#pragma unroll
        for (int nt = 0; nt < kPassTiles; ++nt)
#pragma unroll
          for (int c = 0; c < 2; ++c) term[hi][nt][c] = mask_term_of(p.mask_kind, raw[hi][nt][c]);
    }
    // 2. Scale, mask, causal; the running maximum, exp(score - maximum) and the sums.
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      float m = kAttentionNegInf;
#pragma unroll
      for (int nt = 0; nt < kPassTiles; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int j = 8 * (base + nt) + 2 * t + c;
          float s = kAttentionNegInf;
          if (nt < count && j < S) {
            s = scale2 * x[nt][2 * hi + c];
            if constexpr (!std::is_void_v<MaskT>)
              s = term[hi][nt][c] == kAttentionNegInf && p.mask_kind != AttentionMask::Additive
                      ? kAttentionNegInf
                      : fmaf(term[hi][nt][c], kLog2e, s);
            if (p.causal && j > row_of[hi]) s = kAttentionNegInf;  // query i sees keys j <= i
          }
          x[nt][2 * hi + c] = s;
          m = fmaxf(m, s);
        }
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      const float grown = fmaxf(running_max[hi], m);
      // While every key so far is masked the maximum is -inf: exponents from 0, so that
      // the (zero) sums stay zero rather than NaN.
      const float from = grown == kAttentionNegInf ? 0.0f : grown;
      const float rescale = exp2f(running_max[hi] - from);
      float sum = 0.0f;
#pragma unroll
      for (int nt = 0; nt < kPassTiles; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const float e = exp2f(x[nt][2 * hi + c] - from);
          x[nt][2 * hi + c] = e;
          sum += e;
        }
      running_sum[hi] = running_sum[hi] * rescale + sum;  // this lane's keys; the quad adds them last
      running_max[hi] = grown;
#pragma unroll
      for (int vt = 0; vt < VT; ++vt) {
        o[vt][2 * hi] *= rescale;
        o[vt][2 * hi + 1] *= rescale;
      }
    }
    // 3. O += P V: P's k positions t and t + 4 of step nt are keys 8 (base + nt) + 2 t and + 1.
    // The values arrived during the first pass's scores. Every warp has a first pass (a
    // share has at least one tile), so every thread meets this barrier once.
    if (base == tile_begin) {
      wait_copies<0>();
      __syncthreads();
      round_staged(threads, vs, l.v_ld, l.s8, l.ev8);
      __syncthreads();
    }
    const float* const vr = vs + (base * 8 + 2 * t) * l.v_ld + g;
#pragma unroll
    for (int nt = 0; nt < kPassTiles; ++nt) {
      if (nt >= count) break;
      const uint32_t pa[4] = {tf32_of(x[nt][0]), tf32_of(x[nt][2]), tf32_of(x[nt][1]), tf32_of(x[nt][3])};
#pragma unroll
      for (int vt = 0; vt < VT; ++vt) {
        if (8 * vt >= l.ev8) break;
        const float* const vp = vr + nt * 8 * l.v_ld + 8 * vt;
        const uint32_t bv[2] = {__float_as_uint(vp[0]), __float_as_uint(vp[l.v_ld])};
        mma_tf32(o[vt], pa, bv);
      }
    }
  }
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    running_sum[hi] += __shfl_xor_sync(0xffffffffu, running_sum[hi], 1);
    running_sum[hi] += __shfl_xor_sync(0xffffffffu, running_sum[hi], 2);
  }
  __syncthreads();  // every warp is done with the keys and values: the merge goes over them

  // The warp's rows g and g + 8: maximum, sum, then the value sums of columns 8 vt + 2 t, + 1.
  float* const merge = ks;
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    float* const row = merge + ((group * l.shares + share) * kWarpRows + g + 8 * hi) * l.merge_ld;
    if (t == 0) {
      row[0] = running_max[hi];
      row[1] = running_sum[hi];
    }
#pragma unroll
    for (int vt = 0; vt < VT; ++vt) {
      const int c = 8 * vt + 2 * t;
      if (c >= l.ev8) break;
      row[2 + c] = o[vt][2 * hi];
      row[2 + c + 1] = o[vt][2 * hi + 1];
    }
  }
  __syncthreads();

  // The group's threads combine its 16 rows, a pair of columns each at a time.
  const int pairs = l.ev8 / 2;
  for (int i = share * 32 + lane; i < kWarpRows * pairs; i += l.shares * 32) {
    const int r = i / pairs, c = 2 * (i - r * pairs);
    if (group * kWarpRows + r >= rows) continue;
    const float* const first = merge + (group * l.shares * kWarpRows + r) * l.merge_ld;
    const int share_ld = kWarpRows * l.merge_ld;
    float m = kAttentionNegInf;
    for (int s = 0; s < l.shares; ++s) m = fmaxf(m, first[s * share_ld]);
    float sum = 0.0f, o0 = 0.0f, o1 = 0.0f;
    if (m != kAttentionNegInf)  // (else every key is masked: zeros)
      for (int s = 0; s < l.shares; ++s) {
        const float* const part = first + s * share_ld;
        const float w = exp2f(part[0] - m);
        sum += w * part[1];
        o0 += w * part[2 + c];
        o1 += w * part[3 + c];
      }
    const float inv = m != kAttentionNegInf ? 1.0f / sum : 0.0f;
    float* const dst =
        out + b * p.out_strides[0] + h * p.out_strides[1] + (row0 + group * kWarpRows + r) * p.out_strides[2];
    if (pair_out && c + 1 < Ev) {
      *reinterpret_cast<float2*>(dst + c) = make_float2(o0 * inv, o1 * inv);
      continue;
    }
    if (c < Ev) dst[c] = o0 * inv;
    if (c + 1 < Ev) dst[c + 1] = o1 * inv;
  }
}

template <typename MaskT>
auto* kernel_for(int value_tiles) {
  return value_tiles <= 4   ? attention_long_tf32_kernel<MaskT, 4>
         : value_tiles <= 8 ? attention_long_tf32_kernel<MaskT, 8>
                            : attention_long_tf32_kernel<MaskT, 16>;
}

}  // namespace

bool attention_long_tf32(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                         const float* v, const void* mask, float* out) {
  if (ex.precision == Precision::Fp32 || p.weights != AttentionWeights::None || p.kv_len <= kShortKeys ||
      p.kv_len > INT32_MAX / 2 || p.head_dim <= 0 || p.head_dim > 1024 || p.v_head_dim <= 0 ||
      p.v_head_dim > kMaxValueColumns || p.q_len <= 0 || p.q_len > INT32_MAX / 2 || p.heads > 65535 ||
      p.batch > 65535)
    return false;
  if (const char* env = std::getenv("AOTC_CUDA_ATTENTION_TF32"); env && std::string_view(env) == "0")
    return false;
  AttentionDevice device;
  if (!attention_device(device)) return false;
  // Two groups of rows a block where one-group blocks would be more than the multiprocessors
  // (vit_b_16: 84 blocks of 32 rows, not 156 of 16) and both fit; the head's keys and
  // values are staged once per block.
  const auto blocks_of = [&](const LongLayout& l) {
    return (p.q_len + l.block_rows - 1) / l.block_rows * p.heads * p.batch;
  };
  LongLayout l = long_layout(p, 1);
  if (const LongLayout wide = long_layout(p, kMaxGroups);
      blocks_of(l) > device.sms && wide.bytes() <= device.max_block_bytes)
    l = wide;
  if (l.bytes() > device.max_block_bytes) return false;
  const int value_tiles = l.ev8 / 8;
  auto* const kernel = p.mask_kind == AttentionMask::None ? kernel_for<void>(value_tiles)
                       : p.mask_kind == AttentionMask::Additive || p.mask_kind == AttentionMask::DropIfNonzero
                           ? kernel_for<float>(value_tiles)
                           : kernel_for<unsigned char>(value_tiles);
  if (!allow_block_bytes(kernel, device)) return false;
  const dim3 grid(static_cast<unsigned>((p.q_len + l.block_rows - 1) / l.block_rows),
                  static_cast<unsigned>(p.heads), static_cast<unsigned>(p.batch));
  // 16-byte staging where the rows fill whole mma steps (a row of 8k floats, no zero columns).
  const bool vec_q = vector_rows(q, p.q_strides, p.head_dim) && p.head_dim % 8 == 0,
             vec_k = vector_rows(k, p.k_strides, p.head_dim) && p.head_dim % 8 == 0,
             vec_v = vector_rows(v, p.v_strides, p.v_head_dim) && p.v_head_dim % 8 == 0;
  const bool pair_out = p.out_strides[0] % 2 == 0 && p.out_strides[1] % 2 == 0 && p.out_strides[2] % 2 == 0 &&
                        reinterpret_cast<uintptr_t>(out) % 8 == 0;
  kernel<<<grid, 32 * l.groups * l.shares, static_cast<size_t>(l.bytes()), ex.stream>>>(
      p, l, vec_q, vec_k, vec_v, pair_out, q, k, v, mask, out);
  check_launch("attention_long_tf32_kernel");
  return true;
}

}  // namespace aotc::rt::cuda
