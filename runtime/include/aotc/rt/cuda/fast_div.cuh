// fast_div.cuh - division of 32-bit unsigned indices by a divisor fixed at launch, as a
// multiply-high, an add and two shifts (Granlund and Montgomery, "Division by invariant
// integers using multiplication", 1994, figure 4.1): exact for every 32-bit dividend. The
// GPU has no integer divider; `n / d` for a runtime d is a ~20-instruction sequence, which
// made index arithmetic, not memory, bound the copy kernels that use this (im2col_nhwc.cu).
#pragma once

#include <cstdint>

namespace aotc::rt::cuda {

class FastDiv {
 public:
  FastDiv() = default;
  explicit FastDiv(uint32_t d) : d_(d) {
    uint32_t l = 0;  // ceil(log2(d))
    while ((uint64_t{1} << l) < d) ++l;
    m_ = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << l) - d)) / d + 1);
    s1_ = l < 1 ? l : 1;
    s2_ = l > 1 ? l - 1 : 0;
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    const uint32_t t = __umulhi(m_, n);
    return (t + ((n - t) >> s1_)) >> s2_;
  }
  __host__ __device__ uint32_t divisor() const { return d_; }

 private:
  uint32_t d_ = 1, m_ = 1, s1_ = 0, s2_ = 0;
};

}  // namespace aotc::rt::cuda
