// kernels/special_math.h - special functions that neither the C library nor CUDA's math
// library has in the form torch computes: digamma, the inverse error function and the
// inverse of the normal distribution function. Each is computed in double and rounded once
// by the caller, on the CPU (runtime/src/kernels/unary.cpp) and in the CUDA target's
// pointwise kernels (rt/cuda/pointwise.cuh) alike: within an ulp of float32 of the exact
// value, so of torch's float32 results up to their own error.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define AOTC_SPECIAL __host__ __device__ inline
#else
#define AOTC_SPECIAL inline
#endif

namespace aotc::rt::special {

inline constexpr double kPi = 3.14159265358979323846;

// psi(x) = d/dx ln Gamma(x). At 0: -inf (+0) or +inf (-0); NaN at the negative integers and
// -inf (torch's and SciPy's conventions). Negative x by the reflection psi(1 - x) - pi /
// tan(pi x) with the fraction of x in the tangent (pi x itself would round); then the
// recurrence psi(x) = psi(x + 1) - 1/x up to x >= 6 and the asymptotic series there
// (ln x - 1/(2x) - sum B_2k / (2k x^2k), 6 terms: under 1e-12 relative at x = 6).
AOTC_SPECIAL double digamma(double x) {
  if (x == 0.0) return ::copysign(INFINITY, -x);
  double reflected = 0.0;
  if (x < 0.0) {
    const double whole = std::trunc(x);
    if (x == whole) return NAN;
    reflected = -kPi / std::tan(kPi * (x - whole));
    x = 1.0 - x;
  }
  double shift = 0.0;
  while (x < 6.0) {
    shift -= 1.0 / x;
    x += 1.0;
  }
  const double z = 1.0 / (x * x);
  const double series =
      z * (1.0 / 12 -
           z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760))))));
  return reflected + shift + std::log(x) - 0.5 / x - series;
}

// erfinv(y): the x with erf(x) = y; +-inf at +-1, NaN outside [-1, 1]. A closed-form start
// (Winitzki's, within 2e-3) and three Newton steps on erf in double.
AOTC_SPECIAL double erfinv(double y) {
  if (!(y >= -1.0 && y <= 1.0)) return NAN;
  if (y == 1.0 || y == -1.0) return ::copysign(INFINITY, y);
  if (y == 0.0) return y;
  constexpr double a = 0.147;
  const double ln = std::log((1.0 - y) * (1.0 + y));
  const double b = 2.0 / (kPi * a) + 0.5 * ln;
  double x = ::copysign(std::sqrt(std::sqrt(b * b - ln / a) - b), y);
  for (int step = 0; step < 3; ++step)
    x -= (std::erf(x) - y) / (1.1283791670955126 * std::exp(-x * x));  // 2 / sqrt(pi)
  return x;
}

// ndtri(p): the x with Phi(x) = p (the standard normal distribution); +-inf at 1 and 0, NaN
// outside [0, 1]. The lower half (p < 1/2, the upper one by symmetry, exact for a float p)
// starts from Abramowitz and Stegun 26.2.23 (within 5e-4) and takes four Newton steps on
// Phi(x) = erfc(-x / sqrt 2) / 2, which keeps its relative accuracy far into the tail.
AOTC_SPECIAL double ndtri(double p) {
  if (!(p >= 0.0 && p <= 1.0)) return NAN;
  if (p == 0.0) return -INFINITY;
  if (p == 1.0) return INFINITY;
  if (p == 0.5) return 0.0;
  const bool upper = p > 0.5;
  const double q = upper ? 1.0 - p : p;
  const double t = std::sqrt(-2.0 * std::log(q));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                       (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  for (int step = 0; step < 4; ++step) {
    const double density = 0.3989422804014327 * std::exp(-0.5 * x * x);  // 1 / sqrt(2 pi)
    if (density == 0.0) break;
    x -= (0.5 * std::erfc(-x * 0.7071067811865476) - q) / density;
  }
  return upper ? -x : x;
}

}  // namespace aotc::rt::special
