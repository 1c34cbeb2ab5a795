// dim_polynomial.cpp - see dim_polynomial.h. Exact arithmetic throughout (128-bit
// rationals): a size is trusted only if it matches every sample exactly.
#include "dim_polynomial.h"

#include <cstdlib>
#include <numeric>

namespace aotc::driver {
namespace {

using i128 = __int128;

i128 abs128(i128 v) { return v < 0 ? -v : v; }

i128 gcd128(i128 a, i128 b) {
  a = abs128(a);
  b = abs128(b);
  while (b != 0) {
    const i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

struct Rational {
  i128 num = 0;
  i128 den = 1;
  void normalise() {
    if (den < 0) {
      num = -num;
      den = -den;
    }
    const i128 g = gcd128(num, den);
    if (g > 1) {
      num /= g;
      den /= g;
    }
  }
};

constexpr i128 kLimit = (i128{1} << 100);  // far from overflow in the products below

bool add_product(Rational& acc, i128 num, i128 den) {
  // acc += num / den
  if (abs128(num) > kLimit || abs128(den) > kLimit || abs128(acc.num) > kLimit || abs128(acc.den) > kLimit)
    return false;
  const i128 g = gcd128(acc.den, den);
  const i128 lcm_part = den / g;
  if (abs128(acc.den) > kLimit / (abs128(lcm_part) + 1)) return false;
  acc.num = acc.num * lcm_part + num * (acc.den / g);
  acc.den *= lcm_part;
  acc.normalise();
  return true;
}

// Lagrange basis polynomial j over points xs: coefficients (lowest power first) of its
// numerator, and its denominator.
void lagrange_basis(const std::vector<int64_t>& xs, size_t j, std::vector<i128>& numerator,
                    i128& denominator) {
  numerator.assign(1, 1);
  denominator = 1;
  for (size_t m = 0; m < xs.size(); ++m) {
    if (m == j) continue;
    std::vector<i128> next(numerator.size() + 1, 0);
    for (size_t p = 0; p < numerator.size(); ++p) {
      next[p + 1] += numerator[p];
      next[p] -= numerator[p] * xs[m];
    }
    numerator = next;
    denominator *= static_cast<i128>(xs[j] - xs[m]);
  }
}

}  // namespace

std::optional<DimPolynomial> DimPolynomial::interpolate(const std::vector<std::vector<int64_t>>& grid_values,
                                                        const std::vector<int64_t>& values) {
  const size_t dims = grid_values.size();
  // basis[d][j]: dim d's Lagrange polynomial for its j-th grid value.
  std::vector<std::vector<std::vector<i128>>> basis(dims);
  std::vector<std::vector<i128>> basis_den(dims);
  size_t points = 1, terms = 1;
  for (size_t d = 0; d < dims; ++d) {
    const size_t n = grid_values[d].size();
    basis[d].resize(n);
    basis_den[d].resize(n);
    for (size_t j = 0; j < n; ++j) lagrange_basis(grid_values[d], j, basis[d][j], basis_den[d][j]);
    points *= n;
    terms *= n;  // powers 0 .. n-1
  }
  if (values.size() != points) return std::nullopt;
  DimPolynomial poly;
  std::vector<Rational> coefficient(terms);
  std::vector<size_t> point(dims), power(dims);
  for (size_t p = 0; p < points; ++p) {
    for (size_t d = dims, rest = p; d-- > 0;) {
      point[d] = rest % grid_values[d].size();
      rest /= grid_values[d].size();
    }
    if (values[p] == 0) continue;
    for (size_t t = 0; t < terms; ++t) {
      for (size_t d = dims, rest = t; d-- > 0;) {
        power[d] = rest % grid_values[d].size();
        rest /= grid_values[d].size();
      }
      i128 num = values[p], den = 1;
      for (size_t d = 0; d < dims; ++d) {
        num *= basis[d][point[d]][power[d]];
        den *= basis_den[d][point[d]];
        if (num == 0) break;
        if (abs128(num) > kLimit || abs128(den) > kLimit) return std::nullopt;
      }
      if (num != 0 && !add_product(coefficient[t], num, den)) return std::nullopt;
    }
  }
  i128 denominator = 1;
  for (const Rational& c : coefficient) {
    if (c.num == 0) continue;
    denominator = denominator / gcd128(denominator, c.den) * c.den;
    if (denominator > kLimit) return std::nullopt;
  }
  poly.denominator_ = denominator;
  for (size_t t = 0; t < terms; ++t) {
    const Rational& c = coefficient[t];
    if (c.num == 0) continue;
    std::vector<int> exponent(dims);
    for (size_t d = dims, rest = t; d-- > 0;) {
      exponent[d] = static_cast<int>(rest % grid_values[d].size());
      rest /= grid_values[d].size();
    }
    poly.exponents_.push_back(exponent);
    poly.coefficients_.push_back(c.num * (denominator / c.den));
  }
  return poly;
}

std::optional<int64_t> DimPolynomial::evaluate(const std::vector<int64_t>& dims) const {
  i128 sum = 0;
  for (size_t t = 0; t < coefficients_.size(); ++t) {
    i128 term = coefficients_[t];
    for (size_t d = 0; d < exponents_[t].size(); ++d)
      for (int e = 0; e < exponents_[t][d]; ++e) {
        term *= dims.at(d);
        if (abs128(term) > kLimit) return std::nullopt;
      }
    sum += term;
  }
  if (sum % denominator_ != 0) return std::nullopt;
  const i128 value = sum / denominator_;
  if (value > INT64_MAX || value < INT64_MIN) return std::nullopt;
  return static_cast<int64_t>(value);
}

bool DimPolynomial::is_constant() const {
  for (const auto& exponent : exponents_)
    for (int e : exponent)
      if (e) return false;
  return true;
}

std::string DimPolynomial::expression(const std::vector<std::string>& dim_names,
                                      const std::string& prefix) const {
  auto text = [](i128 v) {
    std::string s;
    const bool negative = v < 0;
    if (negative) v = -v;
    do {
      s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
      v /= 10;
    } while (v != 0);
    return s;
  };
  std::string sum;
  // Highest powers first reads like the size it is ("B*S*768 + 64").
  for (size_t t = coefficients_.size(); t-- > 0;) {
    const i128 c = coefficients_[t];
    std::string factors;
    for (size_t d = 0; d < exponents_[t].size(); ++d)
      for (int e = 0; e < exponents_[t][d]; ++e)
        factors += (factors.empty() ? "" : "*") + prefix + dim_names[d];
    std::string term;
    if (factors.empty())
      term = text(c);
    else
      term = abs128(c) == 1 ? factors : factors + "*" + text(c);
    if (sum.empty())
      sum = (c < 0 ? "-" : "") + term;
    else
      sum += (c < 0 ? " - " : " + ") + term;
  }
  if (sum.empty()) sum = "0";
  if (denominator_ != 1) {
    const bool one_factor = coefficients_.size() == 1 && sum.find_first_of("*-") == std::string::npos;
    return (one_factor ? sum : "(" + sum + ")") + "/" + text(denominator_);
  }
  return sum;
}

}  // namespace aotc::driver
