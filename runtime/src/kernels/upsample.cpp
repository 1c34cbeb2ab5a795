// upsample.cpp - nearest, nearest-exact, (bi/tri)linear and bicubic upsampling of
// N x C x D x H x W planes, with torch's source-index arithmetic (float, as torch computes
// it for float tensors): the same input cells and weights, so results match torch to
// rounding. Each output position along a dim reads `taps` input cells (1 nearest, 2
// linear, 4 cubic) with weights; the taps of every output column are computed once per
// call into scratch, each output row then combines up to 4 input rows.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cmath>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

constexpr int kMaxTaps = 4;
constexpr int64_t kBlendMax = 4096;  // floats of one blended input row on the stack

struct Source {
  int64_t index[kMaxTaps];
  float weight[kMaxTaps];
};

// torch's area_pixel_compute_source_index: linear clamps a negative position to 0, cubic
// does not (its taps are clamped to the input instead).
inline float source_position(float ratio, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return ratio * static_cast<float>(o);
  const float s = ratio * (static_cast<float>(o) + 0.5f) - 0.5f;
  return !cubic && s < 0.0f ? 0.0f : s;
}

// torch's cubic convolution kernel (A = -0.75): for |x| <= 1 and for 1 < |x| < 2.
constexpr float kCubicA = -0.75f;
inline float cubic1(float x) { return ((kCubicA + 2.0f) * x - (kCubicA + 3.0f)) * x * x + 1.0f; }
inline float cubic2(float x) {
  return ((kCubicA * x - 5.0f * kCubicA) * x + 8.0f * kCubicA) * x - 4.0f * kCubicA;
}

Source source(const UpsampleParams& p, int dim, int64_t o) {
  const int64_t in = p.in[dim], out = p.out[dim];
  const float ratio = p.ratio[dim];
  Source s{};
  s.weight[0] = 1.0f;
  switch (p.mode) {
    case UpsampleMode::Nearest:
      s.index[0] = detail::min_i64(static_cast<int64_t>(std::floor(ratio * static_cast<float>(o))), in - 1);
      break;
    case UpsampleMode::NearestExact: {
      // torch: floorf(real + 0.5) with a double 0.5, rounded back to float by floorf.
      const float real = source_position(ratio, o, false, false);
      s.index[0] = detail::min_i64(static_cast<int64_t>(std::floor(static_cast<float>(real + 0.5))), in - 1);
      break;
    }
    case UpsampleMode::Linear: {
      if (in == out) {  // torch copies
        s.index[0] = s.index[1] = o;
        s.weight[1] = 0.0f;
        break;
      }
      const float real = source_position(ratio, o, p.align_corners, false);
      const int64_t i0 = detail::min_i64(static_cast<int64_t>(std::floor(real)), in - 1);
      float l1 = real - static_cast<float>(i0);
      l1 = l1 < 0.0f ? 0.0f : (l1 > 1.0f ? 1.0f : l1);
      s.index[0] = i0;
      s.index[1] = i0 + (i0 < in - 1 ? 1 : 0);
      s.weight[0] = 1.0f - l1;
      s.weight[1] = l1;
      break;
    }
    case UpsampleMode::Cubic: {
      const float real = source_position(ratio, o, p.align_corners, true);
      const float floor_real = std::floor(real);
      const int64_t i = static_cast<int64_t>(floor_real);
      const float t = real - floor_real;
      s.weight[0] = cubic2(t + 1.0f);
      s.weight[1] = cubic1(t);
      s.weight[2] = cubic1(1.0f - t);
      s.weight[3] = cubic2(2.0f - t);
      for (int j = 0; j < 4; ++j) s.index[j] = detail::min_i64(detail::max_i64(i - 1 + j, 0), in - 1);
      break;
    }
  }
  s.index[0] = detail::max_i64(s.index[0], 0);
  return s;
}

// One output row: sum over rows r of row_weight[r] * sum over taps j of
// rows[r][col_index[j][ow]] * col_weight[j][ow].
template <int Taps>
void combine_row(const float* const* rows, const float* row_weight, int row_count, const int64_t* col_index,
                 const float* col_weight, int64_t w_out, float* y) {
  for (int64_t ow = 0; ow < w_out; ++ow) {
    float acc = 0.0f;
    for (int r = 0; r < row_count; ++r) {
      float v = 0.0f;
      for (int j = 0; j < Taps; ++j) v += rows[r][col_index[j * w_out + ow]] * col_weight[j * w_out + ow];
      acc += row_weight[r] * v;
    }
    y[ow] = acc;
  }
}

}  // namespace

void upsample_f32(ThreadPool& pool, const UpsampleParams& p, const float* x, float* y, void* scratch) {
  if (p.planes <= 0 || p.out[0] <= 0 || p.out[1] <= 0 || p.out[2] <= 0) return;
  const int taps = upsample_taps(p.mode);
  const int64_t w_out = p.out[2];
  // Column table: index[taps][w_out], then weight[taps][w_out].
  auto* col_index = static_cast<int64_t*>(scratch);
  auto* col_weight = reinterpret_cast<float*>(col_index + taps * w_out);
  for (int64_t ow = 0; ow < w_out; ++ow) {
    const Source s = source(p, 2, ow);
    for (int j = 0; j < taps; ++j) {
      col_index[j * w_out + ow] = s.index[j];
      col_weight[j * w_out + ow] = s.weight[j];
    }
  }
  const int64_t vol_in = p.in[0] * p.in[1] * p.in[2];
  const int64_t rows_per_plane = p.out[0] * p.out[1];
  pool.parallel_for(
      p.planes * rows_per_plane, detail::min_chunk_for(4 * taps * w_out), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t plane = r / rows_per_plane, od = (r / p.out[1]) % p.out[0], oh = r % p.out[1];
          const float* xp = x + plane * vol_in;
          float* yrow = y + r * w_out;
          // The input rows this output row reads, with their weights. Dims the op does not
          // interpolate contribute one row of weight 1 (no 0 * x terms, which would turn an
          // infinite input into NaN where torch gives inf).
          const Source none{{0}, {1.0f}};
          const Source sd = p.dims >= 3 ? source(p, 0, od) : none;
          const Source sh = p.dims >= 2 ? source(p, 1, oh) : none;
          const int nd = p.dims >= 3 ? taps : 1, nh = p.dims >= 2 ? taps : 1;
          if (taps == 1) {
            const float* xrow = xp + (sd.index[0] * p.in[1] + sh.index[0]) * p.in[2];
            for (int64_t ow = 0; ow < w_out; ++ow) yrow[ow] = xrow[col_index[ow]];
            continue;
          }
          const float* rows[kMaxTaps * kMaxTaps];
          float weights[kMaxTaps * kMaxTaps];
          int count = 0;
          for (int a = 0; a < nd; ++a)
            for (int b = 0; b < nh; ++b) {
              rows[count] = xp + (sd.index[a] * p.in[1] + sh.index[b]) * p.in[2];
              weights[count] = sd.weight[a] * sh.weight[b];
              ++count;
            }
          // Blend the input rows into one first (a contiguous loop that vectorises), so
          // that each output gathers `taps` values instead of `taps` per row. Rows too
          // long for the stack buffer are combined per output instead.
          float blended[kBlendMax];
          if (count > 1 && p.in[2] <= kBlendMax) {
            const int64_t w_in = p.in[2];
            for (int64_t i = 0; i < w_in; ++i) blended[i] = weights[0] * rows[0][i];
            for (int t = 1; t < count; ++t)
              for (int64_t i = 0; i < w_in; ++i) blended[i] += weights[t] * rows[t][i];
            rows[0] = blended;
            weights[0] = 1.0f;
            count = 1;
          }
          if (taps == 2)
            combine_row<2>(rows, weights, count, col_index, col_weight, w_out, yrow);
          else
            combine_row<4>(rows, weights, count, col_index, col_weight, w_out, yrow);
        }
      });
}

}  // namespace aotc::rt
