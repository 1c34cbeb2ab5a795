// input_spec.h - the NAME:DIMS[:DTYPE] syntax of aotc's --input option, shared by the
// command line and the TorchScript backend's compile spec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../frontend/frontend.h"

namespace aotc::driver {

// One --input whose dims may be named (aotc --input ids:BxS:int64 --dim B=1..32 ...):
// spec.shape holds 0 where dim_names has a name.
struct InputSignature {
  frontend::InputSpec spec;
  std::vector<std::string> dim_names;  // one per dim; "" for a fixed size
  bool dynamic() const;
};

// A --dim NAME=MIN..MAX.
struct DimRange {
  std::string name;
  int64_t min = 0;
  int64_t max = 0;
};

// Parses "x:1x3x224x224", "ids:BxS:int64"; a dim name starts with a letter or '_' and
// holds letters, digits and '_' but no 'x' (the separator). Throws std::invalid_argument.
InputSignature parse_input_signature(const std::string& text);

// Parses "B=1..32"; throws std::invalid_argument with a message that says the syntax.
DimRange parse_dim_range(const std::string& text);

// Parses "x:1x3x224x224" or "ids:2x128:int64" (fixed sizes only); throws std::invalid_argument with a
// message that quotes the text and says what is wrong.
frontend::InputSpec parse_input_spec(const std::string& text);

}  // namespace aotc::driver
