// conv3d.cu - 3-d convolution (NCDHW) as GEMMs: per image and group, y_g (c_out/g x output
// volume) = W_g (c_out/g x K) col_g (K x output volume), K = c_in/g x kernel volume, where
// col is the input's unfolding (vol2col.cu) or, for a 1x1x1, stride-1, unpadded convolution,
// the input itself. Images, or groups, are one strided-batched GEMM (gemm_cublas.cu); the
// bias per output channel and the clamp are its epilogue, written straight into y. The
// columns of the whole batch are unfolded at once where they fit the scratch budget, else
// in chunks (conv_nd_plan.h). Depthwise convolutions take a direct kernel instead of a
// batch of tiny GEMMs (depthwise_conv3d.cu).
#include <aotc/rt/cuda/conv_nd_plan.h>
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdint>

namespace aotc::rt::cuda {

void conv3d_f32(const Exec& ex, const ConvNdParams& p, const float* x, const float* w, const float* bias,
                float* y, float* scratch) {
  const int64_t vol_in = conv_nd_volume(p.in), vol_out = conv_nd_volume(p.out);
  if (p.n <= 0 || p.c_out <= 0 || vol_out <= 0) return;
  if (p.groups <= 0 || p.c_in % p.groups || p.c_out % p.groups) {
    note_error("conv3d_f32", "the channels are not divisible by the groups");
    return;
  }
  if (conv_nd_is_depthwise(p)) return depthwise_conv3d_f32(ex.stream, p, x, w, bias, y);
  const bool pointwise = conv3d_cuda_is_pointwise(p);
  ConvNdChunks chunks = conv3d_chunks(p);
  if (pointwise) chunks = {p.n, vol_out, 0};
  if (chunks.images <= 0 || chunks.columns <= 0) {
    note_error("conv3d_f32", "one output position's columns exceed the scratch budget");
    return;
  }
  const int64_t groups = p.groups, cout_g = p.c_out / groups, cin_g = p.c_in / groups;
  const int64_t k = cin_g * conv_nd_volume(p.kernel);
  const int64_t rows = p.c_in * conv_nd_volume(p.kernel);  // of one image's columns
  const float* const b = p.has_bias ? bias : nullptr;
  for (int64_t img0 = 0; img0 < p.n; img0 += chunks.images) {
    const int64_t images = p.n - img0 < chunks.images ? p.n - img0 : chunks.images;
    for (int64_t c0 = 0; c0 < vol_out; c0 += chunks.columns) {
      const int64_t columns = vol_out - c0 < chunks.columns ? vol_out - c0 : chunks.columns;
      // B: this chunk's columns, rows ldb apart; one image's after another's.
      const float* cols = x + img0 * p.c_in * vol_in;
      if (!pointwise) {
        vol2col_f32(ex.stream, p, images, c0, columns, cols, scratch);
        cols = scratch;
      }
      const int64_t ldb = columns, image_stride = rows * ldb;
      float* const out = y + img0 * p.c_out * vol_out + c0;
      BatchedGemmParams bp;
      GemmParams& g = bp.gemm;
      g.m = cout_g;
      g.n = columns;
      g.k = k;
      g.lda = k;
      g.ldb = ldb;
      g.ldc = vol_out;
      g.bias_kind = b ? BiasKind::PerRow : BiasKind::None;
      g.clamp_lo = p.clamp_lo;
      g.clamp_hi = p.clamp_hi;
      if (groups == 1 || images >= groups) {
        // Per group, the images as the batch (the weights shared).
        bp.batch = images;
        bp.stride_a = 0;
        bp.stride_b = image_stride;
        bp.stride_c = p.c_out * vol_out;
        bp.stride_bias = 0;
        for (int64_t grp = 0; grp < groups; ++grp)
          batched_gemm_f32(ex, bp, w + grp * cout_g * k, cols + grp * k * ldb, b ? b + grp * cout_g : nullptr,
                           out + grp * cout_g * vol_out);
      } else {
        // Per image, the groups as the batch.
        bp.batch = groups;
        bp.stride_a = cout_g * k;
        bp.stride_b = k * ldb;
        bp.stride_c = cout_g * vol_out;
        bp.stride_bias = b ? cout_g : 0;
        for (int64_t i = 0; i < images; ++i)
          batched_gemm_f32(ex, bp, w, cols + i * image_stride, b, out + i * p.c_out * vol_out);
      }
    }
  }
}

}  // namespace aotc::rt::cuda
