// attention_plan.h - the arena scratch of the CUDA attention (the scores of every
// (batch, head): batch x heads x q_len x kv_len floats): shared by the runtime
// (runtime/cuda/kernels/attention.cu) and the compiler, which plans it
// (compiler/ops/cuda/attention_cuda.cpp), so the two cannot disagree. No CUDA headers.
#pragma once

#include <aotc/rt/kernels.h>

#include <cstdint>

namespace aotc::rt::cuda {

inline int64_t attention_scratch_bytes(const AttentionParams& p) {
  if (p.batch <= 0 || p.heads <= 0 || p.q_len <= 0 || p.kv_len <= 0) return 0;
  return p.batch * p.heads * p.q_len * p.kv_len * static_cast<int64_t>(sizeof(float));
}

}  // namespace aotc::rt::cuda
