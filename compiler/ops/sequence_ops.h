// sequence_ops.h - what the transformer and RNN lowerings share: building blocks that
// add one IR op each (layer norm, fused attention) and the multi-head attention block that
// both aten::_native_multi_head_attention and aten::_transformer_encoder_layer_fwd use.
#pragma once

#include <aotc/rt/kernels.h>

#include <optional>

#include "gemm.h"
#include "op_registry.h"
#include "strided_view.h"

namespace aotc::ops {

// y = layer_norm(x) over its last `cols` values (rows = numel / cols); gamma, beta may be -1.
// Returns y (float32, x's shape).
int make_layer_norm(LowerContext& ctx, int x, int64_t cols, int gamma, int beta, double eps);

// Fails unless normalized_shape (layer_norm's, rms_norm's) is the trailing shape of x.
void check_normalized_shape(const LowerContext& ctx, const ir::Shape& x,
                            const std::vector<int64_t>& normalized);

// One fused attention op. q/k/v/out are read and written through params' strides; the
// offsets (elements) let q, k and v be slices of one packed projection. mask may be -1;
// probs is the weights output (-1 unless params.weights asks for it).
struct AttentionOperands {
  int q = -1, k = -1, v = -1, mask = -1, out = -1, probs = -1;
  int64_t q_offset = 0, k_offset = 0, v_offset = 0;
};
ir::Op& make_attention(LowerContext& ctx, const rt::AttentionParams& p, const AttentionOperands& a);
// The same op, not yet in a graph (for passes that build one: fuse_attention).
ir::Op attention_op(const rt::AttentionParams& p, const AttentionOperands& a);
// Where the attention kernels read a [batch..., rows, cols] query, key or value: the IR
// value, the element offset into it, the strides of its batch dims and of its rows (the
// last axis contiguous).
struct AttentionRead {
  int id = -1;
  int64_t offset = 0;
  std::vector<int64_t> batch_strides;
  int64_t row_stride = 0;
};
// `view` (sizes [batch..., rows, cols]) as the kernels can read it: no flipped dim, a
// contiguous last axis and rows that do not overlap (cuBLAS's leading dimension), else
// nullopt. A batch dim of size 1 reads as stride 0, a single row's stride as cols (never
// stepped, but cuBLAS checks it).
std::optional<AttentionRead> attention_read(const StridedView& view);
// p's q, k, v and output strides ((batch, head) from the reads' batch strides and
// out_batch_strides, folded to two; rows from the reads, the output's v_head_dim apart) and
// a's q, k, v with their offsets.
void place_attention_inputs(rt::AttentionParams& p, AttentionOperands& a, const AttentionRead& q,
                            const AttentionRead& k, const AttentionRead& v,
                            const std::vector<int64_t>& out_batch_strides);
// Folds the batch dims in front of the attention's rows to at most two (the kernel's batch
// and head), merging neighbours that every operand's strides walk as one; false when they
// do not fold.
bool fold_attention_batch(ir::Shape& batch, std::vector<std::vector<int64_t>*> strides);
// The code generators' shared pieces (the CPU's in scaled_dot_product_attention.cpp, CUDA's
// in cuda/attention_cuda.cpp): an "attention" op's rt::AttentionParams as C++, and its
// operands "q, k, v, mask, out, probs" (q, k, v at their offsets; absent ones nullptr).
ParamsCode attention_params_code(const ir::Op& op);
std::string attention_operands(const EmitContext& e, const ir::Op& op);
// Its sizes (batch, heads, lengths, head dims) as rt::AttentionParams, for scratch sizes.
rt::AttentionParams attention_params_of(const ir::Op& op);
// The params of an "embedding" and a "layer_norm" op as C++, for both targets' generators
// (embedding.cpp, layer_norm.cpp).
ParamsCode embedding_params_code(const ir::Op& op);
// An "embedding_bag" op's rt::EmbeddingBagParams as C++, and its operands "ids, offsets,
// weight, per_sample_weights, y" (per_sample_weights nullptr when absent), for both targets'
// generators (embedding_bag.cpp, cuda/embedding_bag_cuda.cpp).
ParamsCode embedding_bag_params_code(const ir::Op& op);
std::string embedding_bag_operands(const EmitContext& e, const ir::Op& op);
ParamsCode layer_norm_params_code(const ir::Op& op);
// A "recurrent" op's rt::RecurrentParams as C++ (p.reverse as given), and one direction's
// operands "gates_x, w_hh, b_hh, h0, c0, y, h_n, c_n" (absent ones nullptr; h0, c0, y,
// h_n and c_n at the direction's offsets), for both targets' generators (recurrent.cpp,
// cuda/recurrent_cuda.cpp).
ParamsCode recurrent_params_code(const ir::Op& op, bool reverse);
std::string recurrent_operands(const EmitContext& e, const ir::Op& op, int64_t direction);

// torch's multi-head self/cross attention block on [B, T, D] inputs (batch first), as the
// native fast path computes it: QKV projection (one GEMM when query, key and value are the
// same tensor), attention with an optional mask of mask_type 0 ([T, S]), 1 ([B, S]) or 2
// (broadcastable to [B, H, T, S]), in which true / non-zero means masked, and the output
// projection, to which `residual` (-1: none) is added in the GEMM epilogue.
struct MultiHeadAttentionArgs {
  int query = -1, key = -1, value = -1;
  int64_t embed_dim = 0, heads = 0;
  int qkv_weight = -1, qkv_bias = -1, proj_weight = -1, proj_bias = -1;
  int mask = -1;
  int64_t mask_type = -1;  // -1: from the mask's rank
  bool need_weights = false, average_weights = true;
  int residual = -1;
};
struct MultiHeadAttentionResult {
  int out = -1, weights = -1;
};
MultiHeadAttentionResult lower_multi_head_attention(LowerContext& ctx, const MultiHeadAttentionArgs& a);

}  // namespace aotc::ops
