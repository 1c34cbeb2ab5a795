// lt_gelu_check.cu - which GELU cuBLASLt's GELU_BIAS epilogue computes: erf's (torch's
// default nn.GELU) or the tanh approximation. One float32 GEMM of known inputs, the
// epilogue against both formulas on the host in double.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  const int m = 64, n = 256, k = 64;  // column-major D (m x n) = A (m x k) B (k x n) + bias[m]
  std::vector<float> a(m * k), b(k * n), bias(m);
  for (int i = 0; i < m * k; ++i) a[i] = std::sin(0.37f * i) * 0.6f;
  for (int i = 0; i < k * n; ++i) b[i] = std::cos(0.11f * i) * 0.5f;
  for (int i = 0; i < m; ++i) bias[i] = 0.05f * (i - 32);
  float *da, *db, *dbias, *dd;
  cudaMalloc(&da, a.size() * 4), cudaMalloc(&db, b.size() * 4), cudaMalloc(&dbias, m * 4),
      cudaMalloc(&dd, m * n * 4);
  cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dbias, bias.data(), m * 4, cudaMemcpyHostToDevice);
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
  cublasLtMatmulDesc_t desc;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias);
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, m);
  const float one = 1.0f, zero = 0.0f;
  void* ws;
  cudaMalloc(&ws, 1 << 22);
  cublasStatus_t s =
      cublasLtMatmul(lt, desc, &one, da, la, db, lb, &zero, dd, ld, dd, ld, nullptr, ws, 1 << 22, 0);
  cudaDeviceSynchronize();
  std::printf("cublasLtMatmul GELU_BIAS: %s\n", cublasGetStatusString(s));
  std::vector<float> d(m * n);
  cudaMemcpy(d.data(), dd, d.size() * 4, cudaMemcpyDeviceToHost);
  double e_erf = 0, e_tanh = 0, norm = 0, max_erf = 0, max_tanh = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double x = bias[i];
      for (int t = 0; t < k; ++t) x += double(a[i + t * m]) * b[t + j * k];
      const double g_erf = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
      const double g_tanh = 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
      const double got = d[i + j * m];
      e_erf += (got - g_erf) * (got - g_erf), e_tanh += (got - g_tanh) * (got - g_tanh),
          norm += g_erf * g_erf;
      max_erf = std::fmax(max_erf, std::fabs(got - g_erf)),
      max_tanh = std::fmax(max_tanh, std::fabs(got - g_tanh));
    }
  std::printf("rel L2 vs erf GELU %.3e (max abs %.3e); vs tanh GELU %.3e (max abs %.3e)\n",
              std::sqrt(e_erf / norm), max_erf, std::sqrt(e_tanh / norm), max_tanh);
  return 0;
}
