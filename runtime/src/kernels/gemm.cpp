// gemm.cpp - single-precision matrix product with bias and clamp epilogue, on Eigen.
// A product is split into independent row (or column) blocks, one Eigen product per
// thread; Eigen itself runs single-threaded (no OpenMP).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <Eigen/Core>

#include "kernel_util.h"

namespace aotc::rt {
namespace detail {
namespace {

using RowMajorMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMajorMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
template <class Mat>
using ConstMap = Eigen::Map<const Mat, Eigen::Unaligned, Eigen::OuterStride<>>;
using OutMap = Eigen::Map<RowMajorMat, Eigen::Unaligned, Eigen::OuterStride<>>;

// c (+)= alpha * a * b. Eigen folds alpha into the kernel instead of a second pass.
template <class AMat, class BMat>
void product(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t rows, int64_t cols,
             int64_t depth, float alpha, bool accumulate, float* c, int64_t ldc) {
  const ConstMap<AMat> am(a, rows, depth, Eigen::OuterStride<>(lda));
  const ConstMap<BMat> bm(b, depth, cols, Eigen::OuterStride<>(ldb));
  OutMap cm(c, rows, cols, Eigen::OuterStride<>(ldc));
  if (accumulate) {
    cm.noalias() += alpha * am * bm;
  } else if (alpha == 1.0f) {
    cm.noalias() = am * bm;
  } else {
    cm.noalias() = alpha * am * bm;
  }
}

}  // namespace

void gemm_block_f32(const GemmParams& p, int64_t row0, int64_t row1, int64_t col0, int64_t col1,
                    const float* a, const float* b, const float* bias, float* c) {
  const int64_t rows = row1 - row0, cols = col1 - col0;
  if (rows <= 0 || cols <= 0) return;
  // A leading dimension of 0 means dense.
  const int64_t lda = p.lda > 0 ? p.lda : (p.trans_a ? p.m : p.k);
  const int64_t ldb = p.ldb > 0 ? p.ldb : (p.trans_b ? p.k : p.n);
  const int64_t ldc = p.ldc > 0 ? p.ldc : p.n;
  float* cb = c + row0 * ldc + col0;

  // The bias goes into C first so that the product accumulates onto it: no extra pass.
  // beta == 0 ignores the bias entirely (as torch's addmm does, even for NaN bias).
  const bool use_bias = p.bias_kind != BiasKind::None && bias != nullptr && p.beta != 0.0f;
  if (use_bias) {
    const float beta = p.beta;
    for (int64_t i = 0; i < rows; ++i) {
      float* crow = cb + i * ldc;
      switch (p.bias_kind) {
        case BiasKind::PerRow: {
          const float v = beta * bias[row0 + i];
          for (int64_t j = 0; j < cols; ++j) crow[j] = v;
          break;
        }
        case BiasKind::PerColumn: {
          const float* brow = bias + col0;
          for (int64_t j = 0; j < cols; ++j) crow[j] = beta * brow[j];
          break;
        }
        case BiasKind::Full: {
          const float* brow = bias + (row0 + i) * p.n + col0;
          for (int64_t j = 0; j < cols; ++j) crow[j] = beta * brow[j];
          break;
        }
        case BiasKind::None:
          break;
      }
    }
  }

  if (p.k > 0) {
    // op(A) rows [row0, row1): row-major when stored m x k, column-major when stored k x m.
    const float* ab = p.trans_a ? a + row0 : a + row0 * lda;
    // op(B) columns [col0, col1): row-major when stored k x n, column-major when n x k.
    const float* bb = p.trans_b ? b + col0 * ldb : b + col0;
    if (!p.trans_a && !p.trans_b) {
      product<RowMajorMat, RowMajorMat>(ab, lda, bb, ldb, rows, cols, p.k, p.alpha, use_bias, cb, ldc);
    } else if (!p.trans_a && p.trans_b) {
      product<RowMajorMat, ColMajorMat>(ab, lda, bb, ldb, rows, cols, p.k, p.alpha, use_bias, cb, ldc);
    } else if (p.trans_a && !p.trans_b) {
      product<ColMajorMat, RowMajorMat>(ab, lda, bb, ldb, rows, cols, p.k, p.alpha, use_bias, cb, ldc);
    } else {
      product<ColMajorMat, ColMajorMat>(ab, lda, bb, ldb, rows, cols, p.k, p.alpha, use_bias, cb, ldc);
    }
  } else if (!use_bias) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) cb[i * ldc + j] = 0.0f;
  }

  if (has_clamp(p.clamp_lo, p.clamp_hi)) {
    for (int64_t i = 0; i < rows; ++i) clamp_row(cb + i * ldc, cols, p.clamp_lo, p.clamp_hi);
  }
}

}  // namespace detail

void gemm_f32(ThreadPool& pool, const GemmParams& p, const float* a, const float* b, const float* bias,
              float* c) {
  using detail::ceil_div;
  if (p.m <= 0 || p.n <= 0) return;
  const double depth = static_cast<double>(p.k > 0 ? p.k : 1);
  const double flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * depth;
  if (pool.size() <= 1 || flops < 2.0 * detail::kGemmMinFlopsPerRange) {
    detail::gemm_block_f32(p, 0, p.m, 0, p.n, a, b, bias, c);
    return;
  }
  // Split the larger of M and N so that every block keeps a good shape; the blocks are
  // whole multiples of the register tile so that only the last block has a ragged edge.
  if (p.m >= p.n) {
    constexpr int64_t kRowUnit = 8;
    const double unit_flops = 2.0 * kRowUnit * static_cast<double>(p.n) * depth;
    const int64_t min_units = static_cast<int64_t>(detail::kGemmMinFlopsPerRange / unit_flops) + 1;
    pool.parallel_for(ceil_div(p.m, kRowUnit), min_units, [&](int64_t u0, int64_t u1) {
      detail::gemm_block_f32(p, u0 * kRowUnit, detail::min_i64(p.m, u1 * kRowUnit), 0, p.n, a, b, bias, c);
    });
  } else {
    constexpr int64_t kColUnit = 16;
    const double unit_flops = 2.0 * kColUnit * static_cast<double>(p.m) * depth;
    const int64_t min_units = static_cast<int64_t>(detail::kGemmMinFlopsPerRange / unit_flops) + 1;
    pool.parallel_for(ceil_div(p.n, kColUnit), min_units, [&](int64_t u0, int64_t u1) {
      detail::gemm_block_f32(p, 0, p.m, u0 * kColUnit, detail::min_i64(p.n, u1 * kColUnit), a, b, bias, c);
    });
  }
}

}  // namespace aotc::rt
