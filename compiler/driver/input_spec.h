// input_spec.h - the NAME:DIMS[:DTYPE] syntax of aotc's --input option, shared by the
// command line and the TorchScript backend's compile spec.
#pragma once

#include <string>

#include "../frontend/frontend.h"

namespace aotc::driver {

// Parses "x:1x3x224x224" or "ids:2x128:int64"; throws std::invalid_argument with a
// message that quotes the text and says what is wrong.
frontend::InputSpec parse_input_spec(const std::string& text);

}  // namespace aotc::driver
