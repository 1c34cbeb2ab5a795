// import_torchscript.cpp - load, check the signature, freeze, clean up, then lower.
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/frozen_graph_optimizations.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/lower_tuples.h>
#include <torch/csrc/jit/passes/peephole.h>
#include <torch/csrc/jit/passes/remove_mutation.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/headeronly/version.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "../ir/error.h"
#include "interpreter.h"
#include "torch_module.h"

namespace aotc::frontend {
namespace {

// c10::Error messages carry a C++ backtrace after the first lines; users need the first.
std::string first_line(const std::string& message) {
  std::string line = message.substr(0, message.find('\n'));
  return line.empty() ? message : line;
}

const std::string& libtorch_version() {
  static const std::string version =
      std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR);
  return version;
}

// The location that TorchScript's compile errors carry after their first line: the
// "File "code/__torch__/....py", line 8" line and the code up to the "<--- HERE" marker.
std::string code_location(const std::string& message) {
  const size_t at = message.find("File \"");
  if (at == std::string::npos) return "";
  std::istringstream lines(message.substr(at));
  std::string line, text;
  for (int n = 0; n < 8 && std::getline(lines, line); ++n) {
    text += "\n    " + line;
    if (line.find("<--- HERE") != std::string::npos) break;
  }
  return text;
}

// What LibTorch's loader says about a file from a newer (or much older) torch, in the
// words a user needs: which op or format version, and what to do about it.
std::optional<std::string> explain_version_error(const std::string& path, const std::string& message) {
  std::smatch m;
  if (std::regex_search(
          message, m,
          std::regex("with version (\\d+), but the maximum supported version for reading is (\\d+)")))
    return path + ": the file was written by a newer torch than aotc's LibTorch " + libtorch_version() +
           ": its file format version is " + m[1].str() + ", and LibTorch " + libtorch_version() +
           " reads versions up to " + m[2].str() + "; save the model with torch " + libtorch_version() +
           " or older (aotc loads files from torch 1.13 on)";
  if (std::regex_search(
          message, m,
          std::regex("with version (\\d+), but the minimum supported version for reading is (\\d+)")))
    return path + ": the file was written by a torch too old for aotc: its file format version is " +
           m[1].str() + ", and LibTorch " + libtorch_version() + " reads versions from " + m[2].str() +
           "; load it with a newer torch and save it again with torch.jit.save";
  if (std::regex_search(message, m, std::regex("Unknown builtin op: ([A-Za-z0-9_:.]+)"))) {
    std::string op = m[1].str();
    if (!op.empty() && op.back() == '.') op.pop_back();
    // An op of another library's namespace (torchvision::nms, roi_align; a user's own
    // torch.library op) is registered by that library's extension, never by LibTorch.
    const std::string ns = op.substr(0, op.find("::"));
    if (op.find("::") != std::string::npos && ns != "aten" && ns != "prim" && ns != "quantized" &&
        ns != "_caffe2")
      return path + ": the model calls " + op + ", an op of the " + ns +
             " extension, not of LibTorch: aotc compiles LibTorch's ops only (for a detection model, "
             "compile the network without its post-processing such as nms and run that outside)" +
             code_location(message);
    return path + ": the model calls " + op + ", which aotc's LibTorch " + libtorch_version() +
           " does not know: it was probably saved by a newer torch that added this op; save it with torch " +
           libtorch_version() + " or older, or avoid the op" + code_location(message);
  }
  if (message.find("Arguments for call are not valid") != std::string::npos ||
      message.find("Expected at most") != std::string::npos ||
      message.find("Keyword argument") != std::string::npos) {
    std::string op;
    if (std::regex_search(message, m, std::regex("\\n\\s*(aten::[A-Za-z0-9_]+)"))) op = m[1].str() + " ";
    return path + ": the model calls " + (op.empty() ? "an op " : op) +
           "with arguments that aotc's LibTorch " + libtorch_version() +
           " does not accept: it was probably saved by a newer torch that changed the op; " +
           "save it with torch " + libtorch_version() + " or older" + code_location(message);
  }
  return std::nullopt;
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
    // Files from older torch versions load as they are: LibTorch reads every file format
    // version from 1 on and replaces ops whose meaning changed since (aten::div on
    // integers before version 4, linspace/logspace without steps, ...) by their upgraders.
    return torch::jit::load(path);
  } catch (const c10::Error& e) {
    const std::string full = e.what_without_backtrace();
    if (auto explained = explain_version_error(path, full)) throw CompileError(*explained);
    const std::string message = first_line(full);
    if (message.find("constants.pkl") != std::string::npos || message.find("code/") != std::string::npos ||
        message.find("PytorchStreamReader") != std::string::npos)
      throw CompileError(path + ": not a loadable TorchScript archive (" + message +
                         "); a file made by torch.save() must be converted with torch.jit.script "
                         "or torch.jit.trace and saved with torch.jit.save");
    throw CompileError(path + ": cannot load TorchScript: " + message);
  } catch (const std::exception& e) {
    if (auto explained = explain_version_error(path, e.what())) throw CompileError(*explained);
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

// Matches the --input options to the method's arguments, in order, by name. Arguments
// that no --input names take their default values (nn.TransformerEncoder's mask=None, ...).
// Returns, per argument after self, nullopt for an --input and the default otherwise.
std::vector<std::optional<c10::IValue>> match_arguments(const torch::jit::Method& method,
                                                        const std::string& name, const Options& options) {
  const auto& schema = method.function().getSchema();
  std::vector<const c10::Argument*> args;
  for (const auto& arg : schema.arguments())
    if (&arg != &schema.arguments().front())
      args.push_back(&arg);  // argument 0 is the module, whatever its name
  std::string signature = name + "(";
  for (size_t i = 0; i < args.size(); ++i) {
    signature += (i ? ", " : "") + args[i]->name() + ": " + args[i]->type()->annotation_str();
    if (args[i]->default_value()) {
      std::ostringstream value;
      value << *args[i]->default_value();
      signature += "=" + value.str();
    }
  }
  signature += ")";
  size_t required = 0;
  for (const auto* arg : args) required += !arg->default_value();
  const auto count_error = [&] {
    return CompileError(
        options.model_path + ": " + signature + " takes " + std::to_string(args.size()) + " argument(s)" +
        (required < args.size() ? " (" + std::to_string(required) + " without a default)" : "") + ", but " +
        std::to_string(options.inputs.size()) +
        " --input option(s) were given; give one --input NAME:DIMS[:DTYPE] per argument, in order");
  };
  std::vector<std::optional<c10::IValue>> bound;
  size_t next = 0;  // the next --input
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& arg = *args[i];
    if (next < options.inputs.size() && base_name(arg.name()) == options.inputs[next].name) {
      c10::TypePtr type = arg.type();
      if (auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
      if (type->kind() != c10::TypeKind::TensorType)
        throw CompileError(options.model_path + ": argument '" + arg.name() + "' of " + signature +
                           " has type " + arg.type()->annotation_str() +
                           "; aotc compiles methods whose arguments are tensors (or have defaults)");
      bound.push_back(std::nullopt);
      ++next;
      continue;
    }
    if (arg.default_value()) {
      bound.push_back(*arg.default_value());
      continue;
    }
    if (next >= options.inputs.size()) throw count_error();
    if (arg.type()->kind() != c10::TypeKind::TensorType)
      throw CompileError(options.model_path + ": argument '" + arg.name() + "' of " + signature +
                         " has type " + arg.type()->annotation_str() +
                         "; aotc compiles methods whose arguments are tensors (or have defaults)");
    throw CompileError(options.model_path + ": --input " + std::to_string(next + 1) + " is named '" +
                       options.inputs[next].name + "', but argument " + std::to_string(i + 1) + " of " +
                       signature + " is '" + arg.name() + "'");
  }
  if (next < options.inputs.size()) {
    for (const auto* arg : args)
      if (base_name(arg->name()) == options.inputs[next].name)
        throw CompileError(options.model_path + ": --input '" + options.inputs[next].name +
                           "' is out of order: give the --input options in the order of " + signature);
    if (options.inputs.size() > args.size()) throw count_error();
    throw CompileError(options.model_path + ": --input '" + options.inputs[next].name +
                       "' names no argument of " + signature);
  }
  return bound;
}

}  // namespace

ir::Graph import_torchscript(const Options& options, Census* census) {
  return import_module(load_module(options.model_path), options, census);
}

namespace {

// A method frozen and cleaned up for the input names and dtypes of options; the input
// shapes only matter when it is lowered.
struct PreparedMethod {
  std::shared_ptr<torch::jit::Graph> graph;
  c10::IValue self;
  std::vector<std::optional<c10::IValue>> arguments;
  // Where the method is lowered several times (ModuleFile): the IR graphs share their
  // constants' buffers and what passes derive from them. Null for a single lowering.
  std::shared_ptr<ConstantPool> pool;
  std::shared_ptr<ir::DerivedConstants> derived;
};

PreparedMethod prepare_method(torch::jit::Module module, const Options& options) {
  // A scripted module with @torch.jit._overload_method forward (nn.LSTM, nn.GRU) has
  // forward__0, forward__1, ... instead: the first whose arguments fit the inputs is used.
  std::vector<std::string> candidates;
  if (module.find_method(options.method)) candidates.push_back(options.method);
  for (int i = 0; candidates.empty() || i > 0; ++i) {
    const std::string overload = options.method + "__" + std::to_string(i);
    if (!module.find_method(overload)) break;
    candidates.push_back(overload);
  }
  if (candidates.empty()) {
    std::string names;
    for (const auto& m : module.get_methods()) names += (names.empty() ? "" : ", ") + m.name();
    throw CompileError(options.model_path + ": the module has no method '" + options.method +
                       "' (methods: " + (names.empty() ? "none" : names) + ")");
  }
  std::string method_name;
  std::vector<std::optional<c10::IValue>> arguments;
  std::optional<CompileError> first_error;
  for (const std::string& candidate : candidates) {
    try {
      arguments = match_arguments(*module.find_method(candidate), candidate, options);
      method_name = candidate;
      break;
    } catch (const CompileError& e) {
      if (!first_error) first_error = e;
    }
  }
  if (method_name.empty()) throw *first_error;

  std::shared_ptr<torch::jit::Graph> graph;
  c10::IValue self;
  try {
    module.eval();
    // Freezing inlines parameters as constants and folds conv+batch_norm (what
    // torch.jit.freeze does, for any method: an overloaded module has no forward).
    torch::jit::Module frozen = torch::jit::freeze_module(module, {method_name});
    self = frozen._ivalue();
    graph = frozen.get_method(method_name).graph()->copy();
    torch::jit::OptimizeFrozenGraph(graph, /*optimize_numerics=*/true);
    torch::jit::Inline(*graph);
    torch::jit::LowerSimpleTuples(graph);
    // In-place pointwise ops keep self's dtype (x.eq_(y) stays float,
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
    throw CompileError(options.model_path + ": TorchScript could not prepare '" + method_name +
                       "': " + first_line(e.what_without_backtrace()));
  }
  if (options.verbose) {
    std::fprintf(stderr, "aotc: TorchScript graph of %s after freezing and clean-up:\n%s\n",
                 method_name.c_str(), graph->toString().c_str());
  }
  return {graph, self, arguments, nullptr, nullptr};
}

ir::Graph lower_prepared(const PreparedMethod& method, const Options& options, Census* census) {
  ir::Graph ir_graph;
  ir_graph.quantized_engine = options.quantized_engine;
  ir_graph.derived_constants = method.derived;
  for (const InputSpec& input : options.inputs) ir_graph.add_input(input.dtype, input.shape, input.name);
  Census local;
  Census& found = census ? *census : local;
  lower_graph(method.graph, ir_graph, options.verbose, found, method.self, method.arguments,
              method.pool.get(), options.fold_small_factories);
  if (!census && !found.ok()) throw CompileError(found.error_report());
  return ir_graph;
}

}  // namespace

ir::Graph import_module(torch::jit::Module module, const Options& options, Census* census) {
  return lower_prepared(prepare_method(std::move(module), options), options, census);
}

struct ModuleFile::Loaded {
  torch::jit::Module module;
  // The method prepared for the last set of input names and dtypes: freezing does not
  // depend on the shapes, and is most of the frontend's time on a large model. Its lowerings
  // share their constants' bytes (PreparedMethod::pool, ::derived).
  std::string prepared_for;
  std::optional<PreparedMethod> prepared;
};

ModuleFile::ModuleFile(const std::string& path) : loaded_(new Loaded{load_module(path), {}, {}}) {}

ModuleFile::~ModuleFile() = default;

ir::Graph ModuleFile::import(const Options& options, Census* census) {
  std::string key = options.method;
  for (const InputSpec& in : options.inputs) key += "|" + in.name + ":" + ir::dtype_name(in.dtype);
  if (!loaded_->prepared || loaded_->prepared_for != key) {
    loaded_->prepared = prepare_method(loaded_->module, options);
    loaded_->prepared->pool = std::make_shared<ConstantPool>(*loaded_->prepared->graph);
    loaded_->prepared->derived = std::make_shared<ir::DerivedConstants>();
    loaded_->prepared_for = key;
  }
  return lower_prepared(*loaded_->prepared, options, census);
}

}  // namespace aotc::frontend
