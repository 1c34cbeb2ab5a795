// attention_short.cu - scaled dot-product attention in one launch for short key sequences
// (at most 64 keys): a Swin transformer's 7x7 windows (49 keys of 32 dimensions, thousands
// of windows at batch 32), small cross-attentions. attention_fused.cu's kernel is built for
// encoder sizes (BERT's 128 keys, ViT's 197): its blocks take 8-24 query rows and stage the
// head's keys and values for each block, its score passes cover 128 keys and its P V chunks
// 64 value columns, so on 49 keys of 32 dimensions most of its lanes idle and each head's
// keys and values are staged four times.
//
// Here a block takes up to 64 query rows of one (batch, head): every row of a window in
// one block, so its keys and values are staged once. Used at --precision fp32 (below it,
// attention_short_tf32.cu's kernel takes these shapes) where that makes two blocks or
// more per multiprocessor (every window attention of swin_t at batch 32, none at batch 1):
// on fewer, one block's latency is the kernel's time, and attention_fused.cu's kernel,
// which splits a window over more warps, is faster. A warp takes WARP_ROWS rows: 16 where
// there are up to 64 keys, 32 where there are up to 32.
//   1. stages the keys (rows padded to 4 (mod 32) floats, as attention_fused.cu: 8 lanes
//      reading 8 keys' float4s hit disjoint banks), the block's query rows and the values in
//      shared memory with asynchronous 16-byte copies where the strides allow (the values
//      in a second group, still in flight during the scores);
//   2. scores: a lane takes 8 rows x 4 keys (keys kc + 16 t, or kc + 8 t); per 4 dimensions
//      it reads 8 float4s of queries (the 8 lanes of a quarter-warp read the same ones) and 4
//      of keys (8 different keys per quarter-warp) for 128 FMAs. A 16-byte shared load costs
//      a pass per quarter-warp whether its lanes share the address or not, so the tile is
//      as wide in keys as in rows: 48 passes per 128 FMAs of a lane, where a tile of 8 rows
//      x 2 keys takes 40 per 64. The scores stay in registers: scale, mask (read from
//      global memory, consecutive lanes reading consecutive keys) and causal masking;
//   3. softmax of each row by shuffles among the lanes of its row; the probabilities and
//      1 / sum go to shared memory;
//   4. P V: a lane takes 4 (or 8) rows x 4 value columns of 32-column chunks; per 4 keys it
//      reads a float4 of probabilities per row (shared by its quarter-warp) and 4 float4s
//      of values; the output is scaled by 1 / sum and written through out's strides.
// Exact float32 (FMA), as attention_fused.cu.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/attention_staging.cuh>

#include <cstdlib>
#include <string_view>

namespace aotc::rt::cuda {
namespace {

constexpr int kMaxBlockRows = 64;
constexpr int kMaxKeys = 64;
constexpr int kValueChunk = 32;  // P V: 8 lanes x 4 columns

// Shared-memory layout (in floats), the same on host and device.
struct ShortLayout {
  int warps;  // per block; the block takes warps x WARP_ROWS query rows
  int e4;     // head_dim rounded up to 4 (query and key rows are zero-padded to it)
  int kp;     // key row stride: e4 rounded up to 32, plus 4 (bank spread)
  int ev4;    // v_head_dim rounded up to 4: value row stride
  int sp;     // kv_len rounded up to 4: probability row stride and value rows staged (pad rows zero)
  int k_floats, v_floats, q_floats, p_floats, block_rows;
  int total() const { return k_floats + v_floats + q_floats + p_floats + block_rows; }
  int64_t bytes() const { return static_cast<int64_t>(total()) * static_cast<int64_t>(sizeof(float)); }
};

ShortLayout short_layout(const AttentionParams& p, int warp_rows) {
  ShortLayout l;
  const int64_t warps_needed = (p.q_len + warp_rows - 1) / warp_rows, most = kMaxBlockRows / warp_rows;
  l.warps = static_cast<int>(warps_needed < most ? warps_needed : most);
  l.block_rows = l.warps * warp_rows;
  l.e4 = round_up(p.head_dim, 4);
  l.kp = round_up(l.e4, 32) + 4;
  l.ev4 = round_up(p.v_head_dim, 4);
  l.sp = round_up(p.kv_len, 4);
  l.k_floats = static_cast<int>(p.kv_len) * l.kp;
  l.v_floats = l.sp * l.ev4;
  l.q_floats = l.block_rows * l.e4;
  l.p_floats = l.block_rows * l.sp;
  return l;
}

// WARP_ROWS 16: up to 64 keys (a row's scores over 16 lanes x 4 keys); 32: up to 32 keys
// (8 lanes x 4 keys).
template <int WARP_ROWS>
__global__ void __launch_bounds__(32 * kMaxBlockRows / WARP_ROWS)
    attention_short_kernel(AttentionParams p, ShortLayout l, bool vec_q, bool vec_k, bool vec_v, bool vec_out,
                           const float* __restrict__ q, const float* __restrict__ k,
                           const float* __restrict__ v, const void* __restrict__ mask, void* __restrict__ out,
                           AttentionOut out_type) {
  constexpr int kRowGroups = WARP_ROWS / 8, kKeyLanes = 32 / kRowGroups;  // scores: 8 rows x 4 keys a lane
  constexpr int kValueRows = WARP_ROWS / 4;                               // P V: 4 row groups x 8 lanes
  extern __shared__ float4 shared4[];
  float* const ks = reinterpret_cast<float*>(shared4);  // S x kp
  float* const vs = ks + l.k_floats;                    // sp x ev4
  float* const qs = vs + l.v_floats;                    // block rows x e4
  float* const ps = qs + l.q_floats;                    // block rows x sp: probabilities
  float* const inv_sum = ps + l.p_floats;               // block rows
  const int S = static_cast<int>(p.kv_len), E = static_cast<int>(p.head_dim),
            Ev = static_cast<int>(p.v_head_dim), L = static_cast<int>(p.q_len);
  const int threads = 32 * l.warps;
  const int row0 = blockIdx.x * l.block_rows;
  const int rows = min(l.block_rows, L - row0);
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  // 1. Keys and query rows (group 0), values (group 1).
  stage(threads, ks, l.kp, k + b * p.k_strides[0] + h * p.k_strides[1], p.k_strides[2], S, S, E, l.e4, vec_k);
  stage(threads, qs, l.e4, q + b * p.q_strides[0] + h * p.q_strides[1] + row0 * p.q_strides[2],
        p.q_strides[2], rows, l.block_rows, E, l.e4, vec_q);
  commit_copies();
  stage(threads, vs, l.ev4, v + b * p.v_strides[0] + h * p.v_strides[1], p.v_strides[2], S, l.sp, Ev, l.ev4,
        vec_v);
  commit_copies();
  wait_copies<1>();
  __syncthreads();

  // 2. Scores: rows r0 + r (r < 8) x keys kc + kKeyLanes t (t < 4).
  const int r0 = warp * WARP_ROWS + (lane / kKeyLanes) * 8, kc = lane % kKeyLanes;
  float x[8][4] = {};
  {
    const float* kr[4];
#pragma unroll
    for (int t = 0; t < 4; ++t)
      kr[t] = ks + min(kc + kKeyLanes * t, S - 1) * l.kp;  // (past the end: dropped)
    const float* const qr = qs + r0 * l.e4;
#pragma unroll 2
    for (int e = 0; e < l.e4; e += 4) {
      float4 kx[4];
#pragma unroll
      for (int t = 0; t < 4; ++t) kx[t] = *reinterpret_cast<const float4*>(kr[t] + e);
#pragma unroll
      for (int r = 0; r < 8; ++r) {
        const float4 qx = *reinterpret_cast<const float4*>(qr + r * l.e4 + e);
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          x[r][t] = fmaf(qx.x, kx[t].x, x[r][t]);
          x[r][t] = fmaf(qx.y, kx[t].y, x[r][t]);
          x[r][t] = fmaf(qx.z, kx[t].z, x[r][t]);
          x[r][t] = fmaf(qx.w, kx[t].w, x[r][t]);
        }
      }
    }
  }

  // The mask's terms of those scores, every load issued before the first is used. (Loaded
  // while the copies were in flight, they held 32 more registers through the scores, and
  // the kernel was slower: bench/results_gpu.md.)
  float term[8][4] = {};
  if (p.mask_kind != AttentionMask::None) {
    const int64_t base =
        (p.mask_batch_period > 0 ? b % p.mask_batch_period : b) * p.mask_strides[0] + h * p.mask_strides[1];
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int64_t i = row0 + min(r0 + r, rows - 1), j = kc + kKeyLanes * t;
        if (j < S) term[r][t] = mask_term(p, mask, base + i * p.mask_strides[2] + j * p.mask_strides[3]);
      }
  }
  // 3. Scale, mask, causal; each row's exp(score - max) and its sum, by shuffles among the
  //    row's kKeyLanes lanes (consecutive lanes, so xor offsets below kKeyLanes stay in it).
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    const int i = row0 + min(r0 + r, rows - 1);  // (rows past the last: computed, not written)
    float m = kAttentionNegInf;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int j = kc + kKeyLanes * t;
      float s = kAttentionNegInf;
      if (j < S) {
        s = p.scale * x[r][t];
        if (p.mask_kind != AttentionMask::None)
          s = term[r][t] == kAttentionNegInf && p.mask_kind != AttentionMask::Additive ? kAttentionNegInf
                                                                                       : s + term[r][t];
        if (p.causal && j > i) s = kAttentionNegInf;  // query i sees keys j <= i
      }
      x[r][t] = s;
      m = fmaxf(m, s);
    }
#pragma unroll
    for (int offset = kKeyLanes / 2; offset > 0; offset /= 2)
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
    // Every key masked (or -inf scores): zeros, as torch's safe softmax, not NaN.
    const bool none = m == kAttentionNegInf;
    float sum = 0.0f;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int j = kc + kKeyLanes * t;
      const float e = j < S && !none ? expf(x[r][t] - m) : 0.0f;
      sum += e;
      if (j < l.sp) ps[(r0 + r) * l.sp + j] = e;  // (pad keys: zero)
    }
#pragma unroll
    for (int offset = kKeyLanes / 2; offset > 0; offset /= 2)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (kc == 0) inv_sum[r0 + r] = none ? 0.0f : 1.0f / sum;
  }
  wait_copies<0>();
  __syncthreads();  // (the values, and the probabilities of the warp's other lanes)

  // 4. out = P V / sum: rows v0 + r (r < kValueRows) x columns c0 + 4 cv .. + 3.
  const int v0 = warp * WARP_ROWS + (lane / 8) * kValueRows, cv = lane % 8;
  for (int c0 = 0; c0 < Ev; c0 += kValueChunk) {
    const int c = c0 + 4 * cv;
    const float* vp = vs + min(c, l.ev4 - 4);  // (columns past the end: not stored)
    const float* pp = ps + v0 * l.sp;
    float4 acc[kValueRows] = {};
#pragma unroll 2
    for (int j = 0; j < l.sp; j += 4, vp += 4 * l.ev4, pp += 4) {
      float4 vx[4];
#pragma unroll
      for (int t = 0; t < 4; ++t) vx[t] = *reinterpret_cast<const float4*>(vp + t * l.ev4);
#pragma unroll
      for (int r = 0; r < kValueRows; ++r) {
        const float4 px = *reinterpret_cast<const float4*>(pp + r * l.sp);
        const float pj[4] = {px.x, px.y, px.z, px.w};
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          acc[r].x = fmaf(pj[t], vx[t].x, acc[r].x);
          acc[r].y = fmaf(pj[t], vx[t].y, acc[r].y);
          acc[r].z = fmaf(pj[t], vx[t].z, acc[r].z);
          acc[r].w = fmaf(pj[t], vx[t].w, acc[r].w);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kValueRows; ++r) {
      if (v0 + r >= rows) continue;
      const float s = inv_sum[v0 + r];
      const int64_t at = b * p.out_strides[0] + h * p.out_strides[1] + (row0 + v0 + r) * p.out_strides[2];
      if (vec_out && c + 3 < Ev) {  // (one 16-byte store; float32 only)
        *reinterpret_cast<float4*>(static_cast<float*>(out) + at + c) =
            make_float4(acc[r].x * s, acc[r].y * s, acc[r].z * s, acc[r].w * s);
        continue;
      }
      if (c < Ev) store_out(out, out_type, at + c, acc[r].x * s);
      if (c + 1 < Ev) store_out(out, out_type, at + c + 1, acc[r].y * s);
      if (c + 2 < Ev) store_out(out, out_type, at + c + 2, acc[r].z * s);
      if (c + 3 < Ev) store_out(out, out_type, at + c + 3, acc[r].w * s);
    }
  }
}

}  // namespace

bool attention_short_f32(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                         const float* v, const void* mask, void* out, AttentionOut out_type) {
  if (p.weights != AttentionWeights::None || p.kv_len <= 0 || p.kv_len > kMaxKeys || p.head_dim <= 0 ||
      p.head_dim > 1024 || p.v_head_dim <= 0 || p.v_head_dim > 1024 || p.q_len <= 0 ||
      p.q_len > INT32_MAX / 2 || p.heads > 65535 || p.batch > 65535)
    return false;
  const char* const forced_env = std::getenv("AOTC_CUDA_ATTENTION_SHORT");
  const std::string_view forced = forced_env ? forced_env : "";
  if (forced == "0") return false;
  const int warp_rows = p.kv_len <= 32 ? 32 : 16;
  const ShortLayout l = short_layout(p, warp_rows);
  AttentionDevice device;
  if (!attention_device(device)) return false;
  const int max_bytes = device.max_block_bytes, sms = device.sms;
  if (l.bytes() > max_bytes) return false;
  // A grid of fewer than two blocks per multiprocessor takes attention_fused.cu's kernel,
  // whose blocks split a window's rows, dimensions and keys over more warps: there one
  // block's latency is the kernel's time (swin_t at batch 1: 1.114 ms with this kernel, 1.003
  // without; bench/results_gpu.md). AOTC_CUDA_ATTENTION_SHORT=1 takes this kernel wherever it
  // applies (for the checks).
  const int64_t row_blocks = (p.q_len + l.block_rows - 1) / l.block_rows;
  if (row_blocks * p.heads * p.batch < 2 * static_cast<int64_t>(sms) && forced != "1") return false;
  auto* const kernel = warp_rows == 32 ? attention_short_kernel<32> : attention_short_kernel<16>;
  if (!allow_block_bytes(kernel, device)) return false;
  const dim3 grid(static_cast<unsigned>(row_blocks), static_cast<unsigned>(p.heads),
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, 32 * l.warps, static_cast<size_t>(l.bytes()), ex.stream>>>(
      p, l, vector_rows(q, p.q_strides, p.head_dim), vector_rows(k, p.k_strides, p.head_dim),
      vector_rows(v, p.v_strides, p.v_head_dim),
      out_type == AttentionOut::F32 &&
          vector_rows(static_cast<const float*>(out), p.out_strides, p.v_head_dim),
      q, k, v, mask, out, out_type);
  check_launch("attention_short_kernel");
  return true;
}

}  // namespace aotc::rt::cuda
