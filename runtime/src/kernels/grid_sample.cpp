// grid_sample.cpp - 2-d grid sampling (aten::grid_sampler / grid_sampler_2d), bilinear or
// nearest, with zeros, border or reflection padding, following torch's
// grid_sampler_compute_source_index in float. Each output position computes its source
// cells and weights once and applies them to every channel.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cmath>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

// Reflects `in` into [twice_low / 2, twice_high / 2] (torch's reflect_coordinates).
float reflect(float in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0.0f;
  const float min = static_cast<float>(twice_low) / 2.0f;
  const float span = static_cast<float>(twice_high - twice_low) / 2.0f;
  in = std::fabs(in - min);
  const float extra = std::fmod(in, span);
  const int flips = static_cast<int>(std::floor(in / span));
  return flips % 2 == 0 ? extra + min : span - extra + min;
}

float clip(float v, int64_t size) {
  const float hi = static_cast<float>(size - 1);
  return v < 0.0f ? 0.0f : (v > hi ? hi : v);
}

// The source coordinate of a normalised grid value along a dim of `size` cells.
float source_coordinate(const GridSampleParams& p, float coord, int64_t size) {
  float v = p.align_corners ? (coord + 1.0f) / 2.0f * static_cast<float>(size - 1)
                            : ((coord + 1.0f) * static_cast<float>(size) - 1.0f) / 2.0f;
  if (p.padding == GridSamplePadding::Border) {
    v = clip(v, size);
  } else if (p.padding == GridSamplePadding::Reflection) {
    v = p.align_corners ? reflect(v, 0, 2 * (size - 1)) : reflect(v, -1, 2 * size - 1);
    v = clip(v, size);
  }
  // torch's safe_downgrade_to_int_range: far out (or NaN) becomes a cell no tap reaches.
  if (!(std::fabs(v) < 1e9f)) v = -100.0f;
  return v;
}

inline bool inside(int64_t i, int64_t size) { return i >= 0 && i < size; }

}  // namespace

void grid_sample_f32(ThreadPool& pool, const GridSampleParams& p, const float* x, const float* grid,
                     float* y) {
  if (p.n <= 0 || p.c <= 0 || p.h_out <= 0 || p.w_out <= 0) return;
  const int64_t plane_in = p.h_in * p.w_in, plane_out = p.h_out * p.w_out;
  pool.parallel_for(p.n * p.h_out, detail::min_chunk_for(p.w_out * p.c * 4), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t img = r / p.h_out, oh = r % p.h_out;
      const float* g = grid + r * p.w_out * 2;
      const float* xi = x + img * p.c * plane_in;
      float* yi = y + img * p.c * plane_out + oh * p.w_out;
      for (int64_t ow = 0; ow < p.w_out; ++ow) {
        const float ix = source_coordinate(p, g[2 * ow], p.w_in);
        const float iy = source_coordinate(p, g[2 * ow + 1], p.h_in);
        if (p.mode == GridSampleMode::Nearest) {
          const int64_t cx = static_cast<int64_t>(std::nearbyint(ix)),
                        cy = static_cast<int64_t>(std::nearbyint(iy));
          const bool ok = inside(cx, p.w_in) && inside(cy, p.h_in);
          for (int64_t ch = 0; ch < p.c; ++ch)
            yi[ch * plane_out + ow] = ok ? xi[ch * plane_in + cy * p.w_in + cx] : 0.0f;
          continue;
        }
        const float fx = std::floor(ix), fy = std::floor(iy);
        const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
        const int64_t x1 = x0 + 1, y1 = y0 + 1;
        const float wx1 = ix - fx, wy1 = iy - fy, wx0 = 1.0f - wx1, wy0 = 1.0f - wy1;
        // Corners outside the input contribute nothing (zeros; border and reflection
        // keep the position inside, so only its +1 neighbours can fall outside).
        const float w00 = inside(x0, p.w_in) && inside(y0, p.h_in) ? wx0 * wy0 : 0.0f;
        const float w01 = inside(x1, p.w_in) && inside(y0, p.h_in) ? wx1 * wy0 : 0.0f;
        const float w10 = inside(x0, p.w_in) && inside(y1, p.h_in) ? wx0 * wy1 : 0.0f;
        const float w11 = inside(x1, p.w_in) && inside(y1, p.h_in) ? wx1 * wy1 : 0.0f;
        // Clamped cells for the loads (their weight is 0 when they were outside).
        const int64_t cx0 = detail::min_i64(detail::max_i64(x0, 0), p.w_in - 1);
        const int64_t cx1 = detail::min_i64(detail::max_i64(x1, 0), p.w_in - 1);
        const int64_t cy0 = detail::min_i64(detail::max_i64(y0, 0), p.h_in - 1);
        const int64_t cy1 = detail::min_i64(detail::max_i64(y1, 0), p.h_in - 1);
        const int64_t o00 = cy0 * p.w_in + cx0, o01 = cy0 * p.w_in + cx1;
        const int64_t o10 = cy1 * p.w_in + cx0, o11 = cy1 * p.w_in + cx1;
        for (int64_t ch = 0; ch < p.c; ++ch) {
          const float* xp = xi + ch * plane_in;
          yi[ch * plane_out + ow] = xp[o00] * w00 + xp[o01] * w01 + xp[o10] * w10 + xp[o11] * w11;
        }
      }
    }
  });
}

}  // namespace aotc::rt
