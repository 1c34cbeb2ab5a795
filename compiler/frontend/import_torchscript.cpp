// import_torchscript.cpp - load, check the signature, freeze, clean up, then lower.
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/lower_tuples.h>
#include <torch/csrc/jit/passes/peephole.h>
#include <torch/csrc/jit/passes/remove_mutation.h>
#include <torch/csrc/jit/serialization/import.h>

#include <filesystem>
#include <fstream>

#include "../ir/error.h"
#include "interpreter.h"

namespace aotc::frontend {
namespace {

// c10::Error messages carry a C++ backtrace after the first lines; users need the first.
std::string first_line(const std::string& message) {
  std::string line = message.substr(0, message.find('\n'));
  return line.empty() ? message : line;
}

torch::jit::Module load_module(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw CompileError(path + ": no such file");
  if (fs::is_directory(path, ec)) throw CompileError(path + ": is a directory, not a TorchScript file");
  // A FIFO or device would block or never end: only regular files are read.
  if (!fs::is_regular_file(path, ec)) throw CompileError(path + ": is not a regular file");
  {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw CompileError(path + ": cannot be opened for reading");
    char magic[4] = {};
    file.read(magic, sizeof magic);
    if (file.gcount() < 4 || magic[0] != 'P' || magic[1] != 'K')
      throw CompileError(path +
                         ": not a TorchScript file (expected a zip archive as written by "
                         "torch.jit.save)");
  }
  try {
    return torch::jit::load(path);
  } catch (const c10::Error& e) {
    const std::string message = first_line(e.what_without_backtrace());
    if (message.find("constants.pkl") != std::string::npos || message.find("code/") != std::string::npos ||
        message.find("PytorchStreamReader") != std::string::npos)
      throw CompileError(path + ": not a loadable TorchScript archive (" + message +
                         "); a file made by torch.save() must be converted with torch.jit.script "
                         "or torch.jit.trace and saved with torch.jit.save");
    throw CompileError(path + ": cannot load TorchScript: " + message);
  } catch (const std::exception& e) {
    throw CompileError(path + ": cannot load TorchScript: " + first_line(e.what()));
  }
}

// Strips TorchScript's ".N" uniquing suffix from debug names ("x.1" -> "x").
std::string base_name(std::string name) {
  auto dot = name.rfind('.');
  if (dot != std::string::npos && dot + 1 < name.size() &&
      name.find_first_not_of("0123456789", dot + 1) == std::string::npos)
    name.resize(dot);
  return name;
}

void check_signature(const torch::jit::Method& method, const Options& options) {
  const auto& schema = method.function().getSchema();
  std::vector<const c10::Argument*> args;
  for (const auto& arg : schema.arguments())
    if (&arg != &schema.arguments().front()) args.push_back(&arg);  // argument 0 is the module, whatever its name
  std::string signature = options.method + "(";
  for (size_t i = 0; i < args.size(); ++i)
    signature += (i ? ", " : "") + args[i]->name() + ": " + args[i]->type()->annotation_str();
  signature += ")";
  if (args.size() != options.inputs.size())
    throw CompileError(
        options.model_path + ": " + signature + " takes " + std::to_string(args.size()) +
        " argument(s), but " + std::to_string(options.inputs.size()) +
        " --input option(s) were given; give one --input NAME:DIMS[:DTYPE] per argument, in order");
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& arg = *args[i];
    if (arg.type()->kind() != c10::TypeKind::TensorType)
      throw CompileError(options.model_path + ": argument '" + arg.name() + "' of " + signature +
                         " has type " + arg.type()->annotation_str() +
                         "; aotc compiles methods whose arguments are all tensors");
    if (base_name(arg.name()) != options.inputs[i].name)
      throw CompileError(options.model_path + ": --input " + std::to_string(i + 1) + " is named '" +
                         options.inputs[i].name + "', but argument " + std::to_string(i + 1) + " of " +
                         signature + " is '" + arg.name() + "'");
  }
}

}  // namespace

ir::Graph import_torchscript(const Options& options) {
  torch::jit::Module module = load_module(options.model_path);
  auto method = module.find_method(options.method);
  if (!method) {
    std::string names;
    for (const auto& m : module.get_methods()) names += (names.empty() ? "" : ", ") + m.name();
    throw CompileError(options.model_path + ": the module has no method '" + options.method +
                       "' (methods: " + (names.empty() ? "none" : names) + ")");
  }
  check_signature(*method, options);

  std::shared_ptr<torch::jit::Graph> graph;
  try {
    module.eval();
    // Freezing inlines parameters as constants and folds conv+batch_norm; the method
    // must be preserved explicitly when it is not forward.
    std::optional<std::vector<std::string>> preserved;
    if (options.method != "forward") preserved = std::vector<std::string>{options.method};
    torch::jit::Module frozen = torch::jit::freeze(module, preserved, /*optimize_numerics=*/true);
    graph = frozen.get_method(options.method).graph()->copy();
    torch::jit::Inline(*graph);
    torch::jit::LowerSimpleTuples(graph);
    // (ops-pointwise) In-place pointwise ops keep self's dtype (x.eq_(y) stays float,
    // int32.add_(int64) stays int32) while the out-of-place forms this pass would put in
    // their place promote: they stay in-place, and aotc lowers them as such.
    torch::jit::RemoveTensorMutation(graph, [](torch::jit::Node* node) {
      const std::string name = node->kind().toQualString();
      for (const char* op : {"aten::eq_",          "aten::ne_",          "aten::lt_",
                             "aten::le_",          "aten::gt_",          "aten::ge_",
                             "aten::greater_",     "aten::less_",        "aten::greater_equal_",
                             "aten::less_equal_",  "aten::not_equal_",   "aten::logical_and_",
                             "aten::logical_or_",  "aten::logical_xor_", "aten::logical_not_",
                             "aten::add_",         "aten::sub_",         "aten::mul_",
                             "aten::div_",         "aten::true_divide_", "aten::floor_divide_",
                             "aten::remainder_",   "aten::fmod_",        "aten::pow_",
                             "aten::bitwise_and_", "aten::bitwise_or_",  "aten::bitwise_xor_",
                             "aten::__iand__",     "aten::__ior__",      "aten::__ixor__",
                             "aten::clamp_",       "aten::clamp_min_",   "aten::clamp_max_",
                             "aten::addcmul_",     "aten::addcdiv_",     "aten::lerp_"})
        if (name == op) return false;
      return true;
    });
    torch::jit::ConstantPropagation(graph);
    torch::jit::PeepholeOptimize(graph);
    torch::jit::EliminateDeadCode(graph);
  } catch (const c10::Error& e) {
    throw CompileError(options.model_path + ": TorchScript could not prepare '" + options.method +
                       "': " + first_line(e.what_without_backtrace()));
  }
  if (options.verbose) {
    std::fprintf(stderr, "aotc: TorchScript graph after freezing and clean-up:\n%s\n",
                 graph->toString().c_str());
  }

  ir::Graph ir_graph;
  for (const InputSpec& input : options.inputs) ir_graph.add_input(input.dtype, input.shape, input.name);
  lower_graph(graph, ir_graph, options.verbose);
  return ir_graph;
}

}  // namespace aotc::frontend
