// bias_clamp.cu - the epilogue of GEMMs and convolutions that cuBLAS computes: adds the
// bias (per row, per column or full; baddbmm's bias may differ per matrix) and a residual
// (transformer blocks: x + proj(...)), then clamps (fused relu / relu6 / hardtanh), in one
// pass over C.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/pointwise.cuh>

namespace aotc::rt::cuda {
namespace {

// A 2-d grid: y runs over the rows of every matrix (batch * m), x along a row, so a thread
// needs no division and a bias per row is one load per thread from L1.
__global__ void bias_clamp_kernel(int m, int n, int64_t ldc, int64_t stride_c, BiasKind kind, float beta,
                                  const float* __restrict__ bias, int64_t stride_bias,
                                  const float* __restrict__ residual, int64_t ldr, float lo, float hi,
                                  float* __restrict__ c) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= n) return;
  const int row = blockIdx.y % m;
  const int mat = blockIdx.y / m;
  float* at = c + mat * stride_c + row * ldc + col;
  float v = *at;
  if (bias) bias += mat * stride_bias;
  if (kind == BiasKind::PerRow)
    v += beta * bias[row];
  else if (kind == BiasKind::PerColumn)
    v += beta * bias[col];
  else if (kind == BiasKind::Full)
    v += beta * bias[static_cast<int64_t>(row) * n + col];
  if (residual) v += residual[static_cast<int64_t>(row) * ldr + col];
  *at = clamp_apply(v, lo, hi);
}

}  // namespace

void bias_clamp_f32(cudaStream_t stream, int64_t batch, int64_t m, int64_t n, int64_t ldc, int64_t stride_c,
                    BiasKind kind, float beta, const float* bias, int64_t stride_bias, const float* residual,
                    int64_t ldr, float clamp_lo, float clamp_hi, float* c) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (!bias) kind = BiasKind::None;
  if (kind == BiasKind::None) bias = nullptr;
  if (residual && batch != 1) {
    note_error("bias_clamp", "a residual needs a single matrix");
    return;
  }
  // Rows go in slices of at most 65535 (gridDim.y's limit).
  const int64_t rows = batch * m;
  for (int64_t first = 0; first < rows; first += 65535 / m * m) {
    const int64_t count = rows - first < 65535 / m * m ? rows - first : 65535 / m * m;
    if (count <= 0 || n > (int64_t{1} << 30)) {
      note_error("bias_clamp", "the matrix is too large");
      return;
    }
    bias_clamp_kernel<<<dim3(blocks_for(n), static_cast<unsigned>(count)), kThreads, 0, stream>>>(
        static_cast<int>(m), static_cast<int>(n), ldc, stride_c, kind, beta,
        bias ? bias + (first / m) * stride_bias : nullptr, stride_bias,
        residual ? residual + first * ldr : nullptr, ldr, clamp_lo, clamp_hi, c + (first / m) * stride_c);
    check_launch("bias_clamp_kernel");
  }
}

}  // namespace aotc::rt::cuda
