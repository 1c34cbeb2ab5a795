// epilogue_16bit.cu - the epilogue of a GEMM that writes its result in the 16-bit type of
// --precision fp16 / bf16 (gemm_16bit_output), where cuBLASLt could not take it (no
// algorithm for the fused form, or a bias that is not 16-byte aligned): adds the bias and
// the residual, both in that type, to the product already written, then clamps. A thread
// per element: a fallback, off the paths the models take.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/lowp.cuh>
#include <aotc/rt/cuda/pointwise.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

template <class T>
__global__ void epilogue_16bit_kernel(int64_t m, int64_t n, int64_t ldc, const T* __restrict__ bias,
                                      const T* __restrict__ residual, int64_t ldr, float lo, float hi,
                                      T* __restrict__ c) {
  const int64_t count = m * n, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    const int64_t row = i / n, col = i - row * n;
    T* const at = c + row * ldc + col;
    float v = widen(*at);
    if (bias) v += widen(bias[col]);
    if (residual) v += widen(residual[row * ldr + col]);
    *at = round_to<T>(clamp_apply(v, lo, hi));
  }
}

template <class T>
void launch(cudaStream_t stream, int64_t m, int64_t n, int64_t ldc, const void* bias, const void* residual,
            int64_t ldr, float lo, float hi, void* c) {
  constexpr int64_t kMostBlocks = 65535;
  const int64_t blocks = static_cast<int64_t>(blocks_for(m * n));
  epilogue_16bit_kernel<T>
      <<<static_cast<unsigned>(blocks < kMostBlocks ? blocks : kMostBlocks), kThreads, 0, stream>>>(
          m, n, ldc, static_cast<const T*>(bias), static_cast<const T*>(residual), ldr, lo, hi,
          static_cast<T*>(c));
  check_launch("epilogue_16bit_kernel");
}

}  // namespace

void epilogue_16bit(cudaStream_t stream, Precision precision, int64_t m, int64_t n, int64_t ldc,
                    const void* bias, const void* residual, int64_t ldr, float clamp_lo, float clamp_hi,
                    void* c) {
  if (m <= 0 || n <= 0) return;
  if (precision == Precision::Fp16)
    launch<__half>(stream, m, n, ldc, bias, residual, ldr, clamp_lo, clamp_hi, c);
  else if (precision == Precision::Bf16)
    launch<__nv_bfloat16>(stream, m, n, ldc, bias, residual, ldr, clamp_lo, clamp_hi, c);
  else
    note_error("epilogue_16bit", "16-bit outputs need --precision fp16 or bf16");
}

}  // namespace aotc::rt::cuda
