// attention.cu - scaled dot-product attention (AttentionParams, as the CPU kernel takes it)
// in three steps per (batch, head) set: scores = scale * Q K^T by a cuBLAS strided-batched
// GEMM (the scale folded into alpha) into the arena scratch, one kernel for the mask and
// the row softmax in place, then out = P V by a second strided-batched GEMM that writes
// through out's strides. Q, K, V and out are read and written through their strides, so a
// packed QKV projection needs no transposing copies. Heads of one batch entry are one
// cuBLAS batch; the batch entries fold into it when every operand's batch stride is heads
// times its head stride (always at batch 1), else each entry is one call.
// attention_16bit_output writes out in the 16-bit type of --precision fp16 / bf16: the
// one-launch kernels round as they store; the three launches here write a dense float32
// result after the scores and round it through out's strides.
#include <aotc/rt/cuda/attention_plan.h>
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/attention_staging.cuh>

namespace aotc::rt::cuda {
namespace {

constexpr float kNegInf = -__builtin_inff();

// One score after the causal limit and the mask.
__device__ __forceinline__ float masked_score(const AttentionParams& p, float v, int64_t j, int64_t visible,
                                              const float* mf, const unsigned char* mb, int64_t mc) {
  if (j >= visible) return kNegInf;
  switch (p.mask_kind) {
    case AttentionMask::None:
      return v;
    case AttentionMask::Additive:
      return v + mf[j * mc];
    case AttentionMask::KeepIfTrue:
      return mb[j * mc] ? v : kNegInf;
    case AttentionMask::DropIfTrue:
      return mb[j * mc] ? kNegInf : v;
    case AttentionMask::DropIfNonzero:
      return mf[j * mc] != 0.0f ? kNegInf : v;
  }
  return v;
}

// The masked softmax of one score row per warp, in place. Lanes stride along the row; the
// maximum and the sum combine with shuffles. Columns j > i are closed when causal (query i
// sees keys j <= i, torch's top-left alignment). A row with every column masked gives
// zeros, as torch's _safe_softmax (SDPA) and _masked_softmax (the MHA fast path) do.
// kPerLane > 0: rows of up to 32 * kPerLane scores, held in registers (read once, written
// once; through memory, BERT-base's 128-key rows were slower). 0: any length,
// through memory. The arithmetic is the same either way.
template <int kPerLane>
__global__ void attention_softmax_kernel(AttentionParams p, int64_t rows, const void* __restrict__ mask,
                                         float* __restrict__ scores) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // the same for the whole warp
  const int64_t S = p.kv_len;
  const int64_t i = row % p.q_len, bh = row / p.q_len;
  const int64_t h = bh % p.heads, b = bh / p.heads;
  float* s = scores + row * S;
  const int64_t visible = p.causal ? (i + 1 < S ? i + 1 : S) : S;
  const int64_t mrow = (p.mask_batch_period > 0 ? b % p.mask_batch_period : b) * p.mask_strides[0] +
                       h * p.mask_strides[1] + i * p.mask_strides[2];
  const int64_t mc = p.mask_strides[3];
  const auto* mf = static_cast<const float*>(mask) + mrow;
  const auto* mb = static_cast<const unsigned char*>(mask) + mrow;
  float m = kNegInf;
  if constexpr (kPerLane > 0) {
    float v[kPerLane];
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int64_t j = lane + 32 * k;
      v[k] = j < S ? masked_score(p, s[j], j, visible, mf, mb, mc) : kNegInf;
      m = fmaxf(m, v[k]);
    }
    for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      v[k] = lane + 32 * k < S ? expf(v[k] - m) : 0.0f;
      sum += v[k];
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const float inv = 1.0f / sum;
    const bool none = m == kNegInf;  // every column masked (or -inf scores): zeros, not NaN
#pragma unroll
    for (int k = 0; k < kPerLane; ++k)
      if (lane + 32 * k < S) s[lane + 32 * k] = none ? 0.0f : v[k] * inv;
  } else {
    for (int64_t j = lane; j < S; j += 32) {
      const float v = masked_score(p, s[j], j, visible, mf, mb, mc);
      s[j] = v;
      m = fmaxf(m, v);
    }
    for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
    if (m == kNegInf) {  // every column masked (or -inf scores): zeros, not NaN
      for (int64_t j = lane; j < S; j += 32) s[j] = 0.0f;
      return;
    }
    float sum = 0.0f;
    for (int64_t j = lane; j < S; j += 32) {
      const float e = expf(s[j] - m);
      s[j] = e;
      sum += e;
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const float inv = 1.0f / sum;
    for (int64_t j = lane; j < S; j += 32) s[j] *= inv;
  }
}

void launch_softmax(cudaStream_t stream, const AttentionParams& p, int64_t rows, const void* mask,
                    float* scores) {
  const unsigned blocks = blocks_for(rows * 32);
  if (p.kv_len <= 32)
    attention_softmax_kernel<1><<<blocks, kThreads, 0, stream>>>(p, rows, mask, scores);
  else if (p.kv_len <= 64)
    attention_softmax_kernel<2><<<blocks, kThreads, 0, stream>>>(p, rows, mask, scores);
  else if (p.kv_len <= 128)
    attention_softmax_kernel<4><<<blocks, kThreads, 0, stream>>>(p, rows, mask, scores);
  else if (p.kv_len <= 256)
    attention_softmax_kernel<8><<<blocks, kThreads, 0, stream>>>(p, rows, mask, scores);
  else
    attention_softmax_kernel<0><<<blocks, kThreads, 0, stream>>>(p, rows, mask, scores);
  check_launch("attention_softmax_kernel");
}

// probs[b, i, j] = the mean over heads of P[b, h, i, j] (need_weights with averaging),
// summed in head order as the CPU kernel does.
__global__ void attention_head_mean_kernel(AttentionParams p, const float* __restrict__ scores,
                                           float* __restrict__ probs) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t per_batch = p.q_len * p.kv_len;
  if (idx >= p.batch * per_batch) return;
  const int64_t b = idx / per_batch, ij = idx % per_batch;
  const float w = 1.0f / static_cast<float>(p.heads);
  float acc = 0.0f;
  for (int64_t h = 0; h < p.heads; ++h) acc += w * scores[(b * p.heads + h) * per_batch + ij];
  probs[idx] = acc;
}

// The output element of dense index idx (batch, head, row, column) through out's strides.
__device__ __forceinline__ int64_t out_at(const AttentionParams& p, int64_t idx) {
  const int64_t e = idx % p.v_head_dim, row = idx / p.v_head_dim;
  const int64_t i = row % p.q_len, bh = row / p.q_len;
  return (bh / p.heads) * p.out_strides[0] + (bh % p.heads) * p.out_strides[1] + i * p.out_strides[2] + e;
}

// out rows of every (batch, head) set to zero (nothing to attend to: an empty sum).
__global__ void attention_zero_kernel(AttentionParams p, void* __restrict__ out, AttentionOut type) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= p.batch * p.heads * p.q_len * p.v_head_dim) return;
  store_out(out, type, out_at(p, idx), 0.0f);
}

// out (through its strides, in `type`) = result, dense [batch, heads, q_len, v_head_dim].
__global__ void attention_store_kernel(AttentionParams p, const float* __restrict__ result,
                                       void* __restrict__ out, AttentionOut type) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= p.batch * p.heads * p.q_len * p.v_head_dim) return;
  store_out(out, type, out_at(p, idx), result[idx]);
}

// The three launches (Q K^T, mask + softmax, P V; p.kv_len > 0), scores in scratch or, per
// head, in probs.
void attention_three_launches(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                              const float* v, const void* mask, float* out, float* probs, float* scratch) {
  // Per-head probabilities are the dense [batch, heads, q_len, kv_len] scores themselves:
  // the softmax writes them in place and the P V product reads them from there.
  float* scores = p.weights == AttentionWeights::PerHead ? probs : scratch;
  const int64_t L = p.q_len, S = p.kv_len, H = p.heads;
  const bool fold =
      p.batch == 1 || (p.q_strides[0] == H * p.q_strides[1] && p.k_strides[0] == H * p.k_strides[1] &&
                       p.v_strides[0] == H * p.v_strides[1] && p.out_strides[0] == H * p.out_strides[1]);
  // One strided-batched call over batch x heads where the strides fold; else a call per
  // batch entry over its heads, or a call per head over the batch entries, whichever makes
  // fewer calls (a Swin transformer's 2048 windows of 3 heads: 3 calls, not 2048).
  const bool by_head = !fold && H < p.batch;
  const int64_t calls = fold      ? 1
                        : by_head ? H
                                  : p.batch,
                per_call = fold      ? p.batch * H
                           : by_head ? p.batch
                                     : H;
  const int inner = by_head ? 0 : 1, outer = by_head ? 1 : 0;  // the stride index within and across calls
  const int64_t scores_inner = by_head ? H * L * S : L * S, scores_outer = by_head ? L * S : H * L * S;

  BatchedGemmParams qk;  // scores (L x S) = scale * Q (L x E) K^T (K stored S x E)
  qk.gemm.m = L;
  qk.gemm.n = S;
  qk.gemm.k = p.head_dim;
  qk.gemm.trans_b = true;
  qk.gemm.lda = p.q_strides[2];
  qk.gemm.ldb = p.k_strides[2];
  qk.gemm.ldc = S;
  qk.gemm.alpha = p.scale;
  qk.batch = per_call;
  qk.stride_a = p.q_strides[inner];
  qk.stride_b = p.k_strides[inner];
  qk.stride_c = scores_inner;
  for (int64_t c = 0; c < calls; ++c)
    batched_gemm_f32(ex, qk, q + c * p.q_strides[outer], k + c * p.k_strides[outer], nullptr,
                     scores + c * scores_outer);

  const int64_t rows = p.batch * H * L;
  launch_softmax(ex.stream, p, rows, mask, scores);

  BatchedGemmParams pv;  // out (L x Ev) = P (L x S) V (S x Ev)
  pv.gemm.m = L;
  pv.gemm.n = p.v_head_dim;
  pv.gemm.k = S;
  pv.gemm.lda = S;
  pv.gemm.ldb = p.v_strides[2];
  pv.gemm.ldc = p.out_strides[2];
  pv.batch = per_call;
  pv.stride_a = scores_inner;
  pv.stride_b = p.v_strides[inner];
  pv.stride_c = p.out_strides[inner];
  for (int64_t c = 0; c < calls; ++c)
    batched_gemm_f32(ex, pv, scores + c * scores_outer, v + c * p.v_strides[outer], nullptr,
                     out + c * p.out_strides[outer]);

  if (p.weights == AttentionWeights::HeadMean) {
    attention_head_mean_kernel<<<blocks_for(p.batch * L * S), kThreads, 0, ex.stream>>>(p, scores, probs);
    check_launch("attention_head_mean_kernel");
  }
}

}  // namespace

void attention_f32(const Exec& ex, const AttentionParams& p, const float* q, const float* k, const float* v,
                   const void* mask, float* out, float* probs, float* scratch) {
  if (p.batch <= 0 || p.heads <= 0 || p.q_len <= 0 || p.v_head_dim <= 0) return;
  if (p.kv_len <= 0) {
    attention_zero_kernel<<<blocks_for(p.batch * p.heads * p.q_len * p.v_head_dim), kThreads, 0, ex.stream>>>(
        p, out, AttentionOut::F32);
    check_launch("attention_zero_kernel");
    return;
  }
  // Without weights to return, and when a head's keys (or values) fit in shared memory: one
  // launch (attention_fused.cu).
  if (attention_fused_f32(ex, p, q, k, v, mask, out)) return;
  attention_three_launches(ex, p, q, k, v, mask, out, probs, scratch);
}

void attention_16bit_output(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                            const float* v, const void* mask, void* out, float* probs, float* scratch) {
  if (ex.precision != Precision::Fp16 && ex.precision != Precision::Bf16) {
    note_error("attention_16bit_output", "16-bit outputs need --precision fp16 or bf16");
    return;
  }
  if (p.weights != AttentionWeights::None || probs) {
    note_error("attention_16bit_output", "attention weights are float32 only");
    return;
  }
  if (p.batch <= 0 || p.heads <= 0 || p.q_len <= 0 || p.v_head_dim <= 0) return;
  const AttentionOut type = ex.precision == Precision::Fp16 ? AttentionOut::F16 : AttentionOut::Bf16;
  const int64_t count = p.batch * p.heads * p.q_len * p.v_head_dim;
  if (p.kv_len <= 0) {
    attention_zero_kernel<<<blocks_for(count), kThreads, 0, ex.stream>>>(p, out, type);
    check_launch("attention_zero_kernel");
    return;
  }
  if (attention_fused_f32(ex, p, q, k, v, mask, out, type)) return;
  // The three launches into a dense float32 result after the scores, then rounded.
  AttentionParams dense = p;
  dense.out_strides[2] = p.v_head_dim;
  dense.out_strides[1] = p.q_len * p.v_head_dim;
  dense.out_strides[0] = p.heads * p.q_len * p.v_head_dim;
  float* const result = scratch + attention_score_floats(p);
  attention_three_launches(ex, dense, q, k, v, mask, result, nullptr, scratch);
  attention_store_kernel<<<blocks_for(count), kThreads, 0, ex.stream>>>(p, result, out, type);
  check_launch("attention_store_kernel");
}

void attention_16bit_qkv(const Exec& ex, const AttentionParams& p, const void* q, const void* k,
                         const void* v, const void* mask, void* out, bool out_16bit) {
  if (ex.precision != Precision::Fp16 && ex.precision != Precision::Bf16) {
    note_error("attention_16bit_qkv", "16-bit q, k and v need --precision fp16 or bf16");
    return;
  }
  if (p.batch <= 0 || p.heads <= 0 || p.q_len <= 0 || p.v_head_dim <= 0) return;
  const AttentionOut type = !out_16bit                        ? AttentionOut::F32
                            : ex.precision == Precision::Fp16 ? AttentionOut::F16
                                                              : AttentionOut::Bf16;
  if (p.kv_len <= 0) {
    const int64_t count = p.batch * p.heads * p.q_len * p.v_head_dim;
    attention_zero_kernel<<<blocks_for(count), kThreads, 0, ex.stream>>>(p, out, type);
    check_launch("attention_zero_kernel");
    return;
  }
  if (!attention_mma_16bit_qkv(ex, p, q, k, v, mask, out, type))
    note_error("attention_16bit_qkv",
               "no kernel takes these sizes (head sizes up to 128 without weights, and keys and values "
               "within the GPU's shared memory)");
}

}  // namespace aotc::rt::cuda
