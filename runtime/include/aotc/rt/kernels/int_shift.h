// int_shift.h - torch's integer shifts, shared by the CPU (binary.cpp) and CUDA
// (cuda/pointwise.cuh) kernels: a left shift by b outside [0, bits) is 0; a right shift by b
// outside [0, bits - 1) is a shift by bits - 1 (every bit the sign); the left shift of a
// negative value goes through the unsigned type (defined, as torch's).
#pragma once

#include <type_traits>

#if defined(__CUDACC__)
#define AOTC_SHIFT __host__ __device__ inline
#else
#define AOTC_SHIFT inline
#endif

namespace aotc::rt {

template <class T>
AOTC_SHIFT T shift_left(T a, T b) {
  constexpr T bits = static_cast<T>(sizeof(T) * 8);
  if (b < 0 || b >= bits) return 0;
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << b);
}

template <class T>
AOTC_SHIFT T shift_right(T a, T b) {
  constexpr T last = static_cast<T>(sizeof(T) * 8 - 1);
  if (b < 0 || b >= last) return static_cast<T>(a >> last);
  return static_cast<T>(a >> b);
}

}  // namespace aotc::rt

#undef AOTC_SHIFT
