// kernels/binary_search.h - the position of a value among sorted boundaries, torch's
// searchsorted arithmetic, shared by the CPU kernel (runtime/src/kernels/searchsorted.cpp)
// and the CUDA one (runtime/cuda/kernels/searchsorted.cu).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define AOTC_SEARCH_STEP __host__ __device__ inline
#else
#define AOTC_SEARCH_STEP inline
#endif

namespace aotc::rt::binary_search {

// The first i in [0, length) with sorted[i] >= value (right: sorted[i] > value), else
// length, written as torch's: a comparison that fails (a NaN on either side) moves right,
// so a NaN value lands past the end.
template <class T>
AOTC_SEARCH_STEP int64_t position(const T* sorted, int64_t length, T value, bool right) {
  int64_t start = 0, end = length;
  while (start < end) {
    const int64_t mid = start + ((end - start) >> 1);
    const T at = sorted[mid];
    if (!(right ? at > value : at >= value))
      start = mid + 1;
    else
      end = mid;
  }
  return start;
}

}  // namespace aotc::rt::binary_search
