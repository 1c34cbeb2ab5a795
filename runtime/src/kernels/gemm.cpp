// gemm.cpp - single-precision matrix product with bias, residual and clamp epilogue, on Eigen.
// A product is split into independent row (or column) blocks, one Eigen product per
// thread; Eigen itself runs single-threaded (no OpenMP). Eigen's packing GEMM packs into
// the thread's scratch (ThreadPool::thread_scratch) instead of allocating: a run makes
// no heap allocation.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>

#include "kernel_util.h"

namespace aotc::rt {
namespace detail {
namespace {

using RowMajorMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMajorMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
template <class Mat>
using ConstMap = Eigen::Map<const Mat, Eigen::Unaligned, Eigen::OuterStride<>>;
using OutMap = Eigen::Map<RowMajorMat, Eigen::Unaligned, Eigen::OuterStride<>>;

// c (+)= alpha * a * b through Eigen's expressions. Eigen folds alpha into the kernel
// instead of a second pass; with alpha == 1 no scaled operand is formed at all (which
// the matrix-vector path would evaluate into a heap temporary).
template <class AMat, class BMat>
void product(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t rows, int64_t cols,
             int64_t depth, float alpha, bool accumulate, float* c, int64_t ldc) {
  const ConstMap<AMat> am(a, rows, depth, Eigen::OuterStride<>(lda));
  const ConstMap<BMat> bm(b, depth, cols, Eigen::OuterStride<>(ldb));
  OutMap cm(c, rows, cols, Eigen::OuterStride<>(ldc));
  if (alpha == 1.0f) {
    if (accumulate)
      cm.noalias() += am * bm;
    else
      cm.noalias() = am * bm;
  } else if (accumulate) {
    cm.noalias() += alpha * am * bm;
  } else {
    cm.noalias() = alpha * am * bm;
  }
}

using Index = Eigen::Index;
using Traits = Eigen::internal::gebp_traits<float, float>;

// Eigen's level-3 blocking with both packing buffers in caller memory: given non-null
// buffers, Eigen's GEMM uses them as they are and allocates nothing.
class ScratchBlocking : public Eigen::internal::level3_blocking<float, float> {
 public:
  ScratchBlocking(Index mc, Index nc, Index kc, float* block_a, float* block_b) {
    m_mc = mc;
    m_nc = nc;
    m_kc = kc;
    m_blockA = block_a;
    m_blockB = block_b;
  }
};

// Eigen's block sizes for a rows x cols x depth column-major product on this machine,
// capped to the limits that gemm_pack_bytes() plans for.
void pack_blocking(Index rows, Index cols, Index depth, Index& mc, Index& nc, Index& kc) {
  using namespace gemm_pack;
  kc = depth;
  mc = rows;
  nc = cols;
  Eigen::internal::computeProductBlockingSizes<float, float, 1>(kc, mc, nc, Index{1});
  if (kc > kMaxKc) {  // as many sweeps over depth as needed, of equal length (multiple of 8)
    const Index sweeps = (depth + kMaxKc - 1) / kMaxKc;
    kc = gemm_pack::min(kMaxKc, ((depth + sweeps - 1) / sweeps + 7) / 8 * 8);
  }
  const Index mc_cap = kMaxA / kc;
  if (mc > mc_cap) mc = mc_cap > Traits::mr ? mc_cap - mc_cap % Traits::mr : mc_cap;
  const Index nc_cap = kMaxB / kc;
  if (nc > nc_cap) nc = nc_cap > Traits::nr ? nc_cap - nc_cap % Traits::nr : nc_cap;
}

// res (column-major, rows x cols, stride res_stride) += alpha * lhs * rhs.
template <int LhsOrder, int RhsOrder>
void packed_product(const float* lhs, Index lhs_stride, const float* rhs, Index rhs_stride, Index rows,
                    Index cols, Index depth, float alpha, float* res, Index res_stride,
                    ScratchBlocking& blocking) {
  Eigen::internal::general_matrix_matrix_product<Index, float, LhsOrder, false, float, RhsOrder, false,
                                                 Eigen::ColMajor, 1>::run(rows, cols, depth, lhs, lhs_stride,
                                                                          rhs, rhs_stride, res, 1, res_stride,
                                                                          alpha, blocking);
}

// c (rows x cols, row-major) (+)= alpha * op(A) op(B) through Eigen's packing GEMM with
// the packing buffers in `pack`. Computes C^T = op(B)^T op(A)^T, which is column-major,
// as Eigen itself does for a row-major result. False (nothing done) when pack is too
// small for the blocking or misaligned.
bool packed_gemm(const GemmParams& p, const float* ab, int64_t lda, const float* bb, int64_t ldb,
                 int64_t rows, int64_t cols, bool accumulate, float* cb, int64_t ldc, unsigned char* pack,
                 size_t pack_bytes) {
  if (!pack || reinterpret_cast<uintptr_t>(pack) % gemm_pack::kAlign != 0) return false;
  Index mc, nc, kc;
  pack_blocking(cols, rows, p.k, mc, nc, kc);
  const int64_t a_bytes =
      gemm_pack::align_up(gemm_pack::min(cols, mc) * kc * static_cast<int64_t>(sizeof(float)));
  const int64_t b_bytes =
      gemm_pack::align_up(gemm_pack::min(rows, nc) * kc * static_cast<int64_t>(sizeof(float)));
  if (static_cast<uint64_t>(a_bytes + b_bytes) > pack_bytes) return false;
  if (!accumulate) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) cb[i * ldc + j] = 0.0f;
  }
  ScratchBlocking blocking(mc, nc, kc, reinterpret_cast<float*>(pack),
                           reinterpret_cast<float*>(pack + a_bytes));
  // op(B)^T is cols x depth: column-major (stride ldb) when B is stored k x n, row-major
  // when stored n x k. op(A)^T is depth x rows: column-major (stride lda) when A is
  // stored m x k, row-major when stored k x m.
  if (!p.trans_b && !p.trans_a) {
    packed_product<Eigen::ColMajor, Eigen::ColMajor>(bb, ldb, ab, lda, cols, rows, p.k, p.alpha, cb, ldc,
                                                     blocking);
  } else if (!p.trans_b && p.trans_a) {
    packed_product<Eigen::ColMajor, Eigen::RowMajor>(bb, ldb, ab, lda, cols, rows, p.k, p.alpha, cb, ldc,
                                                     blocking);
  } else if (p.trans_b && !p.trans_a) {
    packed_product<Eigen::RowMajor, Eigen::ColMajor>(bb, ldb, ab, lda, cols, rows, p.k, p.alpha, cb, ldc,
                                                     blocking);
  } else {
    packed_product<Eigen::RowMajor, Eigen::RowMajor>(bb, ldb, ab, lda, cols, rows, p.k, p.alpha, cb, ldc,
                                                     blocking);
  }
  return true;
}

}  // namespace

void gemm_block_f32(const GemmParams& p, int64_t row0, int64_t row1, int64_t col0, int64_t col1,
                    const float* a, const float* b, const float* bias, float* c, unsigned char* pack,
                    size_t pack_bytes) {
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
  // A residual joins the bias in C before the product accumulates onto both (after an
  // activation, gemm_activation_rows adds it instead).
  const bool act = p.activation != GemmActivation::None;
  const int64_t ldr = p.ldr > 0 ? p.ldr : p.n;
  if (p.residual && !act) {
    for (int64_t i = 0; i < rows; ++i) {
      float* crow = cb + i * ldc;
      const float* rrow = p.residual + (row0 + i) * ldr + col0;
      if (use_bias) {
        for (int64_t j = 0; j < cols; ++j) crow[j] += rrow[j];
      } else {
        for (int64_t j = 0; j < cols; ++j) crow[j] = rrow[j];
      }
    }
  }
  const bool accumulate = use_bias || (p.residual != nullptr && !act);

  if (p.k > 0) {
    // op(A) rows [row0, row1): row-major when stored m x k, column-major when stored k x m.
    const float* ab = p.trans_a ? a + row0 : a + row0 * lda;
    // op(B) columns [col0, col1): row-major when stored k x n, column-major when n x k.
    const float* bb = p.trans_b ? b + col0 * ldb : b + col0;
    // Products that pack go through the scratch; the others (tiny or matrix-vector, see
    // gemm_block_packs) through Eigen's expressions, which do not allocate for them. Eigen
    // allocates its packing buffers only if the scratch is missing (a pool without one,
    // e.g. in unit tests).
    if (gemm_block_packs(rows, cols, p.k, p.alpha) &&
        packed_gemm(p, ab, lda, bb, ldb, rows, cols, accumulate, cb, ldc, pack, pack_bytes)) {
      // done
    } else if (!p.trans_a && !p.trans_b) {
      product<RowMajorMat, RowMajorMat>(ab, lda, bb, ldb, rows, cols, p.k, p.alpha, accumulate, cb, ldc);
    } else if (!p.trans_a && p.trans_b) {
      product<RowMajorMat, ColMajorMat>(ab, lda, bb, ldb, rows, cols, p.k, p.alpha, accumulate, cb, ldc);
    } else if (p.trans_a && !p.trans_b) {
      product<ColMajorMat, RowMajorMat>(ab, lda, bb, ldb, rows, cols, p.k, p.alpha, accumulate, cb, ldc);
    } else {
      product<ColMajorMat, ColMajorMat>(ab, lda, bb, ldb, rows, cols, p.k, p.alpha, accumulate, cb, ldc);
    }
  } else if (!accumulate) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) cb[i * ldc + j] = 0.0f;
  }

  if (act) {
    gemm_activation_rows(p, cb, ldc, rows, cols, p.residual ? p.residual + row0 * ldr + col0 : nullptr, ldr);
  } else if (has_clamp(p.clamp_lo, p.clamp_hi)) {
    for (int64_t i = 0; i < rows; ++i) clamp_row(cb + i * ldc, cols, p.clamp_lo, p.clamp_hi);
  }
}

void gemm_activation_rows(const GemmParams& p, float* c, int64_t ldc, int64_t rows, int64_t cols,
                          const float* res, int64_t ldr) {
  const bool clamp = has_clamp(p.clamp_lo, p.clamp_hi);
  for (int64_t i = 0; i < rows; ++i) {
    float* crow = c + i * ldc;
    switch (p.activation) {
      case GemmActivation::GeluErf:
        gelu_erf_f32(crow, crow, cols);
        break;
      case GemmActivation::GeluTanh:
        gelu_tanh_f32(crow, crow, cols);
        break;
      case GemmActivation::Silu:
        silu_f32(crow, crow, cols);
        break;
      case GemmActivation::None:
        break;
    }
    if (res) {
      const float* rrow = res + i * ldr;
      for (int64_t j = 0; j < cols; ++j) crow[j] += rrow[j];
    }
    if (clamp) clamp_row(crow, cols, p.clamp_lo, p.clamp_hi);
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
    detail::gemm_block_f32(p, 0, p.m, 0, p.n, a, b, bias, c, pool.thread_scratch(0),
                           pool.thread_scratch_bytes());
    return;
  }
  // Split the larger of M and N so that every block keeps a good shape; the blocks are
  // whole multiples of the register tile so that only the last block has a ragged edge.
  if (p.m >= p.n) {
    constexpr int64_t kRowUnit = 8;
    const double unit_flops = 2.0 * kRowUnit * static_cast<double>(p.n) * depth;
    const int64_t min_units = static_cast<int64_t>(detail::kGemmMinFlopsPerRange / unit_flops) + 1;
    pool.parallel_for(ceil_div(p.m, kRowUnit), min_units, [&](int64_t u0, int64_t u1, int thread) {
      detail::gemm_block_f32(p, u0 * kRowUnit, detail::min_i64(p.m, u1 * kRowUnit), 0, p.n, a, b, bias, c,
                             pool.thread_scratch(thread), pool.thread_scratch_bytes());
    });
  } else {
    constexpr int64_t kColUnit = 16;
    const double unit_flops = 2.0 * kColUnit * static_cast<double>(p.m) * depth;
    const int64_t min_units = static_cast<int64_t>(detail::kGemmMinFlopsPerRange / unit_flops) + 1;
    pool.parallel_for(ceil_div(p.n, kColUnit), min_units, [&](int64_t u0, int64_t u1, int thread) {
      detail::gemm_block_f32(p, 0, p.m, u0 * kColUnit, detail::min_i64(p.n, u1 * kColUnit), a, b, bias, c,
                             pool.thread_scratch(thread), pool.thread_scratch_bytes());
    });
  }
}

}  // namespace aotc::rt
