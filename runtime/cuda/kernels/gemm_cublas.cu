// gemm_cublas.cu - row-major GEMM (GemmParams, as the CPU kernel takes it) through cuBLAS,
// which is column-major: the row-major C = op(A) op(B) is the column-major
// C^T = op(B)^T op(A)^T, so B goes first and each operand's row stride is its leading
// dimension. The math mode of the handle (set from the model's precision) decides between
// exact float32 and tf32.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

const char* status_name(cublasStatus_t s) { return cublasGetStatusString(s); }

bool needs_epilogue(const GemmParams& p) {
  return p.bias_kind != BiasKind::None || p.clamp_lo != -__builtin_inff() || p.clamp_hi != __builtin_inff();
}

}  // namespace

void batched_gemm_f32(cublasHandle_t blas, cudaStream_t stream, const BatchedGemmParams& bp, const float* a,
                      const float* b, const float* bias, float* c) {
  const GemmParams& p = bp.gemm;
  if (p.m <= 0 || p.n <= 0 || bp.batch <= 0) return;
  const float zero = 0.0f;
  cublasStatus_t s;
  if (p.k == 0) {
    // No product: C is the bias term alone; zero it first.
    for (int64_t i = 0; i < bp.batch; ++i)
      cudaMemset2DAsync(c + i * bp.stride_c, static_cast<size_t>(p.ldc) * sizeof(float), 0,
                        static_cast<size_t>(p.n) * sizeof(float), static_cast<size_t>(p.m), stream);
    check_launch("gemm (k = 0)");
  } else if (bp.batch == 1) {
    s = cublasSgemm(blas, p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                    static_cast<int>(p.n), static_cast<int>(p.m), static_cast<int>(p.k), &p.alpha, b,
                    static_cast<int>(p.ldb), a, static_cast<int>(p.lda), &zero, c, static_cast<int>(p.ldc));
    if (s != CUBLAS_STATUS_SUCCESS) note_error("cublasSgemm", status_name(s));
  } else {
    s = cublasSgemmStridedBatched(
        blas, p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
        static_cast<int>(p.n), static_cast<int>(p.m), static_cast<int>(p.k), &p.alpha, b,
        static_cast<int>(p.ldb), bp.stride_b, a, static_cast<int>(p.lda), bp.stride_a, &zero, c,
        static_cast<int>(p.ldc), bp.stride_c, static_cast<int>(bp.batch));
    if (s != CUBLAS_STATUS_SUCCESS) note_error("cublasSgemmStridedBatched", status_name(s));
  }
  if (needs_epilogue(p))
    bias_clamp_f32(stream, bp.batch, p.m, p.n, p.ldc, bp.stride_c, p.bias_kind, p.beta, bias, p.clamp_lo,
                   p.clamp_hi, c);
}

void gemm_f32(cublasHandle_t blas, cudaStream_t stream, const GemmParams& p, const float* a, const float* b,
              const float* bias, float* c) {
  BatchedGemmParams bp;
  bp.gemm = p;
  bp.batch = 1;
  bp.stride_c = p.m * p.ldc;
  batched_gemm_f32(blas, stream, bp, a, b, bias, c);
}

}  // namespace aotc::rt::cuda
