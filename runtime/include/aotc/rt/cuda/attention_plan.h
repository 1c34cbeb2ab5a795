// attention_plan.h - the arena scratch of the CUDA attention (the scores of every
// (batch, head): batch x heads x q_len x kv_len floats; for a 16-bit output, the float32
// result after them): shared by the runtime
// (runtime/cuda/kernels/attention.cu) and the compiler, which plans it
// (compiler/ops/cuda/attention_cuda.cpp), so the two cannot disagree. No CUDA headers.
#pragma once

#include <aotc/rt/kernels.h>

#include <cstdint>

namespace aotc::rt::cuda {

// The scores' floats (the first part of the scratch).
inline int64_t attention_score_floats(const AttentionParams& p) {
  if (p.batch <= 0 || p.heads <= 0 || p.q_len <= 0 || p.kv_len <= 0) return 0;
  return p.batch * p.heads * p.q_len * p.kv_len;
}

// out_16bit (attention_16bit_output): then the float32 result too, batch x heads x q_len x
// v_head_dim floats after the scores, for the three launches' product before its rounding.
inline int64_t attention_scratch_bytes(const AttentionParams& p, bool out_16bit = false) {
  const int64_t scores = attention_score_floats(p);
  if (scores == 0) return 0;
  const int64_t result = out_16bit ? p.batch * p.heads * p.q_len * p.v_head_dim : 0;
  return (scores + result) * static_cast<int64_t>(sizeof(float));
}

// attention_mma_16bit.cu's blocks: what they hold in shared memory (bytes), the same on
// host and device.
constexpr int kAttentionMmaChunk = 64;    // keys a warp takes a pass
constexpr int kAttentionMmaMaxWarps = 8;  // warps a block: groups of 16 query rows x splits of the keys
struct AttentionMmaLayout {
  int groups, splits;  // warps: groups of 16 query rows x splits of the chunks
  bool in16;           // Q, K and V in the 16-bit type: no float32 staging
  int d;               // head size of the 16-bit rows (64 or 128, the kernel's D)
  int e4, ev4;         // float32 staging row strides: head_dim, v_head_dim rounded up to 4
  int sp;              // kv_len rounded up to a chunk: 16-bit rows (pad rows zero)
  int ld16;            // 16-bit row stride in elements: d + 8 (ldmatrix's rows on distinct banks)
  int part_floats;     // a warp's part when the keys are split: O (16 x d), maxima, sums
  int v32_floats;      // offset of the staged values (floats)
  // Offsets of the 16-bit keys and values (after the float32 staging or the parts,
  // whichever is larger), and the size.
  int64_t k16_bytes, v16_bytes, total_bytes;
};

inline AttentionMmaLayout attention_mma_layout(const AttentionParams& p, int groups, int splits, bool in16) {
  AttentionMmaLayout l;
  l.groups = groups;
  l.splits = splits;
  l.in16 = in16;
  l.d = p.head_dim <= 64 && p.v_head_dim <= 64 ? 64 : 128;
  l.e4 = static_cast<int>((p.head_dim + 3) / 4 * 4);
  l.ev4 = static_cast<int>((p.v_head_dim + 3) / 4 * 4);
  l.sp = static_cast<int>((p.kv_len + kAttentionMmaChunk - 1) / kAttentionMmaChunk * kAttentionMmaChunk);
  l.ld16 = l.d + 8;
  l.part_floats = 16 * l.d + 2 * 16;
  l.v32_floats = static_cast<int>(p.kv_len) * l.e4;
  const int64_t staging = in16 ? 0 : p.kv_len * (l.e4 + l.ev4) * 4;
  const int64_t parts = splits > 1 ? static_cast<int64_t>(groups) * splits * l.part_floats * 4 : 0;
  const int64_t f32 = ((staging > parts ? staging : parts) + 15) / 16 * 16;
  const int64_t rows16 = static_cast<int64_t>(l.sp) * l.ld16 * 2;
  l.k16_bytes = f32;
  l.v16_bytes = f32 + rows16;
  l.total_bytes = f32 + 2 * rows16;
  return l;
}

}  // namespace aotc::rt::cuda
