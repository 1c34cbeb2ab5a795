// conv2d_winograd.cpp - 3x3 stride-1 convolutions by Winograd F(2x2, 3x3) (Lavin & Gray):
// per 2x2 output tile, Y = A^T [U . V] A with V = B^T d B over the tile's 4x4 input patch d
// and U = G g G^T (conv2d_winograd_weights, applied at compile time). Summed over input
// channels, the 16 elementwise products become 16 GEMMs, C_xi (c_out x tiles) = U_xi
// (c_out x c_in) * V_xi (c_in x tiles), on the implicit GEMM's micro-kernel: 2.25x fewer
// multiplies than the direct product on even-sized outputs (1.7x on 7 x 7, where the 4 x 4
// tiles overhang), for three passes over memory (input transform, products, output
// transform). Why: the 3x3 convolutions are ~80% of resnet18's flops and ran at 55-85% of
// the sgemm peak; fewer flops beat a better kernel there.
//
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  A^T = [1 1 1 0; 0 1 -1 -1]
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

constexpr int64_t kNr = 16;  // panel width of the packed GEMM operand

// V for every tile of channel ci of one image, written into the 16 packed operands
// (element xi at v + xi * xi_stride, in the implicit GEMM's panel layout).
void input_transform(const Conv2dParams& p, const float* xc, int64_t ci, int64_t kc, int64_t tw, int64_t th,
                     int64_t tiles16, int64_t xi_stride, float* v) {
  const int64_t kb = ci / kc * kc, kcur = detail::min_i64(kc, p.c_in - kb);
  float* base = v + kb * tiles16 + (ci - kb) * kNr;
  const int64_t panel_stride = kcur * kNr;
  for (int64_t ty = 0; ty < th; ++ty) {
    const int64_t ih0 = 2 * ty - p.pad_h;
    for (int64_t tx = 0; tx < tw; ++tx) {
      const int64_t iw0 = 2 * tx - p.pad_w;
      float d[4][4];
      if (ih0 >= 0 && ih0 + 4 <= p.h_in && iw0 >= 0 && iw0 + 4 <= p.w_in) {
        for (int r = 0; r < 4; ++r)
          for (int c = 0; c < 4; ++c) d[r][c] = xc[(ih0 + r) * p.w_in + iw0 + c];
      } else {
        for (int r = 0; r < 4; ++r)
          for (int c = 0; c < 4; ++c) {
            const int64_t ih = ih0 + r, iw = iw0 + c;
            d[r][c] = ih >= 0 && ih < p.h_in && iw >= 0 && iw < p.w_in ? xc[ih * p.w_in + iw] : 0.0f;
          }
      }
      float t[4][4];  // B^T d
      for (int c = 0; c < 4; ++c) {
        t[0][c] = d[0][c] - d[2][c];
        t[1][c] = d[1][c] + d[2][c];
        t[2][c] = d[2][c] - d[1][c];
        t[3][c] = d[1][c] - d[3][c];
      }
      const int64_t tile = ty * tw + tx;
      float* out = base + tile / kNr * panel_stride + tile % kNr;
      for (int r = 0; r < 4; ++r) {  // (B^T d) B
        out[(4 * r + 0) * xi_stride] = t[r][0] - t[r][2];
        out[(4 * r + 1) * xi_stride] = t[r][1] + t[r][2];
        out[(4 * r + 2) * xi_stride] = t[r][2] - t[r][1];
        out[(4 * r + 3) * xi_stride] = t[r][1] - t[r][3];
      }
    }
  }
  // Columns past the last tile feed only outputs that are dropped, but must be numbers.
  const int64_t tiles = th * tw;
  for (int64_t tile = tiles; tile < tiles16; ++tile)
    for (int64_t xi = 0; xi < 16; ++xi) base[tile / kNr * panel_stride + tile % kNr + xi * xi_stride] = 0.0f;
}

// Output channel o of one image from the 16 products (element xi at c + xi * xi_stride,
// row o, tiles columns), with bias and clamp.
void output_transform(const Conv2dParams& p, const float* c, int64_t o, int64_t tiles, int64_t tw, int64_t th,
                      int64_t xi_stride, float b, bool clamp, float* yo) {
  const float* row = c + o * tiles;
  for (int64_t ty = 0; ty < th; ++ty)
    for (int64_t tx = 0; tx < tw; ++tx) {
      const int64_t tile = ty * tw + tx;
      float m[4][4];
      for (int xi = 0; xi < 16; ++xi) m[xi / 4][xi % 4] = row[xi * xi_stride + tile];
      float t[2][4];  // A^T m
      for (int col = 0; col < 4; ++col) {
        t[0][col] = m[0][col] + m[1][col] + m[2][col];
        t[1][col] = m[1][col] - m[2][col] - m[3][col];
      }
      for (int r = 0; r < 2; ++r) {
        const int64_t oh = 2 * ty + r;
        if (oh >= p.h_out) break;
        float out[2] = {t[r][0] + t[r][1] + t[r][2] + b, t[r][1] - t[r][2] - t[r][3] + b};
        for (int col = 0; col < 2; ++col) {
          const int64_t ow = 2 * tx + col;
          if (ow >= p.w_out) break;
          yo[oh * p.w_out + ow] = clamp ? detail::clamp_value(out[col], p.clamp_lo, p.clamp_hi) : out[col];
        }
      }
    }
}

}  // namespace

void conv2d_winograd_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* u,
                         const float* bias, float* y, float* scratch) {
  if (p.n <= 0 || p.c_out <= 0 || p.h_out <= 0 || p.w_out <= 0) return;
  const int64_t th = (p.h_out + 1) / 2, tw = (p.w_out + 1) / 2, tiles = th * tw;
  const int64_t tiles16 = detail::ceil_div(tiles, kNr) * kNr;
  const int64_t v_stride = p.c_in * tiles16, c_stride = p.c_out * tiles;
  float* v = scratch;
  float* c = scratch + 16 * v_stride;
  int64_t kc, nc;
  conv2d_gemm_blocking(p.c_in, tiles, kc, nc);
  const bool clamp = detail::has_clamp(p.clamp_lo, p.clamp_hi);
  const int64_t hw_in = p.h_in * p.w_in, hw_out = p.h_out * p.w_out;
  for (int64_t img = 0; img < p.n; ++img) {
    const float* xi_img = x + img * p.c_in * hw_in;
    float* y_img = y + img * p.c_out * hw_out;
    pool.parallel_for(p.c_in, detail::min_chunk_for(tiles * 64), [&](int64_t c0, int64_t c1) {
      for (int64_t ci = c0; ci < c1; ++ci)
        input_transform(p, xi_img + ci * hw_in, ci, kc, tw, th, tiles16, v_stride, v);
    });
    // The 16 products are independent and equal: whole products per thread, no packing.
    pool.parallel_for(16, 1, [&](int64_t x0, int64_t x1) {
      for (int64_t xi = x0; xi < x1; ++xi)
        detail::gemm_packed_f32(u + xi * p.c_out * p.c_in, p.c_in, v + xi * v_stride, tiles, p.c_in,
                                c + xi * c_stride, tiles, 0, p.c_out);
    });
    pool.parallel_for(p.c_out, detail::min_chunk_for(tiles * 64), [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o)
        output_transform(p, c, o, tiles, tw, th, c_stride, p.has_bias ? bias[o] : 0.0f, clamp,
                         y_img + o * hw_out);
    });
  }
}

}  // namespace aotc::rt
