// kernels/sequence.h - the sequence-model kernels: embedding, fused attention, LSTM/GRU recurrence.
#pragma once

#include <cstdint>

namespace aotc::rt {

class ThreadPool;

// ---------------------------------------------------------------- sequence models (transformers, RNNs)
// embedding: y[i, :] = weight[ids[i], :] for count ids into a vocab x dim table. ids are
// int64 (or int32 when ids_int32); an id outside [0, vocab) gives a row of zeros (torch
// raises; a compiled model cannot, and must never read outside the table).
struct EmbeddingParams {
  int64_t count = 0, dim = 0, vocab = 0;
  bool ids_int32 = false;
};
void embedding_f32(ThreadPool& pool, const EmbeddingParams& p, const void* ids, const float* weight,
                   float* y);

// embedding_bag (nn.EmbeddingBag, F.embedding_bag): y[b, :] = the sum, mean or maximum of
// the table rows of ids[start_b .. end_b), bag b's range of the count ids: start_b =
// offsets[b], end_b = offsets[b + 1], the last bag's end count (or offsets[bags] with
// include_last_offset, whose offsets_count is bags + 1). Sum rows may be scaled by
// per_sample_weights[i] (null: 1). Ids equal to padding_idx (-1: none) are skipped, and so
// are ids outside [0, vocab) (torch raises; a compiled model cannot, and must never read
// outside the table): neither adds to a sum nor counts in a mean. An empty bag gives
// zeros. A bag's rows add in order; a NaN in a maximum wins. Offsets are clamped to [0,
// count] and each bag's end to at least its start (torch requires them ascending from 0).
enum class EmbeddingBagMode : int32_t { Sum = 0, Mean = 1, Max = 2 };
struct EmbeddingBagParams {
  int64_t count = 0, dim = 0, vocab = 0, bags = 0, offsets_count = 0;
  EmbeddingBagMode mode = EmbeddingBagMode::Sum;
  int64_t padding_idx = -1;
  bool ids_int32 = false, offsets_int32 = false;
};
void embedding_bag_f32(ThreadPool& pool, const EmbeddingBagParams& p, const void* ids, const void* offsets,
                       const float* weight, const float* per_sample_weights, float* y);

// Fused scaled dot-product attention, one pass per (batch, head, block of query rows):
// scores = scale * Q K^T (+ mask) in a per-thread block, a row softmax, then out = P V, all
// through the GEMM kernel. Q/K/V/out are read and written through strides, so a packed QKV
// projection ([B, T, 3, H, E]) and a [B, T, H, E] output need no transposing copies.
enum class AttentionMask : int32_t {
  None = 0,
  Additive = 1,       // float mask added to the scaled scores (SDPA float masks)
  KeepIfTrue = 2,     // bool mask: false means masked (SDPA bool masks)
  DropIfTrue = 3,     // bool mask: true means masked (MultiheadAttention, key padding)
  DropIfNonzero = 4,  // float mask: non-zero means masked (torch's native MHA fast path)
};
// Whether and how the probabilities (after softmax) are returned.
enum class AttentionWeights : int32_t {
  None = 0,
  PerHead = 1,   // probs[b, h, i, j], dense
  HeadMean = 2,  // probs[b, i, j] averaged over heads, dense
};
struct AttentionParams {
  int64_t batch = 1, heads = 1;  // the (up to) two leading index dims
  int64_t q_len = 0, kv_len = 0, head_dim = 0, v_head_dim = 0;
  float scale = 1.0f;
  bool causal = false;  // query i sees keys j <= i (on top of any mask)
  // Element strides over (batch, head, row); the last (head_dim) axis is contiguous.
  int64_t q_strides[3] = {}, k_strides[3] = {}, v_strides[3] = {}, out_strides[3] = {};
  AttentionMask mask_kind = AttentionMask::None;
  int64_t mask_strides[4] = {};  // over (batch, head, query row, key column); 0 broadcasts
  // Non-zero: the mask repeats over the batch with this period (batch b reads the mask's
  // b % period): a Swin transformer's shift mask, one per window of an image, for every
  // image's windows (passes/fuse_attention.cpp).
  int64_t mask_batch_period = 0;
  AttentionWeights weights = AttentionWeights::None;
};
// mask: float or bool (one byte) as mask_kind says, null for None; probs: as `weights` says.
void attention_f32(ThreadPool& pool, const AttentionParams& p, const float* q, const float* k, const float* v,
                   const void* mask, float* out, float* probs);

// Recurrent layers (aten::lstm / aten::gru, one direction of one layer). The input
// projection of every time step, gates_x = x W_ih^T + b, is one GEMM done before; this
// kernel runs the recurrence over time: per step one GEMM h W_hh^T and the gate math.
// Gate order is torch's: LSTM i, f, g, o; GRU r, z, n.
enum class RecurrentCell : int32_t { Lstm = 0, Gru = 1 };
struct RecurrentParams {
  RecurrentCell cell = RecurrentCell::Lstm;
  int64_t steps = 0, batch = 0, hidden = 0;
  bool reverse = false;  // walk time from the last step to the first
  // Element strides of gates_x (gate_count * hidden values per (step, batch)) and of y
  // (hidden values per (step, batch)), so batch_first and bidirectional outputs need no copy.
  int64_t gx_step_stride = 0, gx_batch_stride = 0;
  int64_t y_step_stride = 0, y_batch_stride = 0;
};
inline int64_t recurrent_gate_count(RecurrentCell cell) { return cell == RecurrentCell::Lstm ? 4 : 3; }
// w_hh: gates * hidden x hidden; b_hh: gates * hidden or null (for the LSTM it may be folded
// into gates_x; the GRU needs b_hn inside r * (W_hn h + b_hn)); h0, c0: batch x hidden or null
// (zeros); y: every step's h; h_n, c_n: the last step's h and c (c only for the LSTM), or null.
void recurrent_f32(ThreadPool& pool, const RecurrentParams& p, const float* gates_x, const float* w_hh,
                   const float* b_hh, const float* h0, const float* c0, float* y, float* h_n, float* c_n,
                   float* scratch);

}  // namespace aotc::rt
