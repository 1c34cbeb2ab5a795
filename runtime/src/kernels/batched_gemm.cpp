// batched_gemm.cpp - a batch of independent products sharing one shape (bmm, matmul).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {

void batched_gemm_f32(ThreadPool& pool, const BatchedGemmParams& bp, const float* a, const float* b,
                      const float* bias, float* c) {
  const GemmParams& p = bp.gemm;
  if (bp.batch <= 0 || p.m <= 0 || p.n <= 0) return;
  if (bp.batch == 1) {
    gemm_f32(pool, p, a, b, bias, c);
    return;
  }
  const double depth = static_cast<double>(p.k > 0 ? p.k : 1);
  const double flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * depth;
  const int threads = pool.size();
  // Many (or small) products: whole matrices per thread, which keeps each product's
  // packing local. Few large products: split each one over all threads instead.
  if (threads <= 1 || bp.batch >= 2 * threads || flops < 4.0 * detail::kGemmMinFlopsPerRange) {
    const int64_t min_chunk = static_cast<int64_t>(detail::kGemmMinFlopsPerRange / flops) + 1;
    pool.parallel_for(bp.batch, min_chunk, [&](int64_t i0, int64_t i1, int thread) {
      for (int64_t i = i0; i < i1; ++i) {
        detail::gemm_block_f32(p, 0, p.m, 0, p.n, a + i * bp.stride_a, b + i * bp.stride_b,
                               bias ? bias + i * bp.stride_bias : nullptr, c + i * bp.stride_c,
                               pool.thread_scratch(thread), pool.thread_scratch_bytes());
      }
    });
    return;
  }
  for (int64_t i = 0; i < bp.batch; ++i) {
    gemm_f32(pool, p, a + i * bp.stride_a, b + i * bp.stride_b, bias ? bias + i * bp.stride_bias : nullptr,
             c + i * bp.stride_c);
  }
}

}  // namespace aotc::rt
