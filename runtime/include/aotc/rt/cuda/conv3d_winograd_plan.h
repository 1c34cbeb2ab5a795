// conv3d_winograd_plan.h - which CUDA 3-d convolutions run by Winograd (conv3d_winograd.cu),
// their transformed weights and the arena scratch they need: shared by the runtime and the
// compiler (compiler/passes/cuda/choose_conv3d_winograd.cpp transforms the weights at compile
// time; compiler/ops/cuda/conv3d_cuda.cpp plans the scratch), so the two cannot disagree. No
// CUDA headers.
//
// A 3x3x3 or 1x3x3 convolution of stride 1 (no groups, no dilation) is computed per output
// tile of t x t x t (t x t for 1x3x3) positions as Y = A^T [U . V] A, V = B^T d B over the
// tile's input patch in each dimension whose kernel is 3, U = G g G^T, with t = 2
// (F(2, 3): 4 points a dimension) or t = 4 (F(4, 3): 6 points). Summed over input channels,
// the elementwise products become one GEMM per point of the transformed domain,
// M_xi (c_out x tiles) = U_xi (c_out x c_in) * V_xi (c_in x tiles): F(4, 3) does 1/8 of the
// direct convolution's multiplies in 3-d and 1/4 in 2-d. Why: mc3_18's 3x3x3 and 1x3x3
// convolutions ran as vol2col + SGEMM, the unfolded columns (up to 350 MB a layer) written
// and read through HBM and the SGEMMs at the float32 FMA peak's limit.
#pragma once

#include <aotc/rt/cuda/conv_nd_plan.h>
#include <aotc/rt/kernels.h>

#include <cstdint>

namespace aotc::rt::cuda {

// Kernel 1x3x3 or 3x3x3, stride 1, dilation 1, no groups; a depth kernel of 1 has no depth
// padding (each output plane reads its input plane). Any padding of the 3s.
inline bool conv3d_winograd_applies(const ConvNdParams& p) {
  if (p.groups != 1 || p.n <= 0 || p.c_in <= 0 || p.c_out <= 0) return false;
  if (p.kernel[1] != 3 || p.kernel[2] != 3 || (p.kernel[0] != 1 && p.kernel[0] != 3)) return false;
  if (p.kernel[0] == 1 && p.pad[0] != 0) return false;
  for (int d = 0; d < 3; ++d) {
    if (p.stride[d] != 1 || p.dilation[d] != 1 || p.pad[d] < 0) return false;
    if (p.out[d] != p.in[d] + 2 * p.pad[d] - p.kernel[d] + 1 || p.out[d] <= 0) return false;
  }
  return true;
}

// Output positions a tile spans in dimension d, and points of the transformed domain there.
inline int64_t conv3d_winograd_tile_extent(const ConvNdParams& p, int64_t tile, int d) {
  return p.kernel[d] == 3 ? tile : 1;
}
inline int64_t conv3d_winograd_alpha(const ConvNdParams& p, int64_t tile, int d) {
  return p.kernel[d] == 3 ? tile + 2 : 1;
}
inline int64_t conv3d_winograd_points(const ConvNdParams& p, int64_t tile) {
  return conv3d_winograd_alpha(p, tile, 0) * conv3d_winograd_alpha(p, tile, 1) *
         conv3d_winograd_alpha(p, tile, 2);
}
// Tiles of one image (d, h, w tile counts multiplied).
inline int64_t conv3d_winograd_image_tiles(const ConvNdParams& p, int64_t tile) {
  int64_t tiles = 1;
  for (int d = 0; d < 3; ++d) {
    const int64_t e = conv3d_winograd_tile_extent(p, tile, d);
    tiles *= (p.out[d] + e - 1) / e;
  }
  return tiles;
}
// One image's transformed input and products: points x (c_in + c_out) x tiles floats.
inline int64_t conv3d_winograd_image_bytes(const ConvNdParams& p, int64_t tile) {
  return conv3d_winograd_points(p, tile) * (p.c_in + p.c_out) * conv3d_winograd_image_tiles(p, tile) *
         int64_t{4};
}
// Images transformed and multiplied at once: all of them where they fit kConvNdScratchBudget,
// else in equal chunks; 0 when one image alone exceeds it (then the GEMM path runs).
inline int64_t conv3d_winograd_chunk_images(const ConvNdParams& p, int64_t tile) {
  const int64_t image = conv3d_winograd_image_bytes(p, tile);
  if (image <= 0 || p.n <= 0) return 0;
  return conv_nd_even_chunk(p.n, kConvNdScratchBudget / image, 1);
}
inline int64_t conv3d_winograd_scratch_bytes(const ConvNdParams& p, int64_t tile) {
  return conv3d_winograd_chunk_images(p, tile) * conv3d_winograd_image_bytes(p, tile);
}

// u (points x c_out x c_in; point xi = (xd * alpha_h + xh) * alpha_w + xw) from w (c_out x
// c_in x kernel): u[xi][o][i] = (G (x) G (x) G) w[o][i], G only along the dimensions whose
// kernel is 3 (G: winograd_g, kernels/layouts.h); in double (F(4, 3)'s G has sixths and
// twenty-fourths).
inline void conv3d_winograd_weights(const ConvNdParams& p, int64_t tile, const float* w, float* u) {
  const double* const g = winograd_g(tile)[0];
  const int64_t ad = conv3d_winograd_alpha(p, tile, 0), ah = conv3d_winograd_alpha(p, tile, 1),
                aw = conv3d_winograd_alpha(p, tile, 2);
  const int64_t kd = p.kernel[0], plane = p.c_out * p.c_in;
  // The factor of G (or of the identity, for a depth kernel of 1) at point x, tap k.
  const auto factor = [&](int64_t alpha, int64_t x, int64_t k) { return alpha == 1 ? 1.0 : g[x * 3 + k]; };
  for (int64_t o = 0; o < p.c_out; ++o)
    for (int64_t i = 0; i < p.c_in; ++i) {
      const float* const wk = w + (o * p.c_in + i) * kd * 9;
      double gw[3][3][6];  // taps (d, h) x points along w
      for (int64_t a = 0; a < kd; ++a)
        for (int b = 0; b < 3; ++b)
          for (int64_t xw = 0; xw < aw; ++xw)
            gw[a][b][xw] = g[xw * 3] * wk[(a * 3 + b) * 3] + g[xw * 3 + 1] * wk[(a * 3 + b) * 3 + 1] +
                           g[xw * 3 + 2] * wk[(a * 3 + b) * 3 + 2];
      double ghw[3][6][6];  // taps d x points along h, w
      for (int64_t a = 0; a < kd; ++a)
        for (int64_t xh = 0; xh < ah; ++xh)
          for (int64_t xw = 0; xw < aw; ++xw)
            ghw[a][xh][xw] =
                g[xh * 3] * gw[a][0][xw] + g[xh * 3 + 1] * gw[a][1][xw] + g[xh * 3 + 2] * gw[a][2][xw];
      for (int64_t xd = 0; xd < ad; ++xd)
        for (int64_t xh = 0; xh < ah; ++xh)
          for (int64_t xw = 0; xw < aw; ++xw) {
            double v = 0;
            for (int64_t a = 0; a < kd; ++a) v += factor(ad, xd, a) * ghw[a][xh][xw];
            u[((xd * ah + xh) * aw + xw) * plane + o * p.c_in + i] = static_cast<float>(v);
          }
    }
}

}  // namespace aotc::rt::cuda
