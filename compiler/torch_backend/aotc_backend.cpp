// aotc_backend.cpp - the TorchScript backend "aotc" (torch/csrc/jit/backends/backend.h).
//
//   preprocess  runs aotc's compiler on the module, once per method named in the compile
//               spec, and stores each built model library's bytes (a uint8 tensor, so
//               torch.jit.save keeps them in the archive) with the spec it was built for;
//   compile     loads those bytes into memory and creates the models;
//   execute     runs a method's model on the inputs through the C ABI.
//
// Compile spec, per method: a list of --input strings ["x:1x3x224x224", "ids:1x128:int64"],
// or a dict {"inputs": that list (or one string of them separated by spaces), "target":
// "cpu" | "cuda", "precision": "fp32" | "tf32" | "fp16" | "bf16", "threads": N}.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <torch/csrc/jit/backends/backend.h>
#include <torch/csrc/jit/backends/backend_preprocess.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "../driver/build_model.h"
#include "../driver/input_spec.h"
#include "../frontend/torch_module.h"
#include "../ir/error.h"
#include "model_library.h"

namespace aotc::torch_backend {
namespace {

using c10::IValue;

// One method's compile spec, parsed.
struct MethodSpec {
  std::vector<std::string> inputs;  // --input strings
  std::string target = "cpu";
  std::string precision;  // empty: the target's default
  int64_t threads = 0;    // 0: torch's intra-op thread count when the module is loaded
};

std::string text_of(const IValue& value, const std::string& what) {
  TORCH_CHECK(value.isString(), "aotc: compile spec: ", what, " must be a string, got ", value.tagKind());
  return value.toStringRef();
}

std::vector<std::string> inputs_of(const IValue& value, const std::string& method) {
  std::vector<std::string> inputs;
  if (value.isString()) {
    std::istringstream words(value.toStringRef());
    for (std::string word; words >> word;) inputs.push_back(word);
  } else if (value.isList()) {
    for (const IValue& item : value.toListRef())
      inputs.push_back(text_of(item, "each input of '" + method + "'"));
  } else {
    TORCH_CHECK(false, "aotc: compile spec of '", method,
                "': inputs must be a list of NAME:DIMS[:DTYPE] strings, got ", value.tagKind());
  }
  TORCH_CHECK(!inputs.empty(), "aotc: compile spec of '", method,
              "' names no inputs (give NAME:DIMS[:DTYPE] each)");
  return inputs;
}

MethodSpec parse_method_spec(const std::string& method, const IValue& value) {
  MethodSpec spec;
  if (!value.isGenericDict()) {
    spec.inputs = inputs_of(value, method);
    return spec;
  }
  for (const auto& entry : value.toGenericDict()) {
    const std::string key = text_of(entry.key(), "a key of the spec of '" + method + "'");
    const IValue& v = entry.value();
    if (key == "inputs") {
      spec.inputs = inputs_of(v, method);
    } else if (key == "target") {
      spec.target = text_of(v, "target");
      TORCH_CHECK(spec.target == "cpu" || spec.target == "cuda", "aotc: compile spec of '", method,
                  "': target must be 'cpu' or 'cuda', got '", spec.target, "'");
    } else if (key == "precision") {
      spec.precision = text_of(v, "precision");
    } else if (key == "threads") {
      spec.threads = v.isInt() ? v.toInt() : std::stoll(text_of(v, "threads"));
      TORCH_CHECK(spec.threads >= 0, "aotc: compile spec of '", method, "': threads must be >= 0");
    } else {
      TORCH_CHECK(false, "aotc: compile spec of '", method, "': unknown key '", key,
                  "' (known: inputs, target, precision, threads)");
    }
  }
  TORCH_CHECK(!spec.inputs.empty(), "aotc: compile spec of '", method, "' has no 'inputs'");
  TORCH_CHECK(spec.precision.empty() || spec.target == "cuda", "aotc: compile spec of '", method,
              "': precision is for target 'cuda'");
  return spec;
}

// A private directory, removed with everything in it when this goes out of scope.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "aotc-preprocess-XXXXXX").string();
    TORCH_CHECK(mkdtemp(pattern.data()), "aotc: cannot create a temporary directory");
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

at::Tensor read_bytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  TORCH_CHECK(file, "aotc: cannot read the built library ", path.string());
  const std::streamsize size = file.tellg();
  at::Tensor bytes = at::empty({static_cast<int64_t>(size)}, at::TensorOptions().dtype(c10::kByte));
  file.seekg(0);
  file.read(reinterpret_cast<char*>(bytes.data_ptr<uint8_t>()), size);
  TORCH_CHECK(file.gcount() == size, "aotc: short read of ", path.string());
  return bytes;
}

// "module Backbone" for __torch__.___torch_mangle_3.Backbone: the class name the user wrote.
std::string module_label(const torch::jit::Module& module) {
  const auto name = module.type()->name();
  if (!name) return "module <unnamed>";
  std::string clean;
  std::istringstream parts(name->qualifiedName());
  for (std::string part; std::getline(parts, part, '.');)
    if (part != "__torch__" && part.rfind("___torch_mangle_", 0) != 0)
      clean += (clean.empty() ? "" : ".") + part;
  return "module " + clean;
}

// The rounding of the quantized engine this process's torch runs: its "x86" engine runs
// convolutions on oneDNN only on Linux where the CPU has AVX512-VNNI (torch's
// should_use_onednn_quant). (torch decides when it packs the weights, under the engine set
// then: a module loaded under one engine and lowered under another gets the second's.)
ir::QuantizedEngine torch_quantized_engine() {
#if defined(__x86_64__) && defined(__linux__)
  if (at::globalContext().qEngine() == at::QEngine::X86 && __builtin_cpu_supports("avx512vnni"))
    return ir::QuantizedEngine::X86;
#endif
  return ir::QuantizedEngine::Fbgemm;
}

// Compiles one method of the module; returns its processed entry.
IValue compile_method(const torch::jit::Module& module, const std::string& method, const MethodSpec& spec) {
  const std::string label = module_label(module);
  frontend::Options options;
  options.model_path = label;
  options.method = method;
  options.quantized_engine = torch_quantized_engine();
  for (const std::string& text : spec.inputs) {
    try {
      options.inputs.push_back(driver::parse_input_spec(text));
    } catch (const std::invalid_argument& e) {
      TORCH_CHECK(false, "aotc: compile spec of '", method, "': ", e.what());
    }
  }
  TempDir temp;
  driver::ModelBuild build;
  build.source_name = label;
  build.output = (temp.path / "model.so").string();
  build.cuda = spec.target == "cuda";
  // A CPU method whose threads the spec gives is built for them (aotc --cpu-threads).
  if (!build.cuda && spec.threads > 0)
    build.cpu_threads = static_cast<int>(std::min<int64_t>(spec.threads, 1024));
  if (!spec.precision.empty()) build.cuda_options.precision = spec.precision;
  try {
    if (build.cuda) codegen::cuda::parse_precision(build.cuda_options.precision);
    driver::build_model(frontend::import_module(module, options), build);
  } catch (const CompileError& e) {
    TORCH_CHECK(false, "aotc: ", e.what());
  }
  c10::impl::GenericDict entry(c10::StringType::get(), c10::AnyType::get());
  entry.insert("library", read_bytes(build.output));
  c10::List<std::string> inputs;
  for (const std::string& text : spec.inputs) inputs.push_back(text);
  entry.insert("inputs", inputs);
  entry.insert("target", spec.target);
  entry.insert("threads", spec.threads);
  entry.insert("label", label + "." + method);
  return entry;
}

IValue preprocess(const torch::jit::Module& module, const c10::Dict<IValue, IValue>& method_compile_spec,
                  const torch::jit::BackendDebugHandleGenerator&) {
  c10::impl::GenericDict processed(c10::StringType::get(), c10::AnyType::get());
  for (const auto& entry : method_compile_spec) {
    const std::string method = text_of(entry.key(), "a method name");
    processed.insert(method, compile_method(module, method, parse_method_spec(method, entry.value())));
  }
  return processed;
}

class AotcBackend : public torch::jit::PyTorchBackendInterface {
 public:
  bool is_available() override { return true; }

  c10::impl::GenericDict compile(IValue processed, c10::impl::GenericDict /*method_compile_spec*/) override {
    c10::impl::GenericDict handles(c10::StringType::get(), c10::AnyType::get());
    for (const auto& entry : processed.toGenericDict()) {
      const std::string method = entry.key().toStringRef();
      const auto info = entry.value().toGenericDict();
      const at::Tensor bytes = info.at("library").toTensor().contiguous();
      const int64_t threads = info.at("threads").toInt();
      models_[method] = std::make_shared<ModelLibrary>(
          bytes.data_ptr<uint8_t>(), static_cast<size_t>(bytes.numel()), info.at("label").toStringRef(),
          static_cast<int>(threads > 0 ? threads : at::get_num_threads()));
      handles.insert(method, method);
    }
    return handles;
  }

  c10::impl::GenericList execute(IValue handle, c10::impl::GenericList inputs) override {
    const auto it = models_.find(handle.toStringRef());
    TORCH_CHECK(it != models_.end(), "aotc: no compiled method '", handle.toStringRef(), "'");
    std::vector<at::Tensor> tensors;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const IValue input = inputs.get(i);  // a copy: the list hands out proxies, not references
      TORCH_CHECK(input.isTensor(), "aotc: ", handle.toStringRef(), ": every input must be a tensor, got ",
                  input.tagKind());
      tensors.push_back(input.toTensor());
    }
    c10::impl::GenericList outputs(c10::AnyType::get());
    for (at::Tensor& t : it->second->run(tensors)) outputs.push_back(std::move(t));
    return outputs;
  }

 private:
  std::map<std::string, std::shared_ptr<ModelLibrary>> models_;
};

const auto registered_backend = torch::jit::backend<AotcBackend>("aotc");
const auto registered_preprocess = torch::jit::backend_preprocess_register("aotc", preprocess);

}  // namespace
}  // namespace aotc::torch_backend
