// scan.cpp - the inclusive scans besides cumsum (ScanOp: cumprod, logcumsumexp, cummax,
// cummin) along the middle axis of outer x axis x inner, with torch's CPU arithmetic
// (kernels/scan_step.h). Work is split over outer and over blocks of kBlock inner
// positions; a block walks the axis with one accumulator per position, so that the inner
// loop reads consecutive addresses. y may alias x.
#include <aotc/rt/kernels.h>
#include <aotc/rt/kernels/scan_step.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

constexpr int64_t kBlock = 64;

// Acc: the accumulator's type (double for float32's products and log-sums, as torch's CPU).
template <class T, class Acc, class Step>
void accumulate(ThreadPool& pool, int64_t outer, int64_t axis, int64_t inner, const T* x, T* y, Step step) {
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  pool.parallel_for(outer * blocks, detail::min_chunk_for(axis * kBlock), [&](int64_t t0, int64_t t1) {
    Acc acc[kBlock];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / blocks, j0 = t % blocks * kBlock, width = std::min(kBlock, inner - j0);
      const T* xo = x + o * axis * inner + j0;
      T* yo = y + o * axis * inner + j0;
      for (int64_t j = 0; j < width; ++j) {
        acc[j] = static_cast<Acc>(xo[j]);
        yo[j] = static_cast<T>(acc[j]);
      }
      for (int64_t a = 1; a < axis; ++a)
        for (int64_t j = 0; j < width; ++j) {
          acc[j] = step(static_cast<Acc>(xo[a * inner + j]), acc[j]);
          yo[a * inner + j] = static_cast<T>(acc[j]);
        }
    }
  });
}

template <class T>
void extremum(ThreadPool& pool, bool is_max, int64_t outer, int64_t axis, int64_t inner, const T* x, T* y,
              int64_t* indices) {
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  pool.parallel_for(outer * blocks, detail::min_chunk_for(axis * kBlock), [&](int64_t t0, int64_t t1) {
    T kept[kBlock];
    int64_t at[kBlock];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / blocks, j0 = t % blocks * kBlock, width = std::min(kBlock, inner - j0);
      const int64_t base = o * axis * inner + j0;
      for (int64_t j = 0; j < width; ++j) {
        kept[j] = x[base + j];
        at[j] = 0;
      }
      for (int64_t a = 0; a < axis; ++a)
        for (int64_t j = 0; j < width; ++j) {
          const T v = x[base + a * inner + j];
          if (scan_step::replaces(is_max, v, kept[j])) {
            kept[j] = v;
            at[j] = a;
          }
          y[base + a * inner + j] = kept[j];
          indices[base + a * inner + j] = at[j];
        }
    }
  });
}

}  // namespace

void scan(ThreadPool& pool, ScanOp op, ElemType t, int64_t outer, int64_t axis, int64_t inner, const void* x,
          void* y, int64_t* indices) {
  if (outer <= 0 || axis <= 0 || inner <= 0) return;
  if (op == ScanOp::Max || op == ScanOp::Min) {
    const bool is_max = op == ScanOp::Max;
    if (t == ElemType::F32)
      extremum(pool, is_max, outer, axis, inner, static_cast<const float*>(x), static_cast<float*>(y),
               indices);
    else if (t == ElemType::I64)
      extremum(pool, is_max, outer, axis, inner, static_cast<const int64_t*>(x), static_cast<int64_t*>(y),
               indices);
    return;
  }
  if (t == ElemType::I64) {
    if (op == ScanOp::Prod)
      accumulate<int64_t, int64_t>(pool, outer, axis, inner, static_cast<const int64_t*>(x),
                                   static_cast<int64_t*>(y), scan_step::wrapping_mul);
    return;
  }
  if (t != ElemType::F32) return;
  const auto* xf = static_cast<const float*>(x);
  auto* yf = static_cast<float*>(y);
  if (op == ScanOp::Prod)
    accumulate<float, double>(pool, outer, axis, inner, xf, yf, [](double v, double acc) { return acc * v; });
  else
    accumulate<float, double>(pool, outer, axis, inner, xf, yf, scan_step::log_add_exp);
}

}  // namespace aotc::rt
