// softmax.cpp - softmax / log_softmax over the middle axis of outer x axis x inner,
// stable (the maximum is subtracted first). exp goes through Eigen's vectorised exp.
// y may alias x.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <Eigen/Core>
#include <cmath>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

// The axis is the contiguous one: one row per outer index.
void softmax_rows(ThreadPool& pool, int64_t outer, int64_t axis, bool log, const float* x,
                  float* y) {
  pool.parallel_for(outer, detail::min_chunk_for(axis), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * axis;
      const ConstArrayMap xa(xr, axis);
      ArrayMap ya(y + r * axis, axis);
      const float mx = detail::reduce_contiguous<detail::max_nan>(xr, axis, -__builtin_inff());
      if (log) {
        const float log_sum = std::log((xa - mx).exp().sum());
        ya = xa - mx - log_sum;
      } else {
        ya = (xa - mx).exp();
        ya *= 1.0f / ya.sum();
      }
    }
  });
}

// The axis is strided by inner: columns are processed in blocks of kBlock, with the
// per-column maximum and sum on the stack.
void softmax_columns(ThreadPool& pool, int64_t outer, int64_t axis, int64_t inner, bool log,
                     const float* x, float* y) {
  constexpr int64_t kBlock = 256;
  const int64_t blocks = detail::ceil_div(inner, kBlock);
  pool.parallel_for(outer * blocks, detail::min_chunk_for(axis * kBlock), [&](int64_t w0, int64_t w1) {
    float max_buf[kBlock];
    float sum_buf[kBlock];
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t o = w / blocks, j0 = (w % blocks) * kBlock;
      const int64_t len = detail::min_i64(kBlock, inner - j0);
      const int64_t base = o * axis * inner + j0;
      ArrayMap mx(max_buf, len), sum(sum_buf, len);
      mx.setConstant(-__builtin_inff());
      for (int64_t a = 0; a < axis; ++a) {
        const float* xr = x + base + a * inner;
        for (int64_t j = 0; j < len; ++j) max_buf[j] = detail::max_nan(max_buf[j], xr[j]);
      }
      sum.setZero();
      for (int64_t a = 0; a < axis; ++a) {
        const ConstArrayMap xa(x + base + a * inner, len);
        if (log) {
          sum += (xa - mx).exp();
        } else {
          ArrayMap ya(y + base + a * inner, len);
          ya = (xa - mx).exp();
          sum += ya;
        }
      }
      if (log) {
        sum = sum.log();  // now log of the sum
        for (int64_t a = 0; a < axis; ++a) {
          ArrayMap ya(y + base + a * inner, len);
          ya = ConstArrayMap(x + base + a * inner, len) - mx - sum;
        }
      } else {
        sum = sum.inverse();
        for (int64_t a = 0; a < axis; ++a) {
          ArrayMap ya(y + base + a * inner, len);
          ya *= sum;
        }
      }
    }
  });
}

}  // namespace

void softmax_f32(ThreadPool& pool, int64_t outer, int64_t axis, int64_t inner, bool log,
                 const float* x, float* y) {
  if (outer <= 0 || axis <= 0 || inner <= 0) return;
  if (inner == 1) {
    softmax_rows(pool, outer, axis, log, x, y);
  } else {
    softmax_columns(pool, outer, axis, inner, log, x, y);
  }
}

}  // namespace aotc::rt
