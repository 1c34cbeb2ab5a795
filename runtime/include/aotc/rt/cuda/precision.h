// precision.h - aotc --precision for the CUDA target: how matrix products (GEMMs and the
// convolutions built on them) may round, mirroring torch.backends' switches. No CUDA
// headers: the compiler includes it to plan, the runtime to pick kernels and cuBLAS modes.
#pragma once

#include <cstdint>

namespace aotc::rt::cuda {

enum class Precision : int32_t {
  // Float32 accuracy (allow_tf32 = False): cuBLAS's float32 math, or, for linear layers where
  // the tuning run finds it faster, gemm_3xtf32 (each operand split into two tf32 parts on
  // tensor cores; its error against float64 measured at or below cuBLAS's: gemm_3xtf32.cu).
  Fp32 = 0,
  Tf32 = 1,  // float32 storage, tensor-core products with 10-bit mantissas (allow_tf32 = True)
  // Tensor-core products of float16 / bfloat16 operands with float32 accumulation.
  // Convolution weights are converted at compile time (the weights blob holds them in the
  // 16-bit type); activations stay float32 in memory and are rounded as the kernels read
  // them; the other GEMMs round both float32 operands inside cuBLAS
  // (CUBLAS_COMPUTE_32F_FAST_16F / _16BF).
  Fp16 = 2,
  Bf16 = 3,
};

}  // namespace aotc::rt::cuda
