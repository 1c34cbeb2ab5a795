// conv2d_winograd.cpp - 3x3 stride-1 convolutions by Winograd (Lavin & Gray), with 2x2
// output tiles, F(2x2, 3x3), or 4x4 ones, F(4x4, 3x3): per t x t output tile,
// Y = A^T [U . V] A with V = B^T d B over the tile's (t + 2) x (t + 2) input patch d and
// U = G g G^T (conv2d_winograd_weights, applied at compile time). Summed over input
// channels, the (t + 2)^2 elementwise products become as many GEMMs,
// C_xi (c_out x tiles) = U_xi (c_out x c_in) * V_xi (c_in x tiles), on the implicit GEMM's
// micro-kernel: 2.25x (t = 2) or 4x (t = 4) fewer multiplies than the direct product on
// outputs that the tiles divide, for three passes over memory (input transform, products,
// output transform). Why: the 3x3 convolutions are ~80% of resnet18's flops and ran at
// 55-85% of the sgemm peak; fewer flops beat a better kernel there.
//
// F(2x2, 3x3): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  A^T = [1 1 1 0; 0 1 -1 -1]
// F(4x4, 3x3) (points 0, 1, -1, 2, -2 and infinity):
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

constexpr int64_t kNr = 16;  // panel width of the packed GEMM operand

// The transformed input is (points) packed GEMM operands, element xi of tile `tile` of
// channel ci at base + tile / 16 * panel_stride + tile % 16 + xi * xi_stride: the panel
// layout of the depth block holding ci (conv2d_gemm_blocking's kc).
struct PanelBase {
  float* base;
  int64_t panel_stride;
};
PanelBase panel_base(float* v, int64_t ci, int64_t c_in, int64_t kc, int64_t tiles16) {
  const int64_t kb = ci / kc * kc, kcur = detail::min_i64(kc, c_in - kb);
  return {v + kb * tiles16 + (ci - kb) * kNr, kcur * kNr};
}
// The columns of the products: the tiles of a group of images (conv2d_winograd_group), image
// after image. An input transform writes one image's, from column col0; cols16 is cols
// rounded up to a whole panel.
struct Columns {
  int64_t col0, cols, cols16;
};
// Columns past the group's last tile feed only outputs that are dropped, but must be
// numbers: the transform of the group's last image zeroes them.
void zero_tail(const PanelBase& pb, const Columns& cs, int64_t tiles, int64_t points, int64_t xi_stride) {
  if (cs.col0 + tiles != cs.cols) return;
  for (int64_t col = cs.cols; col < cs.cols16; ++col)
    for (int64_t xi = 0; xi < points; ++xi)
      pb.base[col / kNr * pb.panel_stride + col % kNr + xi * xi_stride] = 0.0f;
}

// F(4x4, 3x3) in one dimension, for float and for __m256 (GCC's vector operators): B^T d
// over the 6 values of a patch row or column, and A^T m over 6 products.
template <typename V>
inline void f4_input_1d(const V d[6], V r[6]) {
  const V t1 = d[4] - 4.0f * d[2], t2 = d[3] - 4.0f * d[1];
  const V t3 = d[4] - d[2], t4 = 2.0f * (d[3] - d[1]);
  r[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  r[1] = t1 + t2;
  r[2] = t1 - t2;
  r[3] = t3 + t4;
  r[4] = t3 - t4;
  r[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}
template <typename V>
inline void f4_output_1d(const V m[6], V y[4]) {
  const V s12 = m[1] + m[2], d12 = m[1] - m[2], s34 = m[3] + m[4], d34 = m[3] - m[4];
  y[0] = m[0] + s12 + s34;
  y[1] = d12 + 2.0f * d34;
  y[2] = s12 + 4.0f * s34;
  y[3] = d12 + 8.0f * d34 + m[5];
}

// F(4x4, 3x3): V for every tile of channel ci (scalar form: targets without AVX2).
[[maybe_unused]] void input_transform_f4(const Conv2dParams& p, const float* xc, int64_t ci, int64_t kc,
                                         int64_t tw, int64_t th, const Columns& cs, int64_t xi_stride,
                                         float* v) {
  const PanelBase pb = panel_base(v, ci, p.c_in, kc, cs.cols16);
  for (int64_t ty = 0; ty < th; ++ty)
    for (int64_t tx = 0; tx < tw; ++tx) {
      const int64_t ih0 = 4 * ty - p.pad_h, iw0 = 4 * tx - p.pad_w;
      float e[6][6];  // d B, row by row
      for (int r = 0; r < 6; ++r) {
        float d[6];
        const int64_t ih = ih0 + r;
        for (int c = 0; c < 6; ++c) {
          const int64_t iw = iw0 + c;
          d[c] = ih >= 0 && ih < p.h_in && iw >= 0 && iw < p.w_in ? xc[ih * p.w_in + iw] : 0.0f;
        }
        f4_input_1d(d, e[r]);
      }
      const int64_t tile = cs.col0 + ty * tw + tx;
      float* out = pb.base + tile / kNr * pb.panel_stride + tile % kNr;
      for (int c = 0; c < 6; ++c) {  // B^T (d B), column by column
        const float col[6] = {e[0][c], e[1][c], e[2][c], e[3][c], e[4][c], e[5][c]};
        float t[6];
        f4_input_1d(col, t);
        for (int r = 0; r < 6; ++r) out[(6 * r + c) * xi_stride] = t[r];
      }
    }
  zero_tail(pb, cs, th * tw, 36, xi_stride);
}

// F(4x4, 3x3): one output channel of one image from the 36 products (scalar form), with
// bias, the residual ro (yo's layout, or null) and clamp. row: the image's first tile in
// product 0 of the channel's row; product xi is xi_stride further.
[[maybe_unused]] void output_transform_f4(const Conv2dParams& p, const float* row, int64_t tw, int64_t th,
                                          int64_t xi_stride, float b, bool clamp, const float* ro,
                                          float* yo) {
  for (int64_t ty = 0; ty < th; ++ty)
    for (int64_t tx = 0; tx < tw; ++tx) {
      const int64_t tile = ty * tw + tx;
      float t[4][6];  // A^T m, column by column
      for (int col = 0; col < 6; ++col) {
        float m[6], a[4];
        for (int r = 0; r < 6; ++r) m[r] = row[(6 * r + col) * xi_stride + tile];
        f4_output_1d(m, a);
        for (int r = 0; r < 4; ++r) t[r][col] = a[r];
      }
      for (int r = 0; r < 4; ++r) {
        const int64_t oh = 4 * ty + r;
        if (oh >= p.h_out) break;
        float out[4];
        f4_output_1d(t[r], out);
        for (int col = 0; col < 4; ++col) {
          const int64_t ow = 4 * tx + col;
          if (ow >= p.w_out) break;
          const float v = ro ? out[col] + b + ro[oh * p.w_out + ow] : out[col] + b;
          yo[oh * p.w_out + ow] = clamp ? detail::clamp_value(v, p.clamp_lo, p.clamp_hi) : v;
        }
      }
    }
}

// V for every tile of channel ci of one image, written into the 16 packed operands
// (element xi at v + xi * xi_stride, in the implicit GEMM's panel layout) from column cs.col0.
void input_transform(const Conv2dParams& p, const float* xc, int64_t ci, int64_t kc, int64_t tw, int64_t th,
                     const Columns& cs, int64_t xi_stride, float* v) {
  const PanelBase pb = panel_base(v, ci, p.c_in, kc, cs.cols16);
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
      const int64_t tile = cs.col0 + ty * tw + tx;
      float* out = pb.base + tile / kNr * pb.panel_stride + tile % kNr;
      for (int r = 0; r < 4; ++r) {  // (B^T d) B
        out[(4 * r + 0) * xi_stride] = t[r][0] - t[r][2];
        out[(4 * r + 1) * xi_stride] = t[r][1] + t[r][2];
        out[(4 * r + 2) * xi_stride] = t[r][2] - t[r][1];
        out[(4 * r + 3) * xi_stride] = t[r][1] - t[r][3];
      }
    }
  }
  zero_tail(pb, cs, th * tw, 16, xi_stride);
}

// One output channel of one image from the 16 products (row: its first tile in product 0,
// product xi at row + xi * xi_stride), with bias, the residual ro (yo's layout, or null)
// and clamp.
[[maybe_unused]] void output_transform(const Conv2dParams& p, const float* row, int64_t tw, int64_t th,
                                       int64_t xi_stride, float b, bool clamp, const float* ro, float* yo) {
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
          const float v = ro ? out[col] + ro[oh * p.w_out + ow] : out[col];
          yo[oh * p.w_out + ow] = clamp ? detail::clamp_value(v, p.clamp_lo, p.clamp_hi) : v;
        }
      }
    }
}

#if AOTC_KERNELS_AVX2
// The AVX2 transforms work on 8 horizontally adjacent tiles at once, one per lane, from a
// zero-padded copy of the channel plane (thread scratch, conv2d_winograd_thread_scratch_bytes):
// a tile row's 4 x 4 patches are then stride-2 runs of 4 padded rows, read as 16-float
// loads split into even and odd columns, with no bounds checks. With the scalar forms
// above Winograd was slower than im2col + Eigen; with these it is faster
// (bench/results_cpu.md). The scalar forms remain for other targets.
inline __m256 evens(__m256 lo, __m256 hi) {
  const __m256 s = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));  // lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}
inline __m256 odds(__m256 lo, __m256 hi) {
  const __m256 s = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}

struct PaddedPlane {
  int64_t rows, cols;
};
// (conv2d_winograd_thread_scratch_bytes plans the same size.)
PaddedPlane padded_plane(int64_t tile, int64_t th, int64_t tw) {
  return {tile * th + 2, tile * detail::ceil_div(tw, 8) * 8 + 8};
}

// The channel plane xc, zero-padded: p.pad_h rows and p.pad_w columns before it, zeros after.
PaddedPlane pad_plane(const Conv2dParams& p, int64_t tile, int64_t th, int64_t tw, const float* xc,
                      float* pad) {
  const PaddedPlane pp = padded_plane(tile, th, tw);
  for (int64_t i = 0; i < pp.rows * pp.cols; ++i) pad[i] = 0.0f;
  const int64_t r_hi = detail::min_i64(pp.rows, p.pad_h + p.h_in),
                c_hi = detail::min_i64(pp.cols, p.pad_w + p.w_in);
  for (int64_t r = p.pad_h; r < r_hi; ++r) {
    const float* src = xc + (r - p.pad_h) * p.w_in - p.pad_w;
    float* dst = pad + r * pp.cols;
    for (int64_t c = p.pad_w; c < c_hi; ++c) dst[c] = src[c];
  }
  return pp;
}

// Stores one point of 8 adjacent tiles (t0 .. t0 + 7, one per lane) into the panels: lanes
// past the row's end are not stored; lanes past the panel's end go to the next panel (its
// row starts 16 - off lanes in).
struct LaneStore {
  float* first;
  float* second;
  bool plain;
  int64_t split, valid;
  __m256i m1, m2;
  LaneStore(const PanelBase& pb, int64_t t0, int64_t valid_lanes) : valid(valid_lanes) {
    const int64_t off = t0 % kNr;
    first = pb.base + t0 / kNr * pb.panel_stride + off;
    second = pb.base + (t0 / kNr + 1) * pb.panel_stride - (kNr - off);
    split = detail::min_i64(valid, kNr - off);
    plain = valid == 8 && split == 8;
    m1 = detail::first_lanes_mask(split);
    m2 = _mm256_andnot_si256(m1, detail::first_lanes_mask(valid));
  }
  void store(int64_t at, __m256 value) const {  // at: the point's offset, xi * xi_stride
    if (plain) {
      _mm256_storeu_ps(first + at, value);
    } else if (split == valid) {
      // In 4-, 2- and 1-lane pieces: _mm256_maskstore_ps is VMASKMOVPS, 3.3 ns a store on
      // Zen 4 (store_first_lanes in kernel_util.h); 7 x 7 and 14 x 14 planes have rows of 4
      // tiles, every store partial.
      float* to = first + at;
      __m128 part = _mm256_castps256_ps128(value);
      int64_t left = split;
      if (left >= 4) {
        _mm_storeu_ps(to, part);
        part = _mm256_extractf128_ps(value, 1);
        to += 4;
        left -= 4;
      }
      if (left >= 2) {
        _mm_storel_pi(reinterpret_cast<__m64*>(to), part);
        part = _mm_movehl_ps(part, part);
        to += 2;
        left -= 2;
      }
      if (left >= 1) _mm_store_ss(to, part);
    } else {
      _mm256_maskstore_ps(first + at, m1, value);
      _mm256_maskstore_ps(second + at, m2, value);
    }
  }
};

void input_transform_avx(const Conv2dParams& p, const float* xc, int64_t ci, int64_t kc, int64_t tw,
                         int64_t th, const Columns& cs, int64_t xi_stride, float* v, float* pad) {
  const PaddedPlane pp = pad_plane(p, 2, th, tw, xc, pad);
  const PanelBase pb = panel_base(v, ci, p.c_in, kc, cs.cols16);
  for (int64_t ty = 0; ty < th; ++ty)
    for (int64_t tx0 = 0; tx0 < tw; tx0 += 8) {
      __m256 e[4][4];  // d B per patch row
      for (int r = 0; r < 4; ++r) {
        const float* row = pad + (2 * ty + r) * pp.cols + 2 * tx0;
        const __m256 lo = _mm256_loadu_ps(row), hi = _mm256_loadu_ps(row + 8);
        const __m256 lo2 = _mm256_loadu_ps(row + 2), hi2 = _mm256_loadu_ps(row + 10);
        const __m256 d0 = evens(lo, hi), d1 = odds(lo, hi), d2 = evens(lo2, hi2), d3 = odds(lo2, hi2);
        e[r][0] = _mm256_sub_ps(d0, d2);
        e[r][1] = _mm256_add_ps(d1, d2);
        e[r][2] = _mm256_sub_ps(d2, d1);
        e[r][3] = _mm256_sub_ps(d1, d3);
      }
      const LaneStore out(pb, cs.col0 + ty * tw + tx0, detail::min_i64(8, tw - tx0));
      for (int c = 0; c < 4; ++c) {  // B^T (d B)
        const __m256 col[4] = {_mm256_sub_ps(e[0][c], e[2][c]), _mm256_add_ps(e[1][c], e[2][c]),
                               _mm256_sub_ps(e[2][c], e[1][c]), _mm256_sub_ps(e[1][c], e[3][c])};
        for (int r = 0; r < 4; ++r) out.store((4 * r + c) * xi_stride, col[r]);
      }
    }
  zero_tail(pb, cs, th * tw, 16, xi_stride);
}

// The end of an output row's run of 8 * NV floats at dst, count of them inside the plane:
// the residual's run rsrc (or null) added in output order, the clamp, the store; a short run
// goes through buffers, as past it may be past the plane.
template <int NV>
inline void finish_run(__m256 (&out)[NV], int64_t count, const float* rsrc, bool clamp, __m256 lo, __m256 hi,
                       float* dst) {
  constexpr int64_t kRun = 8 * NV;
  if (rsrc) {
    alignas(32) float rbuf[kRun] = {};
    if (count < kRun)
      for (int64_t q = 0; q < count; ++q) rbuf[q] = rsrc[q];
    const float* rr = count == kRun ? rsrc : rbuf;
    for (int q = 0; q < NV; ++q) out[q] = _mm256_add_ps(out[q], _mm256_loadu_ps(rr + 8 * q));
  }
  if (clamp)  // max/min return their second operand when either is NaN: NaN stays
    for (int q = 0; q < NV; ++q) out[q] = _mm256_min_ps(hi, _mm256_max_ps(lo, out[q]));
  if (count == kRun) {
    for (int q = 0; q < NV; ++q) _mm256_storeu_ps(dst + 8 * q, out[q]);
  } else {
    alignas(32) float buf[kRun];
    for (int q = 0; q < NV; ++q) _mm256_store_ps(buf + 8 * q, out[q]);
    for (int64_t q = 0; q < count; ++q) dst[q] = buf[q];
  }
}

// One output channel of one image (row as for output_transform): 8 tiles per step, their
// 2 x 2 results interleaved into two 16-float output rows; the edges (odd sizes, the last
// tiles of a row) go through a buffer. The products have 8 floats of slack after the last.
// ro: the residual (yo's layout), or null.
void output_transform_avx(const Conv2dParams& p, const float* row, int64_t tw, int64_t th, int64_t xi_stride,
                          float b, bool clamp, const float* ro, float* yo) {
  const __m256 bv = _mm256_set1_ps(b), lo = _mm256_set1_ps(p.clamp_lo), hi = _mm256_set1_ps(p.clamp_hi);
  for (int64_t ty = 0; ty < th; ++ty)
    for (int64_t tx0 = 0; tx0 < tw; tx0 += 8) {
      const float* m = row + ty * tw + tx0;
      __m256 t[2][4];  // A^T m
      for (int col = 0; col < 4; ++col) {
        const __m256 m0 = _mm256_loadu_ps(m + (0 + col) * xi_stride),
                     m1 = _mm256_loadu_ps(m + (4 + col) * xi_stride);
        const __m256 m2 = _mm256_loadu_ps(m + (8 + col) * xi_stride),
                     m3 = _mm256_loadu_ps(m + (12 + col) * xi_stride);
        t[0][col] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
        t[1][col] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
      }
      const int64_t valid = detail::min_i64(8, tw - tx0);
      for (int r = 0; r < 2; ++r) {
        const int64_t oh = 2 * ty + r;
        if (oh >= p.h_out) break;
        const __m256 y0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(t[r][0], t[r][1]), t[r][2]), bv);
        const __m256 y1 = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(t[r][1], t[r][2]), t[r][3]), bv);
        const __m256 a = _mm256_unpacklo_ps(y0, y1), bb = _mm256_unpackhi_ps(y0, y1);
        __m256 out[2] = {_mm256_permute2f128_ps(a, bb, 0x20), _mm256_permute2f128_ps(a, bb, 0x31)};
        const int64_t at = oh * p.w_out + 2 * tx0;
        finish_run(out, detail::min_i64(2 * valid, p.w_out - 2 * tx0), ro ? ro + at : nullptr, clamp, lo, hi,
                   yo + at);
      }
    }
}

// F(4x4, 3x3), 8 horizontally adjacent tiles at once, one per lane, from the zero-padded
// plane: a tile row's 6 x 6 patches start 4 columns apart. Columns 0-3 of 8 consecutive
// 4-column groups (group g at row + 4 g) as one vector each: the groups are loaded in
// 128-bit halves paired (g, g + 4), so that unpacking and shuffling within the halves
// leaves them in lane order.
inline __m256 load_halves(const float* lo, const float* hi) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi), 1);
}
inline void groups_of_four(const float* row, __m256 col[4]) {
  const __m256 v0 = load_halves(row, row + 16), v1 = load_halves(row + 4, row + 20);
  const __m256 v2 = load_halves(row + 8, row + 24), v3 = load_halves(row + 12, row + 28);
  const __m256 a = _mm256_unpacklo_ps(v0, v1), b = _mm256_unpackhi_ps(v0, v1);  // groups 0 1 | 4 5
  const __m256 c = _mm256_unpacklo_ps(v2, v3), d = _mm256_unpackhi_ps(v2, v3);  // groups 2 3 | 6 7
  col[0] = _mm256_shuffle_ps(a, c, _MM_SHUFFLE(1, 0, 1, 0));
  col[1] = _mm256_shuffle_ps(a, c, _MM_SHUFFLE(3, 2, 3, 2));
  col[2] = _mm256_shuffle_ps(b, d, _MM_SHUFFLE(1, 0, 1, 0));
  col[3] = _mm256_shuffle_ps(b, d, _MM_SHUFFLE(3, 2, 3, 2));
}
// The inverse: 4 columns of 8 groups (one per lane) as 32 floats in memory order.
inline void interleave_four(const __m256 col[4], __m256 out[4]) {
  const __m256 a = _mm256_unpacklo_ps(col[0], col[1]), b = _mm256_unpackhi_ps(col[0], col[1]);
  const __m256 c = _mm256_unpacklo_ps(col[2], col[3]), d = _mm256_unpackhi_ps(col[2], col[3]);
  const __m256 g04 = _mm256_shuffle_ps(a, c, _MM_SHUFFLE(1, 0, 1, 0)),
               g15 = _mm256_shuffle_ps(a, c, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 g26 = _mm256_shuffle_ps(b, d, _MM_SHUFFLE(1, 0, 1, 0)),
               g37 = _mm256_shuffle_ps(b, d, _MM_SHUFFLE(3, 2, 3, 2));
  out[0] = _mm256_permute2f128_ps(g04, g15, 0x20);
  out[1] = _mm256_permute2f128_ps(g26, g37, 0x20);
  out[2] = _mm256_permute2f128_ps(g04, g15, 0x31);
  out[3] = _mm256_permute2f128_ps(g26, g37, 0x31);
}

void input_transform_avx_f4(const Conv2dParams& p, const float* xc, int64_t ci, int64_t kc, int64_t tw,
                            int64_t th, const Columns& cs, int64_t xi_stride, float* v, float* pad) {
  const PaddedPlane pp = pad_plane(p, 4, th, tw, xc, pad);
  const PanelBase pb = panel_base(v, ci, p.c_in, kc, cs.cols16);
  for (int64_t ty = 0; ty < th; ++ty)
    for (int64_t tx0 = 0; tx0 < tw; tx0 += 8) {
      __m256 e[6][6];  // d B per patch row
      for (int r = 0; r < 6; ++r) {
        const float* row = pad + (4 * ty + r) * pp.cols + 4 * tx0;
        __m256 d[6], next[4];  // columns 4 and 5 of a tile are columns 0 and 1 of the next
        groups_of_four(row, d);
        groups_of_four(row + 4, next);
        d[4] = next[0];
        d[5] = next[1];
        f4_input_1d(d, e[r]);
      }
      const LaneStore out(pb, cs.col0 + ty * tw + tx0, detail::min_i64(8, tw - tx0));
      for (int c = 0; c < 6; ++c) {  // B^T (d B)
        const __m256 col[6] = {e[0][c], e[1][c], e[2][c], e[3][c], e[4][c], e[5][c]};
        __m256 t[6];
        f4_input_1d(col, t);
        for (int r = 0; r < 6; ++r) out.store((6 * r + c) * xi_stride, t[r]);
      }
    }
  zero_tail(pb, cs, th * tw, 36, xi_stride);
}

// F(4x4, 3x3), one output channel of one image (row as for output_transform_f4): 8 tiles
// per step, their 4 x 4 results interleaved into four 32-float output rows; the edges go
// through a buffer. The products have 8 floats of slack after the last. ro: the residual
// (yo's layout), or null.
void output_transform_avx_f4(const Conv2dParams& p, const float* row, int64_t tw, int64_t th,
                             int64_t xi_stride, float b, bool clamp, const float* ro, float* yo) {
  const __m256 bv = _mm256_set1_ps(b), lo = _mm256_set1_ps(p.clamp_lo), hi = _mm256_set1_ps(p.clamp_hi);
  for (int64_t ty = 0; ty < th; ++ty)
    for (int64_t tx0 = 0; tx0 < tw; tx0 += 8) {
      const float* m = row + ty * tw + tx0;
      __m256 t[4][6];  // A^T m
      for (int col = 0; col < 6; ++col) {
        __m256 mc[6], a[4];
        for (int r = 0; r < 6; ++r) mc[r] = _mm256_loadu_ps(m + (6 * r + col) * xi_stride);
        f4_output_1d(mc, a);
        for (int r = 0; r < 4; ++r) t[r][col] = a[r];
      }
      const int64_t valid = detail::min_i64(8, tw - tx0);
      for (int r = 0; r < 4; ++r) {
        const int64_t oh = 4 * ty + r;
        if (oh >= p.h_out) break;
        __m256 y[4], out[4];
        f4_output_1d(t[r], y);
        for (int q = 0; q < 4; ++q) y[q] = _mm256_add_ps(y[q], bv);
        interleave_four(y, out);
        const int64_t at = oh * p.w_out + 4 * tx0;
        finish_run(out, detail::min_i64(4 * valid, p.w_out - 4 * tx0), ro ? ro + at : nullptr, clamp, lo, hi,
                   yo + at);
      }
    }
}
#endif

}  // namespace

void conv2d_winograd_f32(ThreadPool& pool, const Conv2dParams& p, int64_t tile, const float* x,
                         const float* u, const float* bias, const float* residual, float* y, float* scratch) {
  if (p.n <= 0 || p.c_out <= 0 || p.h_out <= 0 || p.w_out <= 0) return;
  const bool f4 = tile == 4;  // else F(2x2, 3x3)
  if (!f4) tile = 2;
  const int64_t points = conv2d_winograd_points(tile);
  const int64_t th = detail::ceil_div(p.h_out, tile), tw = detail::ceil_div(p.w_out, tile), tiles = th * tw;
  const int64_t group = conv2d_winograd_group(p, tile);
  int64_t kc, nc;
  conv2d_gemm_blocking(p.c_in, tiles, kc, nc);  // (kc depends on the depth alone)
  const bool clamp = detail::has_clamp(p.clamp_lo, p.clamp_hi);
  // The vector input transform needs its padded plane in the thread scratch.
  const bool vector =
      pool.thread_scratch(0) != nullptr &&
      static_cast<int64_t>(pool.thread_scratch_bytes()) >= conv2d_winograd_thread_scratch_bytes(p, tile);
  (void)vector;
  const int64_t hw_in = p.h_in * p.w_in, hw_out = p.h_out * p.w_out;
  for (int64_t img0 = 0; img0 < p.n; img0 += group) {
    const int64_t images = detail::min_i64(group, p.n - img0), cols = images * tiles;
    const int64_t cols16 = detail::ceil_div(cols, kNr) * kNr;
    const int64_t v_stride = p.c_in * cols16, c_stride = p.c_out * cols;
    float* v = scratch;
    float* c = scratch + points * v_stride;
    // The three passes in pieces that a thread may take from the other's end
    // (ThreadPool::parallel_pieces): channels of a transform, whole products.
    const int64_t in_items = images * p.c_in, out_items = images * p.c_out;
    pool.parallel_pieces(in_items, detail::min_chunk_for(tiles * 64),
                         [&](int64_t q0, int64_t q1, int thread) {
                           (void)thread;
                           for (int64_t q = q0; q < q1; ++q) {
                             const int64_t image = q / p.c_in, ci = q % p.c_in;
                             const float* xc = x + ((img0 + image) * p.c_in + ci) * hw_in;
                             const Columns cs{image * tiles, cols, cols16};
#if AOTC_KERNELS_AVX2
                             if (vector) {
                               float* pad = reinterpret_cast<float*>(pool.thread_scratch(thread));
                               if (f4)
                                 input_transform_avx_f4(p, xc, ci, kc, tw, th, cs, v_stride, v, pad);
                               else
                                 input_transform_avx(p, xc, ci, kc, tw, th, cs, v_stride, v, pad);
                               continue;
                             }
#endif
                             if (f4)
                               input_transform_f4(p, xc, ci, kc, tw, th, cs, v_stride, v);
                             else
                               input_transform(p, xc, ci, kc, tw, th, cs, v_stride, v);
                           }
                         });
    // The products are independent and equal: whole products per thread, no packing.
    pool.parallel_pieces(points, 1, [&](int64_t x0, int64_t x1, int) {
      for (int64_t xi = x0; xi < x1; ++xi)
        detail::gemm_packed_f32(u + xi * p.c_out * p.c_in, p.c_in, v + xi * v_stride, cols, p.c_in,
                                c + xi * c_stride, cols, 0, p.c_out);
    });
    pool.parallel_pieces(out_items, detail::min_chunk_for(tiles * 64), [&](int64_t q0, int64_t q1, int) {
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t image = q / p.c_out, o = q % p.c_out;
        const float b = p.has_bias ? bias[o] : 0.0f;
        const float* row = c + o * cols + image * tiles;
        const int64_t at = ((img0 + image) * p.c_out + o) * hw_out;
        const float* ro = residual ? residual + at : nullptr;
        float* yo = y + at;
#if AOTC_KERNELS_AVX2
        if (f4)
          output_transform_avx_f4(p, row, tw, th, c_stride, b, clamp, ro, yo);
        else
          output_transform_avx(p, row, tw, th, c_stride, b, clamp, ro, yo);
#else
        if (f4)
          output_transform_f4(p, row, tw, th, c_stride, b, clamp, ro, yo);
        else
          output_transform(p, row, tw, th, c_stride, b, clamp, ro, yo);
#endif
      }
    });
  }
}

}  // namespace aotc::rt
