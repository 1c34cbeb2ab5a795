// dim_polynomial.h - integer sizes as polynomials in a model's named dims (aotc --dim).
// aotc compiles a model with dynamic dims at sample sizes of them; every size the code
// uses (an extent, a stride, a byte count) is then the polynomial through its values at
// a grid of samples, of degree at most 2 in each dim (B*H*S*S, an attention's scores,
// is of degree 2 in S), checked at further samples before it is trusted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace aotc::driver {

// A polynomial with rational coefficients over named dims, kept as an integer
// numerator polynomial over one positive denominator: value = numerator / denominator.
class DimPolynomial {
 public:
  // The polynomial through values[i] at grid point i. The grid is the product of
  // grid_values[d] (distinct sizes of dim d, at most 3), enumerated with the last dim
  // fastest. Returns nullopt when a coefficient does not fit in 64 bits.
  static std::optional<DimPolynomial> interpolate(const std::vector<std::vector<int64_t>>& grid_values,
                                                  const std::vector<int64_t>& values);

  // The value at these dim sizes, if it is an integer that fits in 64 bits.
  std::optional<int64_t> evaluate(const std::vector<int64_t>& dims) const;
  bool is_constant() const;
  // A C++ expression over variables named prefix + dim name ("aotc_dim_B*aotc_dim_S*768");
  // with prefix "" the readable form ("B*S*768").
  std::string expression(const std::vector<std::string>& dim_names, const std::string& prefix) const;

 private:
  // exponents[t][d]: the power of dim d in term t; coefficients[t]: its integer numerator.
  std::vector<std::vector<int>> exponents_;
  std::vector<__int128> coefficients_;
  __int128 denominator_ = 1;
};

}  // namespace aotc::driver
