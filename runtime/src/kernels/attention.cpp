// attention.cpp - fused scaled dot-product attention. Each work item is one block of up to
// kAttentionRowBlock query rows of one (batch, head): its scores (rows x kv_len) live in the
// thread's scratch, never in the arena, and go straight from the Q K^T product through the
// mask and a row softmax into the P V product. Both products are Eigen GEMM blocks packing
// into the same per-thread scratch (after the scores). A whole key row is kept, so the
// softmax is exact (no running-max rescaling); kv_len * rows floats per thread is small for
// the sequence lengths of encoders (BERT 128-512, ViT 197).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>
#include <vector>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

constexpr float kNegInf = -__builtin_inff();

// Masked scores of one query row, in place (the scale is already in, from the GEMM's
// alpha); columns >= visible are closed (causal). Returns the row maximum (-inf when every
// column is closed). Each loop is a plain pass the compiler vectorises.
float mask_row(const AttentionParams& p, float* s, int64_t cols, int64_t visible, const void* mask_row,
               int64_t mask_col_stride) {
  const auto* mf = static_cast<const float*>(mask_row);
  const auto* mb = static_cast<const uint8_t*>(mask_row);
  const int64_t mc = mask_col_stride;
  switch (p.mask_kind) {
    case AttentionMask::None:
      break;
    case AttentionMask::Additive:
      if (mc == 1) {
        for (int64_t j = 0; j < visible; ++j) s[j] += mf[j];
      } else {
        for (int64_t j = 0; j < visible; ++j) s[j] += mf[j * mc];
      }
      break;
    case AttentionMask::KeepIfTrue:
      for (int64_t j = 0; j < visible; ++j) s[j] = mb[j * mc] ? s[j] : kNegInf;
      break;
    case AttentionMask::DropIfTrue:
      for (int64_t j = 0; j < visible; ++j) s[j] = mb[j * mc] ? kNegInf : s[j];
      break;
    case AttentionMask::DropIfNonzero:
      for (int64_t j = 0; j < visible; ++j) s[j] = mf[j * mc] != 0.0f ? kNegInf : s[j];
      break;
  }
  for (int64_t j = visible; j < cols; ++j) s[j] = kNegInf;
  return detail::max_contiguous(s, visible);
}

// Softmax of a masked row in place. A row with every column masked gives zeros, as
// torch's _safe_softmax (SDPA) and _masked_softmax (the MHA fast path) do, not NaN.
void softmax_row(float* s, int64_t cols, float mx) {
  if (mx == kNegInf) {
    std::memset(s, 0, static_cast<size_t>(cols) * sizeof(float));
    return;
  }
  int64_t j = 0;
  float sum = 0.0f;
#if AOTC_KERNELS_AVX2
  const __m256 m8 = _mm256_set1_ps(mx);
  __m256 acc = _mm256_setzero_ps();
  for (; j + 8 <= cols; j += 8) {
    const __m256 e = detail::exp_f32x8(_mm256_sub_ps(_mm256_loadu_ps(s + j), m8));
    _mm256_storeu_ps(s + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, acc);
  sum = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
#endif
  for (; j < cols; ++j) {
    s[j] = detail::exp_f32(s[j] - mx);
    sum += s[j];
  }
  const float inv = 1.0f / sum;
  for (j = 0; j < cols; ++j) s[j] *= inv;
}

struct Scratch {
  float* scores;
  unsigned char* pack;
  size_t pack_bytes;
};

// One block of query rows [row0, row0 + rows) of head (b, h).
void attend_block(const AttentionParams& p, int64_t b, int64_t h, int64_t row0, int64_t rows, const float* q,
                  const float* k, const float* v, const void* mask, float* out, float* probs,
                  const Scratch& scratch) {
  const int64_t S = p.kv_len;
  // Causal rows see keys up to their own index: later columns need no product at all.
  const int64_t cols = p.causal ? detail::min_i64(S, row0 + rows) : S;
  float* scores = scratch.scores;
  const float* qp = q + b * p.q_strides[0] + h * p.q_strides[1] + row0 * p.q_strides[2];
  const float* kp = k + b * p.k_strides[0] + h * p.k_strides[1];
  const float* vp = v + b * p.v_strides[0] + h * p.v_strides[1];
  float* op = out + b * p.out_strides[0] + h * p.out_strides[1] + row0 * p.out_strides[2];

  if (cols > 0) {
    GemmParams qk;  // scores (rows x cols) = Q (rows x E) K^T (K stored cols x E)
    qk.m = rows;
    qk.n = cols;
    qk.k = p.head_dim;
    qk.trans_b = true;
    qk.lda = p.q_strides[2];
    qk.ldb = p.k_strides[2];
    qk.ldc = cols;
    qk.alpha = p.scale;  // folded into the product: no separate pass over the scores
    detail::gemm_block_f32(qk, 0, rows, 0, cols, qp, kp, nullptr, scores, scratch.pack, scratch.pack_bytes);
  }
  const auto* mask_bytes = static_cast<const unsigned char*>(mask);
  const int64_t mask_elem =
      p.mask_kind == AttentionMask::KeepIfTrue || p.mask_kind == AttentionMask::DropIfTrue
          ? 1
          : static_cast<int64_t>(sizeof(float));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = row0 + r;
    float* s = scores + r * cols;
    const void* mrow = nullptr;
    if (p.mask_kind != AttentionMask::None)
      mrow = mask_bytes + (b * p.mask_strides[0] + h * p.mask_strides[1] + i * p.mask_strides[2]) * mask_elem;
    const int64_t visible = p.causal ? detail::min_i64(cols, i + 1) : cols;
    softmax_row(s, cols, mask_row(p, s, cols, visible, mrow, p.mask_strides[3]));
  }

  GemmParams pv;  // out (rows x Ev) = P (rows x cols) V (cols x Ev)
  pv.m = rows;
  pv.n = p.v_head_dim;
  pv.k = cols;
  pv.lda = cols;
  pv.ldb = p.v_strides[2];
  pv.ldc = p.out_strides[2];
  detail::gemm_block_f32(pv, 0, rows, 0, p.v_head_dim, scores, vp, nullptr, op, scratch.pack,
                         scratch.pack_bytes);

  if (p.weights == AttentionWeights::None) return;
  const bool mean = p.weights == AttentionWeights::HeadMean;
  const float w = mean ? 1.0f / static_cast<float>(p.heads) : 1.0f;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = row0 + r;
    float* dst = mean ? probs + (b * p.q_len + i) * S : probs + ((b * p.heads + h) * p.q_len + i) * S;
    const float* s = scores + r * cols;
    if (mean && h > 0) {
      for (int64_t j = 0; j < cols; ++j) dst[j] += w * s[j];
    } else {
      for (int64_t j = 0; j < cols; ++j) dst[j] = w * s[j];
      for (int64_t j = cols; j < S; ++j) dst[j] = 0.0f;
    }
  }
}

}  // namespace

void attention_f32(ThreadPool& pool, const AttentionParams& p, const float* q, const float* k, const float* v,
                   const void* mask, float* out, float* probs) {
  if (p.batch <= 0 || p.heads <= 0 || p.q_len <= 0 || p.v_head_dim <= 0) return;
  if (p.kv_len <= 0) {  // nothing to attend to: torch gives zeros (an empty sum)
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t h = 0; h < p.heads; ++h)
        for (int64_t i = 0; i < p.q_len; ++i)
          std::memset(out + b * p.out_strides[0] + h * p.out_strides[1] + i * p.out_strides[2], 0,
                      static_cast<size_t>(p.v_head_dim) * sizeof(float));
    return;
  }
  const int64_t block = detail::min_i64(p.q_len, kAttentionRowBlock);
  const int64_t blocks = detail::ceil_div(p.q_len, block);
  // Averaged weights are summed over heads: one item then walks every head of its rows,
  // so no two threads add into the same row.
  const bool heads_in_item = p.weights == AttentionWeights::HeadMean;
  const int64_t items = p.batch * blocks * (heads_in_item ? 1 : p.heads);
  const double item_flops = 2.0 * static_cast<double>(block) * static_cast<double>(p.kv_len) *
                            static_cast<double>(p.head_dim + p.v_head_dim) *
                            static_cast<double>(heads_in_item ? p.heads : 1);
  const int64_t min_chunk = static_cast<int64_t>(detail::kGemmMinFlopsPerRange / item_flops) + 1;

  const int64_t scores_bytes = gemm_pack::align_up(block * p.kv_len * static_cast<int64_t>(sizeof(float)));
  const bool have_scratch =
      pool.thread_scratch(0) != nullptr &&
      pool.thread_scratch_bytes() >= static_cast<size_t>(attention_thread_scratch_bytes(p));
  // Without planned scratch (a pool without one, as in some unit tests) the scores come
  // from the heap; compiled models always plan it.
  std::vector<float> heap_scores;
  if (!have_scratch) heap_scores.resize(static_cast<size_t>(pool.size() * block * p.kv_len));

  pool.parallel_for(items, min_chunk, [&](int64_t i0, int64_t i1, int thread) {
    Scratch scratch;
    if (have_scratch) {
      unsigned char* base = pool.thread_scratch(thread);
      scratch = {reinterpret_cast<float*>(base), base + scores_bytes,
                 pool.thread_scratch_bytes() - static_cast<size_t>(scores_bytes)};
    } else {
      scratch = {heap_scores.data() + thread * block * p.kv_len, nullptr, 0};
    }
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t blk = item % blocks;
      const int64_t row0 = blk * block, rows = detail::min_i64(block, p.q_len - row0);
      if (heads_in_item) {
        const int64_t b = item / blocks;
        for (int64_t h = 0; h < p.heads; ++h)
          attend_block(p, b, h, row0, rows, q, k, v, mask, out, probs, scratch);
      } else {
        const int64_t bh = item / blocks;
        attend_block(p, bh / p.heads, bh % p.heads, row0, rows, q, k, v, mask, out, probs, scratch);
      }
    }
  });
}

}  // namespace aotc::rt
