// frontend.h - the only part of aotc that sees LibTorch. It loads a TorchScript file,
// freezes and cleans it up with the JIT's own passes, specialises it to the input shapes
// the user names, evaluates everything known at compile time (shapes, ifs, loops) and
// lowers the rest to aotc's IR through the lowerings in compiler/ops.
#pragma once

#include <string>
#include <vector>

#include "../ir/graph.h"

namespace aotc::frontend {

struct InputSpec {
  std::string name;
  ir::Shape shape;
  ir::DType dtype = ir::DType::Float32;
};

struct Options {
  std::string model_path;
  std::string method = "forward";
  std::vector<InputSpec> inputs;
  bool verbose = false;
};

// Throws CompileError with a message for the user on any problem; when ops are
// unsupported, the message lists all of them with their counts and source lines.
ir::Graph import_torchscript(const Options& options);

}  // namespace aotc::frontend
