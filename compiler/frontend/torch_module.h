// torch_module.h - the frontend's entry for a module already in memory (the TorchScript
// backend's preprocess gets one from torch._C._jit_to_backend, never a file). Includes
// LibTorch: only code linked against it (the frontend, the backend library) includes this.
#pragma once

#include <torch/csrc/jit/api/module.h>

#include "frontend.h"

namespace aotc::frontend {

// import_torchscript without the file: options.model_path only names the module in
// messages. The module is not changed (it is frozen as a copy).
ir::Graph import_module(torch::jit::Module module, const Options& options, Census* census = nullptr);

}  // namespace aotc::frontend
