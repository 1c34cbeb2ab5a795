// Dynamic dims (aotc --dim): the polynomials sizes become, the fitting of generated code
// across samples, and the --input / --dim syntax.
#include <doctest/doctest.h>

#include <stdexcept>

#include "../../compiler/driver/dim_polynomial.h"
#include "../../compiler/driver/fit_generated_code.h"
#include "../../compiler/driver/input_spec.h"
#include "../../compiler/ir/error.h"

using namespace aotc;
using driver::DimPolynomial;

namespace {

// Values of f on the grid (last dim fastest).
template <typename F>
std::vector<int64_t> on_grid(const std::vector<std::vector<int64_t>>& grid, F f) {
  std::vector<int64_t> values;
  if (grid.size() == 1)
    for (int64_t a : grid[0]) values.push_back(f(a, 0));
  else
    for (int64_t a : grid[0])
      for (int64_t b : grid[1]) values.push_back(f(a, b));
  return values;
}

}  // namespace

TEST_CASE("dim polynomials interpolate products, squares and quotients exactly") {
  const std::vector<std::vector<int64_t>> grid{{32, 5, 17}, {512, 6, 258}};
  auto scores =
      DimPolynomial::interpolate(grid, on_grid(grid, [](int64_t b, int64_t s) { return b * 12 * s * s; }));
  REQUIRE(scores);
  CHECK(scores->expression({"B", "S"}, "") == "B*S*S*12");
  CHECK(scores->evaluate({3, 77}) == 3 * 12 * 77 * 77);
  auto half = DimPolynomial::interpolate(grid, on_grid(grid, [](int64_t, int64_t s) { return s / 2; }));
  REQUIRE(half);
  CHECK(half->expression({"B", "S"}, "") == "S/2");
  CHECK(half->evaluate({1, 10}) == 5);
  CHECK(!half->evaluate({1, 11}));  // not an integer: never a size
  auto affine =
      DimPolynomial::interpolate(grid, on_grid(grid, [](int64_t b, int64_t s) { return b * s * 64 + 256; }));
  REQUIRE(affine);
  CHECK(affine->expression({"B", "S"}, "d_") == "d_B*d_S*64 + 256");
  auto constant = DimPolynomial::interpolate(grid, on_grid(grid, [](int64_t, int64_t) { return 7; }));
  REQUIRE(constant);
  CHECK(constant->is_constant());
}

TEST_CASE("a size that is not a polynomial fails at a check point") {
  const std::vector<std::vector<int64_t>> grid{{64, 6, 35}};
  auto clamped = DimPolynomial::interpolate(
      grid, on_grid(grid, [](int64_t s, int64_t) { return std::min<int64_t>(s, 16); }));
  REQUIRE(clamped);
  bool wrong_somewhere = false;
  for (int64_t s : {1, 2, 9, 20, 50}) {
    auto v = clamped->evaluate({s});
    wrong_somewhere |= !v || *v != std::min<int64_t>(s, 16);
  }
  CHECK(wrong_somewhere);
}

TEST_CASE("generated code is fitted literal by literal, and refused where it changes otherwise") {
  auto code = [](int64_t s, const char* kernel) {
    return "  {  // gemm at m.py:3\n    p.m = " + std::to_string(s * 8) + "; p.k = 64; " + kernel +
           "(pool, p, arena + 128, " + std::to_string(s * 256) +
           "ull);\n    if (i >= " + std::to_string(s * 4) + "ll) return;\n  }\n";
  };
  const std::vector<std::vector<int64_t>> grid_values{{64, 6, 35}};
  std::vector<driver::CodeSample> grid;
  for (int64_t s : grid_values[0]) grid.push_back({{s}, code(s, "gemm_f32")});
  const std::vector<driver::CodeSample> checks{{{1}, code(1, "gemm_f32")}, {{50}, code(50, "gemm_f32")}};
  const std::string fitted = driver::fit_generated_code(grid_values, grid, checks, 0, {"S"}, "d_");
  CHECK(fitted.find("p.m = static_cast<int64_t>(d_S*8);") != std::string::npos);
  CHECK(fitted.find("p.k = 64;") != std::string::npos);
  CHECK(fitted.find("arena + 128,") != std::string::npos);
  CHECK(fitted.find("static_cast<unsigned long long>(d_S*256)") != std::string::npos);
  CHECK(fitted.find("if (i >= static_cast<int64_t>(d_S*4)) return;") != std::string::npos);

  const std::vector<driver::CodeSample> other{{{1}, code(1, "gemv_f32")}};
  std::vector<int64_t> failed;
  try {
    driver::fit_generated_code(grid_values, grid, other, 0, {"S"}, "d_", &failed);
    FAIL("a kernel chosen by S was not refused");
  } catch (const CompileError& e) {
    CHECK(std::string(e.what()).find("gemm at m.py:3") != std::string::npos);
    CHECK(std::string(e.what()).find("S") != std::string::npos);
    CHECK(failed == std::vector<int64_t>{1});
  }
}

TEST_CASE("--input names dims and --dim gives their ranges") {
  const driver::InputSignature ids = driver::parse_input_signature("ids:BxS:int64");
  CHECK(ids.dynamic());
  CHECK(ids.dim_names == std::vector<std::string>{"B", "S"});
  CHECK(ids.spec.dtype == ir::DType::Int64);
  const driver::InputSignature x = driver::parse_input_signature("x:Nx3x224x224");
  CHECK(x.dim_names == std::vector<std::string>{"N", "", "", ""});
  CHECK(x.spec.shape == ir::Shape{0, 3, 224, 224});
  CHECK(!driver::parse_input_signature("x:1x3").dynamic());
  CHECK_THROWS_AS(driver::parse_input_spec("ids:BxS:int64"), std::invalid_argument);  // fixed sizes only
  const driver::DimRange b = driver::parse_dim_range("B=1..32");
  CHECK(b.name == "B");
  CHECK(b.min == 1);
  CHECK(b.max == 32);
  for (const char* bad : {"B=1..", "B=0..4", "B=5..4", "max=1..4", "B1..4", "=1..4", "B=a..4"})
    CHECK_THROWS_AS(driver::parse_dim_range(bad), std::invalid_argument);
}
