// kernels/scan_step.h - one step of the scans (ScanOp, reductions.h), shared by the CPU
// kernel (runtime/src/kernels/scan.cpp) and the CUDA one (runtime/cuda/kernels/scan.cu) so
// that both compute torch's CPU formulas, in the same order and types.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define AOTC_SCAN_STEP __host__ __device__ inline
#else
#define AOTC_SCAN_STEP inline
#endif

namespace aotc::rt::scan_step {

// log(exp(x) + exp(acc)) as torch's _log_add_exp_helper: NaN propagates, and two infinities
// of one sign stay that infinity (where max + log1p(exp(min - max)) would be NaN).
AOTC_SCAN_STEP double log_add_exp(double x, double acc) {
  const double lo = std::isnan(acc) ? acc : (x < acc ? x : acc);
  const double hi = std::isnan(acc) ? acc : (x < acc ? acc : x);
  if (lo != hi || std::isfinite(lo)) return std::log1p(std::exp(lo - hi)) + hi;
  return x;
}

// Whether x replaces the running extremum `kept` (torch's cummax / cummin helper): a NaN
// always (so the first NaN is kept and later NaNs take the index), otherwise where kept is
// not NaN and x >= kept (max) or x <= kept (min): an equal value takes the later index.
template <class T>
AOTC_SCAN_STEP bool replaces(bool is_max, T x, T kept) {
  if constexpr (sizeof(T) == 4) {
    if (std::isnan(x)) return true;
    if (std::isnan(kept)) return false;
  }
  return is_max ? x >= kept : x <= kept;
}

// a * b for int64 wrapping as torch's (two's complement), no undefined overflow.
AOTC_SCAN_STEP int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

}  // namespace aotc::rt::scan_step
