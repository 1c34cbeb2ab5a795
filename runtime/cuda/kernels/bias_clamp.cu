// bias_clamp.cu - the epilogue of GEMMs and convolutions that cuBLAS computes: adds the
// bias (per row, per column or full) and clamps (fused relu / relu6 / hardtanh), in one
// pass over C.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/pointwise.cuh>

namespace aotc::rt::cuda {
namespace {

__global__ void bias_clamp_kernel(int64_t total, int64_t m, int64_t n, int64_t ldc, int64_t stride_c,
                                  BiasKind kind, float beta, const float* __restrict__ bias, float lo,
                                  float hi, float* __restrict__ c) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t col = i % n;
  const int64_t row = (i / n) % m;
  const int64_t mat = i / (n * m);
  float* at = c + mat * stride_c + row * ldc + col;
  float v = *at;
  if (kind == BiasKind::PerRow)
    v += beta * bias[row];
  else if (kind == BiasKind::PerColumn)
    v += beta * bias[col];
  else if (kind == BiasKind::Full)
    v += beta * bias[row * n + col];
  *at = clamp_apply(v, lo, hi);
}

}  // namespace

void bias_clamp_f32(cudaStream_t stream, int64_t batch, int64_t m, int64_t n, int64_t ldc, int64_t stride_c,
                    BiasKind kind, float beta, const float* bias, float clamp_lo, float clamp_hi, float* c) {
  const int64_t total = batch * m * n;
  if (total <= 0) return;
  if (!bias) kind = BiasKind::None;
  bias_clamp_kernel<<<blocks_for(total), kThreads, 0, stream>>>(total, m, n, ldc, stride_c, kind, beta, bias,
                                                                clamp_lo, clamp_hi, c);
  check_launch("bias_clamp_kernel");
}

}  // namespace aotc::rt::cuda
