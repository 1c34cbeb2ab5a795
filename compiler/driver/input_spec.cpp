// input_spec.cpp - see input_spec.h.
#include "input_spec.h"

#include <cctype>
#include <stdexcept>

namespace aotc::driver {

namespace {

bool is_dim_name(const std::string& part) {
  if (part.empty() || part.size() > 32 ||
      !(std::isalpha(static_cast<unsigned char>(part[0])) || part[0] == '_'))
    return false;
  for (char c : part)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_') || c == 'x') return false;
  return true;
}

}  // namespace

bool InputSignature::dynamic() const {
  for (const std::string& name : dim_names)
    if (!name.empty()) return true;
  return false;
}

frontend::InputSpec parse_input_spec(const std::string& text) {
  InputSignature signature = parse_input_signature(text);
  if (signature.dynamic())
    throw std::invalid_argument("--input '" + text + "': named dims are for aotc --dim; give sizes here");
  return signature.spec;
}

DimRange parse_dim_range(const std::string& text) {
  const std::string syntax = "--dim '" + text + "': expected NAME=MIN..MAX, e.g. B=1..32";
  const size_t eq = text.find('=');
  const size_t dots = text.find("..", eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || dots == std::string::npos) throw std::invalid_argument(syntax);
  DimRange range;
  range.name = text.substr(0, eq);
  if (!is_dim_name(range.name))
    throw std::invalid_argument("--dim '" + text + "': '" + range.name +
                                "' is not a dim name (a letter or '_', then letters, digits or '_'; no 'x')");
  auto number = [&](const std::string& part) -> int64_t {
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument(syntax);
    return std::stoll(part);
  };
  range.min = number(text.substr(eq + 1, dots - eq - 1));
  range.max = number(text.substr(dots + 2));
  if (range.min < 1) throw std::invalid_argument("--dim '" + text + "': MIN must be at least 1");
  if (range.max < range.min) throw std::invalid_argument("--dim '" + text + "': MAX is below MIN");
  return range;
}

InputSignature parse_input_signature(const std::string& text) {
  InputSignature signature;
  frontend::InputSpec& spec = signature.spec;
  const size_t c1 = text.find(':');
  if (c1 == std::string::npos || c1 == 0)
    throw std::invalid_argument("--input '" + text + "': expected NAME:DIMS[:DTYPE], e.g. x:1x3x224x224");
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
    if (is_dim_name(part)) {
      spec.shape.push_back(0);
      signature.dim_names.push_back(part);
      if (x == std::string::npos) break;
      pos = x + 1;
      continue;
    }
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("--input '" + text + "': '" + dims +
                                  "' is not a list of sizes or dim names like 1x3x224x224 or BxS");
    const long long size = std::stoll(part);
    if (size <= 0) throw std::invalid_argument("--input '" + text + "': sizes must be positive");
    spec.shape.push_back(size);
    signature.dim_names.emplace_back();
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  if (spec.shape.size() > 8)
    throw std::invalid_argument("--input '" + text + "': at most 8 dimensions are supported");
  int64_t total = 1;
  for (int64_t d : spec.shape) {
    if (d == 0) continue;  // a named dim: its --dim MAX is checked with the others
    if (total > (int64_t{1} << 40) / d)
      throw std::invalid_argument("--input '" + text + "': the tensor is too large");
    total *= d;
  }
  return signature;
}

}  // namespace aotc::driver
