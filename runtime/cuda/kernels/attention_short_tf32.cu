// attention_short_tf32.cu - attention_short.cu's attention (at most 64 keys: a Swin
// transformer's 7x7 windows) with both products on tf32 tensor cores, for --precision tf32
// and the 16-bit precisions, where torch's own matmuls and cuBLAS's take tf32 or coarser
// products. (--precision fp32 keeps attention_short.cu's exact float32 kernel.)
//
// attention_short.cu computes both products with FMAs on float4s of queries, keys and
// values read from shared memory, and passes the probabilities between the two products
// through shared memory. Here both products are mma.sync m16n8k8 (tf32 operands, float32
// sums), and the scores never leave registers:
//   1. a block takes up to 64 query rows of one (batch, head); it stages them, the head's
//      keys (group 0) and values (group 1) in shared memory, zero-padded to mma tiles;
//   2. a warp takes 16 query rows: S = Q K^T as 8-key tiles. The mma's k positions t and
//      t + 4 of lane 4 g + t are read from columns 2 t and 2 t + 1 (the same permutation of
//      the head dimension for Q and K leaves the product unchanged), so each operand pair
//      is one 64-bit load;
//   3. scale, mask and causal masking, and each row's softmax, in the accumulator
//      registers: a row's keys are spread over the 4 lanes of a quad (2 shuffles);
//   4. O = P V: a score tile's accumulator holds keys 2 t and 2 t + 1 of rows g and g + 8,
//      which is the A fragment of a k step whose positions t and t + 4 are keys 2 t and
//      2 t + 1, so P goes from the softmax to the second product in the same registers;
//      V's fragment reads rows 2 t and 2 t + 1 to match. O is scaled by 1 / sum and
//      written as float2s through out's strides.
// Operands are rounded to tf32 to nearest, as gemm_3xtf32.cu rounds its A at --precision
// tf32; the softmax, its sums and the scaling are float32.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/attention_staging.cuh>
#include <aotc/rt/cuda/tf32_mma.cuh>

#include <cstdlib>
#include <string_view>
#include <type_traits>

namespace aotc::rt::cuda {
namespace {

constexpr int kMaxKeys = 64;
constexpr int kKeyTiles = kMaxKeys / 8;  // score tiles of 8 keys
constexpr int kWarpRows = 16;            // an mma's rows
constexpr int kMaxWarps = 4;             // up to 64 query rows a block
constexpr int kValueTiles = 4;           // P V: 32 value columns a pass

// Shared-memory layout (in floats), the same on host and device.
struct Tf32Layout {
  int warps, block_rows;
  int e8;     // head_dim rounded up to 8 (an mma's depth): query and key rows zero-padded to it
  int qk_ld;  // query and key row stride: e8 rounded up to 32, plus 8 (a half warp's 64-bit
              // fragment loads, rows g = 0..3 at columns 2 t, on 32 distinct banks)
  int s8;     // kv_len rounded up to 8: key and value rows staged (pad rows zero)
  int ev8;    // v_head_dim rounded up to 8: value columns staged (pad columns zero)
  int v_ld;   // value row stride: ev8 rounded up to 32, plus 4 (a warp's loads, rows 2 t and
              // columns g, on 32 distinct banks)
  int q_floats, k_floats, v_floats;
  int total() const { return q_floats + k_floats + v_floats; }
  int64_t bytes() const { return static_cast<int64_t>(total()) * static_cast<int64_t>(sizeof(float)); }
};

Tf32Layout tf32_layout(const AttentionParams& p) {
  Tf32Layout l;
  const int64_t warps_needed = (p.q_len + kWarpRows - 1) / kWarpRows;
  l.warps = static_cast<int>(warps_needed < kMaxWarps ? warps_needed : kMaxWarps);
  l.block_rows = l.warps * kWarpRows;
  l.e8 = round_up(p.head_dim, 8);
  l.qk_ld = round_up(l.e8, 32) + 8;
  l.s8 = round_up(p.kv_len, 8);
  l.ev8 = round_up(p.v_head_dim, 8);
  l.v_ld = round_up(l.ev8, 32) + 4;
  l.q_floats = l.block_rows * l.qk_ld;
  l.k_floats = l.s8 * l.qk_ld;
  l.v_floats = l.s8 * l.v_ld;
  return l;
}

__device__ __forceinline__ uint32_t tf32_of(float x) { return tf32_round_any(__float_as_uint(x)); }

// A mask element as the score's additive term (attention_staging.cuh's mask_term, for an
// element already loaded).
__device__ __forceinline__ float mask_term_of(AttentionMask kind, float x) {
  if (kind == AttentionMask::Additive) return x;
  return x != 0.0f ? kAttentionNegInf : 0.0f;  // DropIfNonzero
}
__device__ __forceinline__ float mask_term_of(AttentionMask kind, unsigned char x) {
  return (kind == AttentionMask::KeepIfTrue) == (x != 0) ? 0.0f : kAttentionNegInf;
}

// MaskT: the mask's elements (float, unsigned char for bool masks, void for none).
template <typename MaskT>
__global__ void __launch_bounds__(32 * kMaxWarps)
    attention_short_tf32_kernel(AttentionParams p, Tf32Layout l, bool vec_q, bool vec_k, bool vec_v,
                                bool pair_out, const float* __restrict__ q, const float* __restrict__ k,
                                const float* __restrict__ v, const void* __restrict__ mask,
                                void* __restrict__ out, AttentionOut out_type) {
  extern __shared__ float4 shared4[];
  float* const qs = reinterpret_cast<float*>(shared4);  // block rows x qk_ld
  float* const ks = qs + l.q_floats;                    // s8 x qk_ld
  float* const vs = ks + l.k_floats;                    // s8 x v_ld
  const int S = static_cast<int>(p.kv_len), E = static_cast<int>(p.head_dim),
            Ev = static_cast<int>(p.v_head_dim), L = static_cast<int>(p.q_len);
  const int threads = 32 * l.warps;
  const int row0 = blockIdx.x * l.block_rows;
  const int rows = min(l.block_rows, L - row0);
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int key_tiles = l.s8 / 8;

  // 1. Query rows and keys (group 0), values (group 1).
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

  // 2. Scores of rows warp * 16 + g (+ 8): tile nt holds keys 8 nt + 2 t and 8 nt + 2 t + 1.
  float x[kKeyTiles][4] = {};
  {
    const float* const qr = qs + (warp * kWarpRows + g) * l.qk_ld + 2 * t;
    const float* const kr = ks + g * l.qk_ld + 2 * t;
    for (int e = 0; e < l.e8; e += 8) {
      const float2 lo = *reinterpret_cast<const float2*>(qr + e);
      const float2 hi = *reinterpret_cast<const float2*>(qr + 8 * l.qk_ld + e);
      const uint32_t a[4] = {tf32_of(lo.x), tf32_of(hi.x), tf32_of(lo.y), tf32_of(hi.y)};
#pragma unroll
      for (int nt = 0; nt < kKeyTiles; ++nt) {
        if (nt >= key_tiles) break;
        const float2 kx = *reinterpret_cast<const float2*>(kr + nt * 8 * l.qk_ld + e);
        const uint32_t bk[2] = {tf32_of(kx.x), tf32_of(kx.y)};
        mma_tf32(x[nt], a, bk);
      }
    }
  }

  // The mask's terms of those scores. The mask's element type is the kernel's (MaskT), and
  // every load is unconditional (keys past the last read the last one's), so all 32 can be
  // in flight before the first is used. Measured faster than a load per key behind a switch
  // on the mask kind, and than whole rows staged in shared memory (bench/results_gpu.md).
  float term[2][kKeyTiles][2] = {};
  if constexpr (!std::is_void_v<MaskT>) {
    const MaskT* const mt = static_cast<const MaskT*>(mask) +
                            (p.mask_batch_period > 0 ? b % p.mask_batch_period : b) * p.mask_strides[0] +
                            h * p.mask_strides[1];
    MaskT raw[2][kKeyTiles][2];
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const MaskT* const row = mt + (row0 + min(warp * kWarpRows + g + 8 * hi, rows - 1)) * p.mask_strides[2];
#pragma unroll
      for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) raw[hi][nt][c] = row[min(8 * nt + 2 * t + c, S - 1) * p.mask_strides[3]];
    }
#pragma unroll
    for (int hi = 0; hi < 2; ++hi)
#pragma unroll
      for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) term[hi][nt][c] = mask_term_of(p.mask_kind, raw[hi][nt][c]);
  }

  // 3. Scale, mask, causal; each row's exp(score - max) and its sum over the row's quad.
  float inv_sum[2];
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    const int i = row0 + min(warp * kWarpRows + g + 8 * hi, rows - 1);  // (rows past the last: not written)
    float m = kAttentionNegInf;
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int j = 8 * nt + 2 * t + c;
        float s = kAttentionNegInf;
        if (j < S) {
          s = p.scale * x[nt][2 * hi + c];
          if constexpr (!std::is_void_v<MaskT>)
            s = term[hi][nt][c] == kAttentionNegInf && p.mask_kind != AttentionMask::Additive
                    ? kAttentionNegInf
                    : s + term[hi][nt][c];
          if (p.causal && j > i) s = kAttentionNegInf;  // query i sees keys j <= i
        }
        x[nt][2 * hi + c] = s;
        m = fmaxf(m, s);
      }
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    // Every key masked (or -inf scores): zeros, as torch's safe softmax, not NaN.
    const bool none = m == kAttentionNegInf;
    float sum = 0.0f;
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int j = 8 * nt + 2 * t + c;
        const float e = j < S && !none ? expf(x[nt][2 * hi + c] - m) : 0.0f;
        x[nt][2 * hi + c] = e;
        sum += e;
      }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    inv_sum[hi] = none ? 0.0f : 1.0f / sum;
  }
  // P's A fragments: k positions t and t + 4 of step nt are keys 8 nt + 2 t and 8 nt + 2 t + 1.
  uint32_t pa[kKeyTiles][4];
#pragma unroll
  for (int nt = 0; nt < kKeyTiles; ++nt) {
    pa[nt][0] = tf32_of(x[nt][0]);
    pa[nt][1] = tf32_of(x[nt][2]);
    pa[nt][2] = tf32_of(x[nt][1]);
    pa[nt][3] = tf32_of(x[nt][3]);
  }
  wait_copies<0>();
  __syncthreads();  // (the values)

  // 4. out = P V / sum, 32 value columns a pass: tile vt holds columns c0 + 8 vt + 2 t (+ 1).
  for (int c0 = 0; c0 < l.ev8; c0 += 8 * kValueTiles) {
    float o[kValueTiles][4] = {};
    const float* const vr = vs + 2 * t * l.v_ld + c0 + g;
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt) {
      if (nt >= key_tiles) break;
#pragma unroll
      for (int vt = 0; vt < kValueTiles; ++vt) {
        if (c0 + 8 * vt >= l.ev8) break;
        const float* const vp = vr + nt * 8 * l.v_ld + 8 * vt;
        const uint32_t bv[2] = {tf32_of(vp[0]), tf32_of(vp[l.v_ld])};
        mma_tf32(o[vt], pa[nt], bv);
      }
    }
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int r = warp * kWarpRows + g + 8 * hi;
      if (r >= rows) continue;
      const float s = inv_sum[hi];
      const int64_t at = b * p.out_strides[0] + h * p.out_strides[1] + (row0 + r) * p.out_strides[2];
#pragma unroll
      for (int vt = 0; vt < kValueTiles; ++vt) {
        const int c = c0 + 8 * vt + 2 * t;
        const float o0 = o[vt][2 * hi] * s, o1 = o[vt][2 * hi + 1] * s;
        if (pair_out && c + 1 < Ev) {
          store_out_pair(out, out_type, at + c, o0, o1);
          continue;
        }
        if (c < Ev) store_out(out, out_type, at + c, o0);
        if (c + 1 < Ev) store_out(out, out_type, at + c + 1, o1);
      }
    }
  }
}

}  // namespace

bool attention_short_tf32(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                          const float* v, const void* mask, void* out, AttentionOut out_type) {
  if (ex.precision == Precision::Fp32 || p.weights != AttentionWeights::None || p.kv_len <= 0 ||
      p.kv_len > kMaxKeys || p.head_dim <= 0 || p.head_dim > 1024 || p.v_head_dim <= 0 ||
      p.v_head_dim > 1024 || p.q_len <= 0 || p.q_len > INT32_MAX / 2 || p.heads > 65535 || p.batch > 65535)
    return false;
  const char* const env = std::getenv("AOTC_CUDA_ATTENTION_TF32");
  const std::string_view forced = env ? env : "";
  if (forced == "0") return false;
  const Tf32Layout l = tf32_layout(p);
  AttentionDevice device;
  if (!attention_device(device)) return false;
  const int max_bytes = device.max_block_bytes, sms = device.sms;
  if (l.bytes() > max_bytes) return false;
  // A grid of fewer blocks than multiprocessors takes attention_fused.cu's kernel, whose
  // blocks split a window over more warps: there one block's latency is the kernel's time
  // (swin_t's stages 2-4 at batch 1, 24-96 blocks; bench/results_gpu.md).
  // AOTC_CUDA_ATTENTION_TF32=1 takes this kernel wherever it applies (for the checks).
  const int64_t row_blocks = (p.q_len + l.block_rows - 1) / l.block_rows;
  if (row_blocks * p.heads * p.batch < sms && forced != "1") return false;
  auto* const kernel = p.mask_kind == AttentionMask::None ? attention_short_tf32_kernel<void>
                       : p.mask_kind == AttentionMask::Additive || p.mask_kind == AttentionMask::DropIfNonzero
                           ? attention_short_tf32_kernel<float>
                           : attention_short_tf32_kernel<unsigned char>;
  if (!allow_block_bytes(kernel, device)) return false;
  const dim3 grid(static_cast<unsigned>(row_blocks), static_cast<unsigned>(p.heads),
                  static_cast<unsigned>(p.batch));
  // 16-byte staging where the rows fill whole mma steps (a row of 8k floats, no zero columns).
  const bool vec_q = vector_rows(q, p.q_strides, p.head_dim) && p.head_dim % 8 == 0,
             vec_k = vector_rows(k, p.k_strides, p.head_dim) && p.head_dim % 8 == 0,
             vec_v = vector_rows(v, p.v_strides, p.v_head_dim) && p.v_head_dim % 8 == 0;
  kernel<<<grid, 32 * l.warps, static_cast<size_t>(l.bytes()), ex.stream>>>(
      p, l, vec_q, vec_k, vec_v, pair_rows(out, out_type, p.out_strides), q, k, v, mask, out, out_type);
  check_launch("attention_short_tf32_kernel");
  return true;
}

}  // namespace aotc::rt::cuda
