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

}  // namespace aotc::rt::cuda
