// upsample.cpp - nearest, nearest-exact and (bi/tri)linear upsampling of N x C x D x H x W
// planes, with torch's source-index arithmetic (float, as torch computes it for float
// tensors): the same input cells and weights, so results match torch to rounding.
// The source columns of an output row are computed once per call into scratch; each
// output row then gathers from at most four input rows.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cmath>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

struct Source {
  int64_t i0, i1;  // input cells
  float l0, l1;    // their weights (linear); nearest uses i0 alone
};

// torch's area_pixel_compute_source_index for non-cubic modes.
inline float source_index(float ratio, int64_t o, bool align_corners) {
  if (align_corners) return ratio * static_cast<float>(o);
  const float s = ratio * (static_cast<float>(o) + 0.5f) - 0.5f;
  return s < 0.0f ? 0.0f : s;
}

Source source(const UpsampleParams& p, int dim, int64_t o) {
  const int64_t in = p.in[dim], out = p.out[dim];
  const float ratio = p.ratio[dim];
  Source s{0, 0, 1.0f, 0.0f};
  switch (p.mode) {
    case UpsampleMode::Nearest:
      s.i0 = detail::min_i64(static_cast<int64_t>(std::floor(ratio * static_cast<float>(o))), in - 1);
      break;
    case UpsampleMode::NearestExact: {
      // torch: floorf(real + 0.5) with a double 0.5, rounded back to float by floorf.
      const float real = source_index(ratio, o, false);
      s.i0 = detail::min_i64(static_cast<int64_t>(std::floor(static_cast<float>(real + 0.5))), in - 1);
      break;
    }
    case UpsampleMode::Linear: {
      if (in == out) {  // torch copies
        s.i0 = s.i1 = o;
        break;
      }
      const float real = source_index(ratio, o, p.align_corners);
      s.i0 = detail::min_i64(static_cast<int64_t>(std::floor(real)), in - 1);
      float l1 = real - static_cast<float>(s.i0);
      l1 = l1 < 0.0f ? 0.0f : (l1 > 1.0f ? 1.0f : l1);
      s.i1 = s.i0 + (s.i0 < in - 1 ? 1 : 0);
      s.l1 = l1;
      s.l0 = 1.0f - l1;
      break;
    }
  }
  s.i0 = detail::max_i64(s.i0, 0);
  s.i1 = detail::max_i64(s.i1, 0);
  return s;
}

}  // namespace

void upsample_f32(ThreadPool& pool, const UpsampleParams& p, const float* x, float* y, void* scratch) {
  if (p.planes <= 0 || p.out[0] <= 0 || p.out[1] <= 0 || p.out[2] <= 0) return;
  const int64_t w_out = p.out[2];
  // Column table: i0[w_out], i1[w_out], then l0[w_out], l1[w_out].
  auto* col_i0 = static_cast<int64_t*>(scratch);
  int64_t* col_i1 = col_i0 + w_out;
  auto* col_l0 = reinterpret_cast<float*>(col_i1 + w_out);
  float* col_l1 = col_l0 + w_out;
  for (int64_t ow = 0; ow < w_out; ++ow) {
    const Source s = source(p, 2, ow);
    col_i0[ow] = s.i0;
    col_i1[ow] = s.i1;
    col_l0[ow] = s.l0;
    col_l1[ow] = s.l1;
  }
  const int64_t vol_in = p.in[0] * p.in[1] * p.in[2];
  const int64_t rows_per_plane = p.out[0] * p.out[1];
  const bool nearest = p.mode != UpsampleMode::Linear;
  pool.parallel_for(p.planes * rows_per_plane, detail::min_chunk_for(4 * w_out), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / rows_per_plane, od = (r / p.out[1]) % p.out[0], oh = r % p.out[1];
      const float* xp = x + plane * vol_in;
      float* yrow = y + r * w_out;
      // The input rows this output row reads, with their weights. Dims the op does not
      // interpolate contribute one row of weight 1 (no 0 * x terms, which would turn an
      // infinite input into NaN where torch gives inf).
      const Source sd = p.dims >= 3 ? source(p, 0, od) : Source{0, 0, 1.0f, 0.0f};
      const Source sh = p.dims >= 2 ? source(p, 1, oh) : Source{0, 0, 1.0f, 0.0f};
      if (nearest) {
        const float* xrow = xp + (sd.i0 * p.in[1] + sh.i0) * p.in[2];
        for (int64_t ow = 0; ow < w_out; ++ow) yrow[ow] = xrow[col_i0[ow]];
        continue;
      }
      const float* rows[4];
      float weights[4];
      int terms = 0;
      const int nd = p.dims >= 3 ? 2 : 1, nh = p.dims >= 2 ? 2 : 1;
      for (int a = 0; a < nd; ++a)
        for (int b = 0; b < nh; ++b) {
          const int64_t id = a == 0 ? sd.i0 : sd.i1, ih = b == 0 ? sh.i0 : sh.i1;
          rows[terms] = xp + (id * p.in[1] + ih) * p.in[2];
          weights[terms] = (a == 0 ? sd.l0 : sd.l1) * (b == 0 ? sh.l0 : sh.l1);
          ++terms;
        }
      for (int64_t ow = 0; ow < w_out; ++ow) {
        const int64_t i0 = col_i0[ow], i1 = col_i1[ow];
        const float l0 = col_l0[ow], l1 = col_l1[ow];
        float acc = 0.0f;
        for (int t = 0; t < terms; ++t) acc += weights[t] * (rows[t][i0] * l0 + rows[t][i1] * l1);
        yrow[ow] = acc;
      }
    }
  });
}

}  // namespace aotc::rt
