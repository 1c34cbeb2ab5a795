// conv2d.cu - 2-d convolution: picks the path (conv2d_path in kernels_cuda.h). The GEMM
// paths compute, per image, Y (c_out x h_out*w_out) = W (c_out x K) * X' (K x h_out*w_out),
// where X' is the input itself for a pointwise convolution and its unfolding (im2col) for
// the others; the images are one strided-batched cuBLAS call, the bias and clamp one pass.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {

void conv2d_f32(const Exec& ex, const Conv2dParams& p, const float* x, const float* w, const float* bias,
                float* y, float* scratch) {
  cudaStream_t stream = ex.stream;
  const Conv2dPath path = conv2d_path(p);
  if (path == Conv2dPath::Depthwise) return depthwise_conv2d_f32(stream, p, x, w, bias, y);
  if (path == Conv2dPath::Direct) return direct_conv2d_f32(stream, p, x, w, bias, y);
  const int64_t spatial = p.h_out * p.w_out;
  const int64_t depth = p.c_in * p.kernel_h * p.kernel_w;
  const float* unfolded = x;
  if (path == Conv2dPath::Im2colGemm) {
    im2col_f32(stream, p, x, scratch);
    unfolded = scratch;
  }
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
  g.batch = p.n;
  g.stride_a = 0;  // the weights, shared by every image
  g.stride_b = depth * spatial;
  g.stride_c = p.c_out * spatial;
  batched_gemm_f32(ex, g, w, unfolded, bias, y);
}

}  // namespace aotc::rt::cuda
