// frontend.h - the only part of aotc that sees LibTorch. It loads a TorchScript file,
// freezes and cleans it up with the JIT's own passes, specialises it to the input shapes
// the user names, evaluates everything known at compile time (shapes, ifs, loops) and
// lowers the rest to aotc's IR through the lowerings in compiler/ops.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
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
  ir::QuantizedEngine quantized_engine = ir::QuantizedEngine::X86;  // whose rounding (graph.h)
  // x.new_zeros(size), zeros_like(x) and the like, up to 64 KiB, made at compile time
  // (interpreter.cpp). Off for the samples of a --dim build: a result whose size follows a
  // dim would be a constant at small sizes and a run-time fill at large ones, and the
  // samples must be the same graph at every size.
  bool fold_small_factories = true;
};

// What became of one TorchScript op (e.g. "aten::conv2d") in a model, counted per use
// after specialisation (a node inside an unrolled loop counts once per iteration).
struct OpUse {
  std::string schema;    // the overload TorchScript resolved, when known
  int runtime = 0;       // lowered to aotc IR: computed when the model runs
  int compile_time = 0;  // evaluated while compiling (shapes, constants, control flow)
  int unsupported = 0;   // no lowering exists
  int failed = 0;        // a lowering exists but refused this use (see Census::problems)
  // Where the unsupported uses are: distinct source locations with their use counts.
  std::vector<std::pair<ir::SourceLocation, int>> unsupported_at;
};

// Everything the frontend found in a model. import_torchscript fills it when asked
// (aotc --check); otherwise a non-empty list of problems becomes one CompileError.
struct Census {
  std::map<std::string, OpUse> ops;
  // Messages for uses that cannot be compiled for another reason than a missing op:
  // a lowering's refusal, control flow or shapes that depend on run-time values, ...
  std::vector<std::string> problems;

  int unsupported_uses() const;
  bool ok() const { return unsupported_uses() == 0 && problems.empty(); }
  // The error message for a census that is not ok(): every unsupported op with its
  // schema, count and source lines, then every other problem.
  std::string error_report() const;
};

// Throws CompileError with a message for the user on any problem; when ops are
// unsupported, the message lists all of them with their counts and source lines.
// With census != nullptr, unsupported ops and per-use problems are recorded there
// instead of thrown (errors that stop the frontend, like an unreadable file, still throw).
ir::Graph import_torchscript(const Options& options, Census* census = nullptr);

// A model file read once and imported for several sets of input shapes (aotc --dim
// compiles a model at many sample shapes). import() is import_torchscript without the read.
class ModuleFile {
 public:
  explicit ModuleFile(const std::string& path);  // throws CompileError as import_torchscript
  ~ModuleFile();
  ModuleFile(const ModuleFile&) = delete;
  ModuleFile& operator=(const ModuleFile&) = delete;
  ir::Graph import(const Options& options, Census* census = nullptr);

 private:
  struct Loaded;
  std::unique_ptr<Loaded> loaded_;
};

// The element-wise ops that run on a quantized tensor as a 256-entry table: the result is
// a function of each input integer alone (the other arguments known), so torch computes
// every value at compile time (hardswish, hardsigmoid, sigmoid, leaky_relu, ...).
const std::set<std::string>& quantized_elementwise_ops();

// The TorchScript schemas LibTorch knows for an op name ("aten::add" -> its overloads).
std::vector<std::string> schemas_of(const std::string& op_name);

}  // namespace aotc::frontend
