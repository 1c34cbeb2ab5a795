// attention.cpp - fused scaled dot-product attention. Each work item is one block of up to
// kAttentionRowBlock query rows of one (batch, head): its scores (rows x kv_len) live in the
// thread's scratch, never in the arena, and go straight from the Q K^T product through the
// mask and a row softmax into the P V product. A whole key row is kept, so the softmax is
// exact (no running-max rescaling); kv_len * rows floats per thread is small for the
// sequence lengths of encoders (BERT 128-512, ViT 197).
//
// Both products run on the CPU micro-kernel (gemm_micro_kernel.h), the query rows and the
// probabilities read in place as its broadcast operand, over a head's keys (as 16-key panels
// of K^T, scaled as they are packed) and values (16-column panels) packed once per head when
// the heads alone give every thread work, else once per block of rows. (They were Eigen
// GEMM blocks, which packed both operands of both products for every block.) Values whose
// head width is a multiple of 16 are read in place: the panels are then strided column
// blocks of V.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>
#include <vector>

#include "gemm_micro_kernel.h"
#include "kernel_util.h"

namespace aotc::rt {
namespace {

using detail::kMr;
using detail::kNr;
using detail::Tile;

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

#if AOTC_KERNELS_AVX2
// s[j] = exp(s[j] - mx) for j < cols rounded down to 16, on 16 lanes; returns their sum.
// exp_f32x16 gives subnormals below about -87.3 (exp(-inf): 6e-39) where exp_f32x8 gives 0;
// those lanes are set to 0, so that a closed key (-inf) weighs exactly 0 on every machine.
// NaN lanes stay NaN (the comparison is unordered-true).
__attribute__((target("avx512f"))) float exp_shifted_sum16(float* s, int64_t cols, float mx) {
  const __m512 m16 = _mm512_set1_ps(mx), lo = _mm512_set1_ps(detail::exp_consts::kLo);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t j = 0; j + 16 <= cols; j += 16) {
    const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(s + j), m16);
    const __m512 e = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(d, lo, _CMP_NLT_UQ), detail::exp_f32x16(d));
    _mm512_storeu_ps(s + j, e);
    acc = _mm512_add_ps(acc, e);
  }
  // (Through memory: GCC 12 warns that _mm512_reduce_add_ps's extract reads an
  // uninitialised source.)
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  float sum = 0.0f;
  for (int i = 0; i < 8; ++i) sum += lanes[i] + lanes[i + 8];
  return sum;
}
#endif

// The exponentials of a masked row, exp(s - max), in place; returns 1 / their sum, the
// factor that makes them probabilities (the caller applies it, to the row or to the row's
// output). A row with every column masked gives zeros, as torch's _safe_softmax (SDPA) and
// _masked_softmax (the MHA fast path) do, not NaN.
float softmax_row_unscaled(float* s, int64_t cols, float mx) {
  if (mx == kNegInf) {
    std::memset(s, 0, static_cast<size_t>(cols) * sizeof(float));
    return 1.0f;
  }
  int64_t j = 0;
  float sum = 0.0f;
#if AOTC_KERNELS_AVX2
  // 16 lanes where AVX-512 is on: vit_b_16's attention spent 17% of its time here on 8.
  if (detail::use_avx512()) {
    sum = exp_shifted_sum16(s, cols, mx);
    j = cols / 16 * 16;
  }
  const __m256 m8 = _mm256_set1_ps(mx);
  __m256 acc = _mm256_setzero_ps();
  for (; j + 8 <= cols; j += 8) {
    const __m256 e = detail::exp_f32x8(_mm256_sub_ps(_mm256_loadu_ps(s + j), m8));
    _mm256_storeu_ps(s + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, acc);
  sum += ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
#endif
  for (; j < cols; ++j) {
    s[j] = detail::exp_f32(s[j] - mx);
    sum += s[j];
  }
  return 1.0f / sum;
}

void scale_row(float* x, int64_t count, float factor) {
  for (int64_t j = 0; j < count; ++j) x[j] *= factor;
}

struct Scratch {
  float* scores;  // kAttentionRowBlock x kv_len
  float* keys;    // kv_len rounded up to 16 x head_dim: the packed key panels
  float* values;  // kv_len x v_head_dim rounded up to 16: the packed value panels (unused in place)
};

// keys (cols x e, row stride ldk) as the micro-kernel's 16-column panels of K^T, times scale:
// panel q holds e rows of keys 16q..16q+15 (zero past cols), at packed + q * e * 16.
// Blocks of 8 keys x 8 dimensions go through an 8 x 8 transpose in registers; the element
// loop below did it at 8.5% of vit_b_16's attention time.
void pack_keys(const float* keys, int64_t ldk, int64_t cols, int64_t e, float scale, float* packed) {
  for (int64_t q = 0; q * kNr < cols; ++q) {
    float* panel = packed + q * e * kNr;
    const int64_t n = detail::min_i64(kNr, cols - q * kNr);
#if AOTC_KERNELS_AVX2
    if (n == kNr && e % 8 == 0) {
      const __m256 sv = _mm256_set1_ps(scale);
      for (int64_t half = 0; half < kNr; half += 8)
        for (int64_t d0 = 0; d0 < e; d0 += 8) {
          __m256 r[8];
          for (int64_t i = 0; i < 8; ++i)
            r[i] = _mm256_mul_ps(sv, _mm256_loadu_ps(keys + (q * kNr + half + i) * ldk + d0));
          detail::transpose8x8(r);  // r[i]: dimension d0 + i of the 8 keys
          for (int64_t i = 0; i < 8; ++i) _mm256_storeu_ps(panel + (d0 + i) * kNr + half, r[i]);
        }
      continue;
    }
#endif
    for (int64_t j = 0; j < kNr; ++j) {
      const float* src = keys + (q * kNr + j) * ldk;
      if (j < n) {
        for (int64_t d = 0; d < e; ++d) panel[d * kNr + j] = scale * src[d];
      } else {
        for (int64_t d = 0; d < e; ++d) panel[d * kNr + j] = 0.0f;
      }
    }
  }
}

// values (cols x ev, row stride ldv) as 16-column panels: panel q holds rows 0..cols-1 of
// values columns 16q..16q+15 (zero past ev), at packed + q * kv_len * 16.
void pack_values(const float* values, int64_t ldv, int64_t cols, int64_t ev, int64_t kv_len, float* packed) {
  for (int64_t q = 0; q * kNr < ev; ++q) {
    float* panel = packed + q * kv_len * kNr;
    const int64_t n = detail::min_i64(kNr, ev - q * kNr);
    for (int64_t j = 0; j < cols; ++j) {
      const float* src = values + j * ldv + q * kNr;
      float* dst = panel + j * kNr;
      for (int64_t c = 0; c < n; ++c) dst[c] = src[c];
      for (int64_t c = n; c < kNr; ++c) dst[c] = 0.0f;
    }
  }
}

// C (rows x cols, ldc) = A (rows x depth, lda) * B, B as 16-column panels of depth rows
// ldb apart (panel q at b + q * panel_stride); one depth block, no epilogue.
void tiles_product(const float* a, int64_t lda, int64_t rows, int64_t depth, int64_t cols, const float* b,
                   int64_t panel_stride, int64_t ldb, float* c, int64_t ldc) {
  Tile t{};
  t.lda = lda;
  t.ldb = ldb;
  t.kc = depth;
  t.ldc = ldc;
  t.first = t.last = true;
  for (int64_t q = 0; q * kNr < cols; ++q) {
    t.b = b + q * panel_stride;
    t.cols = detail::min_i64(kNr, cols - q * kNr);
    for (int64_t m = 0; m < rows; m += kMr) {
      const int64_t r = detail::min_i64(kMr, rows - m);
      t.a = a + m * lda;
      t.c = c + m * ldc + q * kNr;
      (t.cols > 8 ? detail::tile_fn<2>(r) : detail::tile_fn<1>(r))(t);
    }
  }
}

// The keys and values of head (b, h) that a block of rows ending at row `end` reads.
void pack_head(const AttentionParams& p, int64_t b, int64_t h, int64_t end, const float* k, const float* v,
               const Scratch& scratch) {
  const int64_t cols = p.causal ? detail::min_i64(p.kv_len, end) : p.kv_len;
  pack_keys(k + b * p.k_strides[0] + h * p.k_strides[1], p.k_strides[2], cols, p.head_dim, p.scale,
            scratch.keys);
  if (!attention_values_in_place(p))
    pack_values(v + b * p.v_strides[0] + h * p.v_strides[1], p.v_strides[2], cols, p.v_head_dim, p.kv_len,
                scratch.values);
}

// One block of query rows [row0, row0 + rows) of head (b, h), over the keys and values that
// pack_head put in the scratch.
void attend_block(const AttentionParams& p, int64_t b, int64_t h, int64_t row0, int64_t rows, const float* q,
                  const float* v, const void* mask, float* out, float* probs, const Scratch& scratch) {
  const int64_t S = p.kv_len;
  // Causal rows see keys up to their own index: later columns need no product at all.
  const int64_t cols = p.causal ? detail::min_i64(S, row0 + rows) : S;
  float* scores = scratch.scores;
  const float* qp = q + b * p.q_strides[0] + h * p.q_strides[1] + row0 * p.q_strides[2];
  float* op = out + b * p.out_strides[0] + h * p.out_strides[1] + row0 * p.out_strides[2];

  // scores (rows x cols) = Q (rows x E) (scale K)^T: the keys packed by pack_head with the
  // scale, as panels of head_dim rows (panels for more columns than cols are not read).
  tiles_product(qp, p.q_strides[2], rows, p.head_dim, cols, scratch.keys, p.head_dim * kNr, kNr, scores,
                cols);
  const auto* mask_bytes = static_cast<const unsigned char*>(mask);
  const int64_t mask_elem =
      p.mask_kind == AttentionMask::KeepIfTrue || p.mask_kind == AttentionMask::DropIfTrue
          ? 1
          : static_cast<int64_t>(sizeof(float));
  // Without the probabilities as an output, each row's 1 / sum scales its output row
  // (v_head_dim floats) after the product instead of its scores (kv_len floats).
  const bool weights_out = p.weights != AttentionWeights::None;
  float inv_sums[kAttentionRowBlock];
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = row0 + r;
    float* s = scores + r * cols;
    const void* mrow = nullptr;
    if (p.mask_kind != AttentionMask::None)
      mrow = mask_bytes + ((p.mask_batch_period > 0 ? b % p.mask_batch_period : b) * p.mask_strides[0] +
                           h * p.mask_strides[1] + i * p.mask_strides[2]) *
                              mask_elem;
    const int64_t visible = p.causal ? detail::min_i64(cols, i + 1) : cols;
    inv_sums[r] = softmax_row_unscaled(s, cols, mask_row(p, s, cols, visible, mrow, p.mask_strides[3]));
    if (weights_out) scale_row(s, cols, inv_sums[r]);
  }

  // out (rows x Ev) = P (rows x cols) V (cols x Ev), over the first cols rows of the value
  // panels that pack_head packed, or of V itself: its rows are the panels' rows.
  if (attention_values_in_place(p))
    tiles_product(scores, cols, rows, cols, p.v_head_dim, v + b * p.v_strides[0] + h * p.v_strides[1], kNr,
                  p.v_strides[2], op, p.out_strides[2]);
  else
    tiles_product(scores, cols, rows, cols, p.v_head_dim, scratch.values, p.kv_len * kNr, kNr, op,
                  p.out_strides[2]);
  if (!weights_out)
    for (int64_t r = 0; r < rows; ++r) scale_row(op + r * p.out_strides[2], p.v_head_dim, inv_sums[r]);

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
  // so no two threads add into the same row. Otherwise an item is a whole head (its keys and
  // values packed once) when there are heads enough for every thread, else a block of rows.
  const bool heads_in_item = p.weights == AttentionWeights::HeadMean;
  const bool head_items = !heads_in_item && p.batch * p.heads >= 2 * pool.size();
  const int64_t items = heads_in_item ? p.batch * blocks : p.batch * p.heads * (head_items ? 1 : blocks);
  const double item_flops = 2.0 * static_cast<double>(head_items ? p.q_len : block) *
                            static_cast<double>(p.kv_len) * static_cast<double>(p.head_dim + p.v_head_dim) *
                            static_cast<double>(heads_in_item ? p.heads : 1);
  const int64_t min_chunk = static_cast<int64_t>(detail::kGemmMinFlopsPerRange / item_flops) + 1;

  const AttentionScratchLayout layout = attention_thread_scratch_layout(p);  // (rows: block)
  const int64_t thread_floats = layout.bytes / static_cast<int64_t>(sizeof(float));
  const bool have_scratch =
      pool.thread_scratch(0) != nullptr && pool.thread_scratch_bytes() >= static_cast<size_t>(layout.bytes);
  // Without planned scratch (a pool without one, as in some unit tests) it comes from the
  // heap; compiled models always plan it.
  std::vector<float> heap;
  if (!have_scratch) heap.resize(static_cast<size_t>(pool.size() * thread_floats));

  pool.parallel_for(items, min_chunk, [&](int64_t i0, int64_t i1, int thread) {
    float* base = have_scratch ? reinterpret_cast<float*>(pool.thread_scratch(thread))
                               : heap.data() + thread * thread_floats;
    const Scratch scratch{base, base + layout.keys, base + layout.values};
    for (int64_t item = i0; item < i1; ++item) {
      if (head_items) {
        const int64_t b = item / p.heads, h = item % p.heads;
        pack_head(p, b, h, p.q_len, k, v, scratch);
        for (int64_t row0 = 0; row0 < p.q_len; row0 += block)
          attend_block(p, b, h, row0, detail::min_i64(block, p.q_len - row0), q, v, mask, out, probs,
                       scratch);
        continue;
      }
      const int64_t blk = item % blocks;
      const int64_t row0 = blk * block, rows = detail::min_i64(block, p.q_len - row0);
      if (heads_in_item) {
        const int64_t b = item / blocks;
        for (int64_t h = 0; h < p.heads; ++h) {
          pack_head(p, b, h, row0 + rows, k, v, scratch);
          attend_block(p, b, h, row0, rows, q, v, mask, out, probs, scratch);
        }
      } else {
        const int64_t bh = item / blocks;
        pack_head(p, bh / p.heads, bh % p.heads, row0 + rows, k, v, scratch);
        attend_block(p, bh / p.heads, bh % p.heads, row0, rows, q, v, mask, out, probs, scratch);
      }
    }
  });
}

}  // namespace aotc::rt
