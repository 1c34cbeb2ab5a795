// conv2d.cu - 2-d convolution: picks the path (conv2d_path in kernels_cuda.h). The GEMM
// paths compute, per image, Y (c_out x h_out*w_out) = W (c_out x K) * X' (K x h_out*w_out),
// where X' is the input itself for a pointwise convolution and its unfolding (im2col) for
// the others; the images are one strided-batched cuBLASLt call (gemm_cublas.cu), the bias
// and clamp one pass after it (a bias per row of the product is not cuBLASLt's epilogue).
// With 16-bit operands (--precision fp16 / bf16, conv2d_16bit) the weights come converted,
// X' is written in the 16-bit type (im2col, or one rounding pass for a 1x1 convolution),
// and cuBLAS multiplies on tensor cores with float32 accumulation into the float32 output.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

// Per image, Y (c_out x spatial) = W (c_out x depth) X' (depth x spatial); the weights are
// shared by every image.
BatchedGemmParams conv_gemm_params(const Conv2dParams& p, const float* residual) {
  const int64_t spatial = p.h_out * p.w_out;
  const int64_t depth = p.c_in * p.kernel_h * p.kernel_w;
  BatchedGemmParams g;
  g.gemm.m = p.c_out;
  g.gemm.n = spatial;
  g.gemm.k = depth;
  g.gemm.lda = depth;
  g.gemm.ldb = spatial;
  g.gemm.ldc = spatial;
  g.gemm.bias_kind = p.has_bias ? BiasKind::PerRow : BiasKind::None;
  g.gemm.clamp_lo = p.clamp_lo;
  g.gemm.clamp_hi = p.clamp_hi;
  g.gemm.residual = residual;  // y's layout
  g.gemm.ldr = spatial;
  g.batch = p.n;
  g.stride_a = 0;
  g.stride_b = depth * spatial;
  g.stride_c = p.c_out * spatial;
  return g;
}

}  // namespace

void conv2d_f32(const Exec& ex, const Conv2dParams& p, const float* x, const float* w, const float* bias,
                const float* residual, float* y, float* scratch) {
  cudaStream_t stream = ex.stream;
  const Conv2dPath path = conv2d_path(p);
  if ((path == Conv2dPath::Depthwise || path == Conv2dPath::Direct) && residual) {
    note_error("conv2d_f32", "a residual needs a GEMM convolution");
    return;
  }
  if (path == Conv2dPath::Depthwise) return depthwise_conv2d_f32(stream, p, x, w, bias, y);
  if (path == Conv2dPath::Direct) return direct_conv2d_f32(stream, p, x, w, bias, y);
  const float* unfolded = x;
  if (path == Conv2dPath::Im2colGemm) {
    im2col_f32(stream, p, x, scratch);
    unfolded = scratch;
  }
  batched_gemm_f32(ex, conv_gemm_params(p, residual), w, unfolded, bias, y);
}

void conv2d_16bit(const Exec& ex, const Conv2dParams& p, const float* x, const void* w, const float* bias,
                  const float* residual, float* y, void* scratch) {
  const Conv2dPath path = conv2d_path(p);
  if ((path != Conv2dPath::Pointwise && path != Conv2dPath::Im2colGemm) ||
      (ex.precision != Precision::Fp16 && ex.precision != Precision::Bf16)) {
    note_error("conv2d_16bit", "not a GEMM convolution at fp16 or bf16");
    return;
  }
  const int64_t spatial = p.h_out * p.w_out;
  const int64_t depth = p.c_in * p.kernel_h * p.kernel_w;
  if (p.n <= 0 || p.c_out <= 0 || spatial <= 0) return;
  if (spatial > INT32_MAX || depth > INT32_MAX || p.c_out > INT32_MAX || p.n > INT32_MAX) {
    note_error("conv2d_16bit", "the convolution is too large for cuBLAS's 32-bit sizes");
    return;
  }
  if (path == Conv2dPath::Im2colGemm)
    im2col_16bit(ex.stream, p, ex.precision, x, scratch);
  else
    round_to_16bit(ex.stream, ex.precision, p.n * p.c_in * p.h_in * p.w_in, x, scratch);
  batched_gemm_16bit_operands(ex, conv_gemm_params(p, residual), w, scratch, bias, y);
}

}  // namespace aotc::rt::cuda
