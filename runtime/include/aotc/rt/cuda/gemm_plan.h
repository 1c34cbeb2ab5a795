// gemm_plan.h - the arena scratch of a CUDA GEMM with 16-bit operands (gemm_16bit,
// --precision fp16 / bf16): each float32 operand rounded to 16 bits, A's first, then B's,
// each from a 256-byte boundary. Shared by the runtime (gemm_cublas.cu) and the compiler,
// which plans it (compiler/ops/cuda/gemm_cuda.cpp). No CUDA headers.
#pragma once

#include <aotc/rt/kernels.h>

#include <cstdint>

namespace aotc::rt::cuda {

// Elements of a row-major operand of rows x width with row stride ld, first to last.
inline int64_t operand_extent(int64_t rows, int64_t width, int64_t ld) {
  return rows <= 0 || width <= 0 ? 0 : (rows - 1) * ld + width;
}
inline int64_t gemm_a_extent(const GemmParams& p) {
  return p.trans_a ? operand_extent(p.k, p.m, p.lda) : operand_extent(p.m, p.k, p.lda);
}
inline int64_t gemm_b_extent(const GemmParams& p) {
  return p.trans_b ? operand_extent(p.n, p.k, p.ldb) : operand_extent(p.k, p.n, p.ldb);
}
inline int64_t round_up_256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// Bytes of scratch before B's rounded copy, and in all.
inline int64_t gemm_16bit_b_offset(const GemmParams& p, bool a_16bit) {
  return a_16bit ? 0 : round_up_256(gemm_a_extent(p) * 2);
}
inline int64_t gemm_16bit_scratch_bytes(const GemmParams& p, bool a_16bit, bool b_16bit) {
  return gemm_16bit_b_offset(p, a_16bit) + (b_16bit ? 0 : round_up_256(gemm_b_extent(p) * 2));
}

}  // namespace aotc::rt::cuda
