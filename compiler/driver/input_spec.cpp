// input_spec.cpp - see input_spec.h.
#include "input_spec.h"

#include <stdexcept>

namespace aotc::driver {

frontend::InputSpec parse_input_spec(const std::string& text) {
  const size_t c1 = text.find(':');
  if (c1 == std::string::npos || c1 == 0)
    throw std::invalid_argument("--input '" + text + "': expected NAME:DIMS[:DTYPE], e.g. x:1x3x224x224");
  frontend::InputSpec spec;
  spec.name = text.substr(0, c1);
  const size_t c2 = text.find(':', c1 + 1);
  const std::string dims = text.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
  if (c2 != std::string::npos) {
    const std::string dtype = text.substr(c2 + 1);
    auto parsed = ir::parse_dtype(dtype);
    if (!parsed)
      throw std::invalid_argument("--input '" + text + "': unknown dtype '" + dtype +
                                  "' (float32, float16, bfloat16, int64, int32, bool)");
    spec.dtype = *parsed;
  }
  if (dims.empty()) throw std::invalid_argument("--input '" + text + "': DIMS is empty");
  size_t pos = 0;
  while (pos <= dims.size()) {
    const size_t x = dims.find('x', pos);
    const std::string part = dims.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("--input '" + text + "': '" + dims +
                                  "' is not a list of sizes like 1x3x224x224");
    const long long size = std::stoll(part);
    if (size <= 0) throw std::invalid_argument("--input '" + text + "': sizes must be positive");
    spec.shape.push_back(size);
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  if (spec.shape.size() > 8)
    throw std::invalid_argument("--input '" + text + "': at most 8 dimensions are supported");
  int64_t total = 1;
  for (int64_t d : spec.shape) {
    if (total > (int64_t{1} << 40) / d)
      throw std::invalid_argument("--input '" + text + "': the tensor is too large");
    total *= d;
  }
  return spec;
}

}  // namespace aotc::driver
