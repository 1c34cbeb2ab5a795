// fit_generated_code.h - one model source for every size of the named dims, from the
// sources generated at sample sizes (see dynamic_build.h): the samples must be the same
// text but for integer literals; each literal that varies becomes its polynomial in the dims.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aotc::driver {

struct CodeSample {
  std::vector<int64_t> sizes;  // one per named dim
  std::string text;            // the part of the generated source that runs the model
};

// grid: one sample per point of the product of grid_values (last dim fastest); checks:
// further samples each fitted literal must match. Returns grid[template_index].text with
// every varying literal replaced by a C++ expression over prefix + dim name. Throws
// CompileError naming the op (from the generated "// kind at file:line" comments), the
// sizes and the dims when the samples differ otherwise or a literal fits no polynomial.
// failed_at, when given, gets the sizes of the sample that did not fit (before the throw).
std::string fit_generated_code(const std::vector<std::vector<int64_t>>& grid_values,
                               const std::vector<CodeSample>& grid, const std::vector<CodeSample>& checks,
                               size_t template_index, const std::vector<std::string>& dim_names,
                               const std::string& prefix, std::vector<int64_t>* failed_at = nullptr);

// "B=32, S=512"
std::string describe_sizes(const std::vector<std::string>& dim_names, const std::vector<int64_t>& sizes);

}  // namespace aotc::driver
