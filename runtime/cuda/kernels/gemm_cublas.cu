// gemm_cublas.cu - row-major GEMM (GemmParams, as the CPU kernel takes it) on cuBLAS.
//
// cuBLAS's column-major sgemm computes the row-major C = op(A) op(B) as the column-major
// C^T = op(B)^T op(A)^T, B first, each operand's row stride its leading dimension, and
// bias_clamp_f32 adds any epilogue in one pass. Epilogues that cuBLASLt can fuse go
// through cuBLASLt instead, so that C is written once:
//   - a bias per column of C (linear layers), a relu, or both: cuBLASLt with the same
//     column-major formulation, whose bias runs along the rows of C^T, the columns of C;
//   - a bias per row of C (convolutions): cuBLASLt with row-major layouts, which
//     cuBLASLt 13.0 refuses for float32 (then the plain path).
// When cuBLASLt offers no algorithm the plain path runs. Exact float32 unless
// Exec::precision allows tensor cores: tf32, or fp16 / bf16, for which cuBLAS rounds the
// float32 operands to the 16-bit type and accumulates in float32.
// AOTC_CUDA_NO_LT=1 (read when a context is created) keeps every GEMM on the plain path,
// AOTC_CUDA_LT_NO_RELU=1 those with a relu, for comparisons.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdio>
#include <cstdlib>

namespace aotc::rt::cuda {
namespace {

// AOTC_CUDA_TRACE=1: say on stderr (at context creation, where GEMMs are planned) why a
// GEMM did not take the fused cuBLASLt path.
bool trace() {
  static const bool on = std::getenv("AOTC_CUDA_TRACE") != nullptr;
  return on;
}

// The largest power of two (up to 256) that divides the address: cuBLASLt's heuristic
// assumes 16-byte aligned operands unless told otherwise, and a view may start anywhere.
uint32_t alignment_of(const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  uint32_t align = 256;
  while (align > 4 && address % align != 0) align /= 2;
  return align;
}

// The compute type of a product at a precision.
cublasComputeType_t compute_type(Precision precision) {
  switch (precision) {
    case Precision::Tf32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case Precision::Fp16:
      return CUBLAS_COMPUTE_32F_FAST_16F;
    case Precision::Bf16:
      return CUBLAS_COMPUTE_32F_FAST_16BF;
    default:
      return CUBLAS_COMPUTE_32F;
  }
}

bool has_clamp(const GemmParams& p) {
  return p.clamp_lo != -__builtin_inff() || p.clamp_hi != __builtin_inff();
}

// The cuBLASLt epilogue for p, if it has one that cuBLASLt can fuse, and whether it needs
// the row-major layouts (a bias per row of C) or the column-major ones (anything else).
bool lt_epilogue(const GemmParams& p, const float* bias, cublasLtEpilogue_t* out, bool* row_major_layout) {
  if (p.residual) return false;  // added by the epilogue pass
  if (std::getenv("AOTC_CUDA_NO_LT")) return false;
  const bool fusable_bias =
      (p.bias_kind == BiasKind::PerRow || p.bias_kind == BiasKind::PerColumn) && bias && p.beta == 1.0f;
  if (p.bias_kind != BiasKind::None && !fusable_bias) return false;
  const bool with_bias = p.bias_kind != BiasKind::None;
  const bool relu = p.clamp_lo == 0.0f && p.clamp_hi == __builtin_inff();
  if (has_clamp(p) && !relu) return false;
  if (relu && std::getenv("AOTC_CUDA_LT_NO_RELU")) return false;
  if (!with_bias && !relu) return false;  // nothing to fuse: plain cuBLAS
  *out = with_bias ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS) : CUBLASLT_EPILOGUE_RELU;
  *row_major_layout = p.bias_kind == BiasKind::PerRow;
  return true;
}

// A layout of rows x cols (row-major with row stride ld, or column-major with column
// stride ld), batch matrices stride apart.
cublasLtMatrixLayout_t layout_of(bool row_major, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                 int64_t stride, cudaDataType_t type = CUDA_R_32F) {
  cublasLtMatrixLayout_t layout = nullptr;
  if (cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols),
                                 ld) != CUBLAS_STATUS_SUCCESS)
    return nullptr;
  const cublasLtOrder_t order = row_major ? CUBLASLT_ORDER_ROW : CUBLASLT_ORDER_COL;
  const int32_t count = static_cast<int32_t>(batch);
  bool ok = cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order) ==
            CUBLAS_STATUS_SUCCESS;
  if (ok && batch > 1)
    ok = cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count) ==
             CUBLAS_STATUS_SUCCESS &&
         cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                          sizeof stride) == CUBLAS_STATUS_SUCCESS;
  if (!ok) {
    cublasLtMatrixLayoutDestroy(layout);
    return nullptr;
  }
  return layout;
}

// The product with its epilogue through cuBLASLt; false (nothing enqueued) when cuBLASLt
// has no algorithm for it, and the caller takes the plain path.
// Row-major layouts: C = op(A) op(B) as stored. Column-major: C^T = op(B)^T op(A)^T, as
// the plain path computes it (the bias then runs along C's columns).
// ab_type: the operands' type (float32, or 16-bit ones multiplied with float32 accumulation).
bool lt_gemm(const Exec& ex, const BatchedGemmParams& bp, cublasLtEpilogue_t epilogue, bool row_major_layout,
             const void* a, const void* b, cudaDataType_t ab_type, const float* bias, float* c) {
  const GemmParams& p = bp.gemm;
  if (bias && alignment_of(bias) < 16) return false;  // cuBLASLt reads the bias in vectors
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  bool done = false;
  if (cublasLtMatmulDescCreate(&desc, ab_type == CUDA_R_32F ? compute_type(ex.precision) : CUBLAS_COMPUTE_32F,
                               CUDA_R_32F) == CUBLAS_STATUS_SUCCESS) {
    // The first and second operands of cuBLASLt's product: A, B (row-major) or B, A.
    const bool rm = row_major_layout;
    const bool t1 = rm ? p.trans_a : p.trans_b, t2 = rm ? p.trans_b : p.trans_a;
    const cublasOperation_t ta = t1 ? CUBLAS_OP_T : CUBLAS_OP_N, tb = t2 ? CUBLAS_OP_T : CUBLAS_OP_N;
    bool ok = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                             sizeof epilogue) == CUBLAS_STATUS_SUCCESS;
    if (ok && epilogue != CUBLASLT_EPILOGUE_RELU)
      ok = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) ==
           CUBLAS_STATUS_SUCCESS;
    if (rm) {
      la = layout_of(true, p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k, p.lda, bp.batch, bp.stride_a,
                     ab_type);
      lb = layout_of(true, p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n, p.ldb, bp.batch, bp.stride_b,
                     ab_type);
      lc = layout_of(true, p.m, p.n, p.ldc, bp.batch, bp.stride_c);
    } else {  // the row-major B (k x n, or n x k transposed) read column-major is n x k (k x n)
      la = layout_of(false, p.trans_b ? p.k : p.n, p.trans_b ? p.n : p.k, p.ldb, bp.batch, bp.stride_b,
                     ab_type);
      lb = layout_of(false, p.trans_a ? p.m : p.k, p.trans_a ? p.k : p.m, p.lda, bp.batch, bp.stride_a,
                     ab_type);
      lc = layout_of(false, p.n, p.m, p.ldc, bp.batch, bp.stride_c);
    }
    const uint64_t workspace = ex.workspace_bytes;
    ok = ok && la && lb && lc && cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                              sizeof workspace) == CUBLAS_STATUS_SUCCESS;
    const uint32_t align_first = alignment_of(rm ? a : b), align_second = alignment_of(rm ? b : a),
                   align_c = alignment_of(c);
    ok = ok &&
         cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_first,
                                              sizeof align_first) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_second,
                                              sizeof align_second) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c,
                                              sizeof align_c) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c,
                                              sizeof align_c) == CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    if (ok) {
      const cublasStatus_t h =
          cublasLtMatmulAlgoGetHeuristic(ex.lt, desc, la, lb, lc, lc, pref, 1, &result, &found);
      ok = h == CUBLAS_STATUS_SUCCESS && found > 0;
      if (!ok && trace())
        std::fprintf(stderr,
                     "aotc: cuBLASLt has no algorithm for %lldx%lldx%lld (batch %lld): %s, %d found\n",
                     static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
                     static_cast<long long>(bp.batch), cublasGetStatusString(h), found);
    } else if (trace()) {
      std::fprintf(stderr, "aotc: cuBLASLt descriptors for %lldx%lldx%lld could not be made\n",
                   static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k));
    }
    if (ok) {
      const float zero = 0.0f;
      const cublasStatus_t s =
          cublasLtMatmul(ex.lt, desc, &p.alpha, rm ? a : b, la, rm ? b : a, lb, &zero, c, lc, c, lc,
                         &result.algo, ex.workspace, ex.workspace_bytes, ex.stream);
      if (s != CUBLAS_STATUS_SUCCESS) note_error("cublasLtMatmul", cublasGetStatusString(s));
      done = true;
    }
  }
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (lc) cublasLtMatrixLayoutDestroy(lc);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (la) cublasLtMatrixLayoutDestroy(la);
  if (desc) cublasLtMatmulDescDestroy(desc);
  return done;
}

// The product and its epilogue, operands of type ab_type.
void gemm_impl(const Exec& ex, const BatchedGemmParams& bp, const void* a, const void* b,
               cudaDataType_t ab_type, const float* bias, float* c) {
  const GemmParams& p = bp.gemm;
  if (p.m <= 0 || p.n <= 0 || bp.batch <= 0) return;
  cublasLtEpilogue_t epilogue;
  bool row_major_layout = false;
  if (p.k > 0 && bp.stride_bias == 0 && lt_epilogue(p, bias, &epilogue, &row_major_layout) &&
      lt_gemm(ex, bp, epilogue, row_major_layout, a, b, ab_type, bias, c))
    return;
  const float zero = 0.0f;
  cublasStatus_t s;
  if (p.k == 0) {
    // No product: C is the bias term alone; zero it first.
    for (int64_t i = 0; i < bp.batch; ++i)
      cudaMemset2DAsync(c + i * bp.stride_c, static_cast<size_t>(p.ldc) * sizeof(float), 0,
                        static_cast<size_t>(p.n) * sizeof(float), static_cast<size_t>(p.m), ex.stream);
    check_launch("gemm (k = 0)");
  } else if (ab_type != CUDA_R_32F || ex.precision == Precision::Fp16 || ex.precision == Precision::Bf16) {
    // 16-bit operands, or float32 ones that cuBLAS rounds to 16 bits (the compute type
    // says so); float32 accumulation either way.
    s = cublasGemmStridedBatchedEx(
        ex.blas, p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
        static_cast<int>(p.n), static_cast<int>(p.m), static_cast<int>(p.k), &p.alpha, b, ab_type,
        static_cast<int>(p.ldb), bp.stride_b, a, ab_type, static_cast<int>(p.lda), bp.stride_a, &zero, c,
        CUDA_R_32F, static_cast<int>(p.ldc), bp.stride_c, static_cast<int>(bp.batch),
        ab_type == CUDA_R_32F ? compute_type(ex.precision) : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) note_error("cublasGemmStridedBatchedEx", cublasGetStatusString(s));
  } else if (bp.batch == 1) {
    s = cublasSgemm(ex.blas, p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                    static_cast<int>(p.n), static_cast<int>(p.m), static_cast<int>(p.k), &p.alpha,
                    static_cast<const float*>(b), static_cast<int>(p.ldb), static_cast<const float*>(a),
                    static_cast<int>(p.lda), &zero, c, static_cast<int>(p.ldc));
    if (s != CUBLAS_STATUS_SUCCESS) note_error("cublasSgemm", cublasGetStatusString(s));
  } else {
    s = cublasSgemmStridedBatched(ex.blas, p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                  p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(p.n),
                                  static_cast<int>(p.m), static_cast<int>(p.k), &p.alpha,
                                  static_cast<const float*>(b), static_cast<int>(p.ldb), bp.stride_b,
                                  static_cast<const float*>(a), static_cast<int>(p.lda), bp.stride_a, &zero,
                                  c, static_cast<int>(p.ldc), bp.stride_c, static_cast<int>(bp.batch));
    if (s != CUBLAS_STATUS_SUCCESS) note_error("cublasSgemmStridedBatched", cublasGetStatusString(s));
  }
  if (p.bias_kind != BiasKind::None || has_clamp(p) || p.residual)
    bias_clamp_f32(ex.stream, bp.batch, p.m, p.n, p.ldc, bp.stride_c, p.bias_kind, p.beta, bias,
                   bp.stride_bias, p.residual, p.ldr, p.clamp_lo, p.clamp_hi, c);
}

}  // namespace

void batched_gemm_f32(const Exec& ex, const BatchedGemmParams& bp, const float* a, const float* b,
                      const float* bias, float* c) {
  gemm_impl(ex, bp, a, b, CUDA_R_32F, bias, c);
}

void gemm_16bit(const Exec& ex, const GemmParams& p, const void* a, bool a_16bit, const void* b, bool b_16bit,
                const float* bias, float* c, void* scratch) {
  if (ex.precision != Precision::Fp16 && ex.precision != Precision::Bf16) {
    note_error("gemm_16bit", "16-bit operands need --precision fp16 or bf16");
    return;
  }
  // The float32 operands, rounded into scratch with their row strides kept.
  unsigned char* const bytes = static_cast<unsigned char*>(scratch);
  if (!a_16bit) {
    round_to_16bit(ex.stream, ex.precision, gemm_a_extent(p), static_cast<const float*>(a), bytes);
    a = bytes;
  }
  if (!b_16bit) {
    unsigned char* const at = bytes + gemm_16bit_b_offset(p, a_16bit);
    round_to_16bit(ex.stream, ex.precision, gemm_b_extent(p), static_cast<const float*>(b), at);
    b = at;
  }
  BatchedGemmParams bp;
  bp.gemm = p;
  bp.batch = 1;
  bp.stride_c = p.m * p.ldc;
  gemm_impl(ex, bp, a, b, ex.precision == Precision::Fp16 ? CUDA_R_16F : CUDA_R_16BF, bias, c);
}

void gemm_f32(const Exec& ex, const GemmParams& p, const float* a, const float* b, const float* bias,
              float* c) {
  BatchedGemmParams bp;
  bp.gemm = p;
  bp.batch = 1;
  bp.stride_c = p.m * p.ldc;
  batched_gemm_f32(ex, bp, a, b, bias, c);
}

}  // namespace aotc::rt::cuda
