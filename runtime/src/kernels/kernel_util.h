// kernel_util.h - helpers shared by the kernel sources (internal to the runtime).
#pragma once

#include <aotc/rt/kernels.h>

#include <cstdint>

namespace aotc::rt::detail {

// Work below this many elements stays on one thread: waking workers costs more.
constexpr int64_t kElementwiseMinChunk = 16384;

// Below this many flops per range, splitting a product over threads does not pay.
constexpr double kGemmMinFlopsPerRange = 1.0e6;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

// Chunk length (in items) so that one range holds at least `min_work` units of work
// when each item costs `work_per_item`.
inline int64_t min_chunk_for(int64_t work_per_item, int64_t min_work = kElementwiseMinChunk) {
  if (work_per_item <= 0) return min_work;
  return max_i64(1, ceil_div(min_work, work_per_item));
}

// min(max(v, lo), hi), written so that a NaN input stays NaN (as torch's clamp does).
inline float clamp_value(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

inline bool has_clamp(float lo, float hi) { return lo > -__builtin_inff() || hi < __builtin_inff(); }

inline void clamp_row(float* y, int64_t count, float lo, float hi) {
  for (int64_t i = 0; i < count; ++i) y[i] = clamp_value(y[i], lo, hi);
}

// The half-open range of kernel taps t (tap position start + t * step) that land inside
// [0, size), for t in [0, taps).
struct TapRange {
  int64_t lo, hi;
};
inline TapRange valid_taps(int64_t start, int64_t step, int64_t taps, int64_t size) {
  const int64_t lo = start < 0 ? min_i64(taps, ceil_div(-start, step)) : 0;
  const int64_t hi = size - start <= 0 ? 0 : min_i64(taps, ceil_div(size - start, step));
  return {lo, hi < lo ? lo : hi};
}

// The half-open range of output positions o (input position o * stride + offset) that
// land inside [0, size), for o in [0, count).
inline TapRange valid_outputs(int64_t offset, int64_t stride, int64_t count, int64_t size) {
  return valid_taps(offset, stride, count, size);
}

// max/min as torch reduces: a NaN wins over everything.
inline float max_nan(float m, float v) { return (v > m || v != v) ? v : m; }
inline float min_nan(float m, float v) { return (v < m || v != v) ? v : m; }
inline float add_f32(float m, float v) { return m + v; }

// Folds a contiguous run with 16 independent accumulators: the loop vectorises (the
// compiler may not reassociate a single accumulator) and a long sum gathers less
// rounding error. Combine is one of the functions above; init is its identity.
template <float (*Combine)(float, float)>
inline float reduce_contiguous(const float* x, int64_t count, float init) {
  constexpr int kLanes = 16;
  float acc[kLanes];
  for (int l = 0; l < kLanes; ++l) acc[l] = init;
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] = Combine(acc[l], x[i + l]);
  for (int l = 0; i + l < count; ++l) acc[l] = Combine(acc[l], x[i + l]);
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int l = 0; l < width; ++l) acc[l] = Combine(acc[l], acc[l + width]);
  return acc[0];
}

// Computes rows [row0, row1) x columns [col0, col1) of the product described by p on
// the calling thread (one Eigen product). gemm_f32 splits a product into such blocks.
void gemm_block_f32(const GemmParams& p, int64_t row0, int64_t row1, int64_t col0, int64_t col1,
                    const float* a, const float* b, const float* bias, float* c);

}  // namespace aotc::rt::detail
