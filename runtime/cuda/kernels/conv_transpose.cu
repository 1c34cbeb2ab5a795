// conv_transpose.cu - transposed convolution (1-d, 2-d and 3-d as NCDHW), as the CPU
// computes it: per image and group one GEMM col = W_g^T x_g ((c_out/g x kernel volume) x
// input volume; images, or groups, one strided-batched GEMM, gemm_cublas.cu), then col2vol.cu
// gathers each output's contributions, adds the bias and clamps. The columns of the whole
// batch are made at once where they fit the scratch budget, else in chunks of images, or of
// one group's output channels (conv_nd_plan.h). Depthwise ones (groups == c_in: a GEMM one
// deep) take a direct kernel (depthwise_conv_transpose.cu).
#include <aotc/rt/cuda/conv_nd_plan.h>
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdint>

namespace aotc::rt::cuda {

void conv_transpose_f32(const Exec& ex, const ConvNdParams& p, const float* x, const float* w,
                        const float* bias, float* y, float* scratch) {
  const int64_t vol_in = conv_nd_volume(p.in), vol_out = conv_nd_volume(p.out);
  if (p.n <= 0 || p.c_out <= 0 || vol_out <= 0) return;
  if (p.groups <= 0 || p.c_in % p.groups || p.c_out % p.groups) {
    note_error("conv_transpose_f32", "the channels are not divisible by the groups");
    return;
  }
  if (conv_nd_is_depthwise(p)) return depthwise_conv_transpose_f32(ex.stream, p, x, w, bias, y);
  const ConvNdChunks chunks = conv_transpose_chunks(p);
  if (chunks.images <= 0 || chunks.channels <= 0) {
    note_error("conv_transpose_f32", "one output channel's columns exceed the scratch budget");
    return;
  }
  const int64_t groups = p.groups, cout_g = p.c_out / groups, cin_g = p.c_in / groups;
  const int64_t taps = conv_nd_volume(p.kernel);
  const int64_t m = cout_g * taps;  // rows of one image-group's columns
  const float* const b = p.has_bias ? bias : nullptr;
  BatchedGemmParams bp;
  GemmParams& g = bp.gemm;
  g.n = vol_in;
  g.k = cin_g;
  g.trans_a = true;  // W_g is stored cin_g x m
  g.lda = m;
  g.ldb = vol_in;
  g.ldc = vol_in;
  if (p.c_out * conv_transpose_channel_bytes(p) <= kConvNdScratchBudget) {
    // Whole images: col is [image][group][m][vol_in].
    g.m = m;
    for (int64_t img0 = 0; img0 < p.n; img0 += chunks.images) {
      const int64_t images = p.n - img0 < chunks.images ? p.n - img0 : chunks.images;
      const float* const xi = x + img0 * p.c_in * vol_in;
      if (groups == 1 || images >= groups) {
        // Per group, the images as the batch (the weights shared).
        bp.batch = images;
        bp.stride_a = 0;
        bp.stride_b = p.c_in * vol_in;
        bp.stride_c = groups * m * vol_in;
        for (int64_t grp = 0; grp < groups; ++grp)
          batched_gemm_f32(ex, bp, w + grp * cin_g * m, xi + grp * cin_g * vol_in, nullptr,
                           scratch + grp * m * vol_in);
      } else {
        // Per image, the groups as the batch.
        bp.batch = groups;
        bp.stride_a = cin_g * m;
        bp.stride_b = cin_g * vol_in;
        bp.stride_c = m * vol_in;
        for (int64_t i = 0; i < images; ++i)
          batched_gemm_f32(ex, bp, w, xi + i * p.c_in * vol_in, nullptr, scratch + i * groups * m * vol_in);
      }
      col2vol_f32(ex.stream, p, images, 0, p.c_out, scratch, b, y + img0 * p.c_out * vol_out);
    }
    return;
  }
  // One image's columns exceed the budget: chunks of one group's output channels.
  bp.batch = 1;
  bp.stride_c = 0;
  for (int64_t img = 0; img < p.n; ++img)
    for (int64_t grp = 0; grp < groups; ++grp)
      for (int64_t c0 = 0; c0 < cout_g; c0 += chunks.channels) {
        const int64_t channels = cout_g - c0 < chunks.channels ? cout_g - c0 : chunks.channels;
        g.m = channels * taps;
        bp.stride_c = g.m * vol_in;
        batched_gemm_f32(ex, bp, w + grp * cin_g * m + c0 * taps, x + (img * p.c_in + grp * cin_g) * vol_in,
                         nullptr, scratch);
        col2vol_f32(ex.stream, p, 1, grp * cout_g + c0, channels, scratch, b, y + img * p.c_out * vol_out);
      }
}

}  // namespace aotc::rt::cuda
