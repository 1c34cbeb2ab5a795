// aotc-run - runs any model .so built by aotc on .npy inputs, or describes it.
//
// It uses nothing but the C ABI of aotc/aotc.h, looked up with dlsym, exactly as a user
// program would: no LibTorch and no aotc runtime linked in, so it works with any model.
//
// Exit status: 0 success, 1 error, 2 usage error; errors are one line on stderr.
#include <aotc/aotc.h>
#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "npy.h"

#ifndef AOTC_VERSION
#define AOTC_VERSION "unknown"
#endif

namespace {

namespace npy = aotc::npy;

constexpr const char* kUsage =
    "usage: aotc-run MODEL.so --info [--json] [--weights FILE] [--max-dim NAME=N ...]\n"
    "       aotc-run MODEL.so --input NAME=FILE.npy ... --output-dir DIR [--threads N] [--weights FILE]\n"
    "                [--max-dim NAME=N ...]\n"
    "       aotc-run MODEL.so --bench [--input NAME=FILE.npy ...] [--shape NAME=DIMS ...]\n"
    "                [--threads N] [--iters N] [--warmup N] [--json] [--weights FILE] [--max-dim NAME=N "
    "...]\n"
    "       aotc-run --help | --version\n"
    "\n"
    "Loads a model library built by aotc through its C ABI (aotc.h) and describes it, runs\n"
    "it once, or times it.\n"
    "\n"
    "  --info               print the inputs, outputs (names, dtypes, shapes), arena size,\n"
    "                       where the weights live, the version of the aotc that built the\n"
    "                       library and of the runtime inside it. A dynamic dim (aotc --dim)\n"
    "                       shows by name, an input's with its range, e.g.\n"
    "                       ids: int64 [B, S] with B in 1..8, S in 1..128, and an output's\n"
    "                       as its size in them, e.g. float32 [B, S, 64]\n"
    "  --json               with --info or --bench: print the same as one JSON object (a\n"
    "                       tensor with dynamic dims adds \"dims\": each dim's name or null,\n"
    "                       min, max and multiple_of; --bench adds the \"shapes\" timed)\n"
    "  --input NAME=FILE    the .npy file for the model input NAME; give every input once\n"
    "  --output-dir DIR     where to write out0.npy, out1.npy, ... (created if missing)\n"
    "  --threads N          threads for the run, 1 to 1024 (default 1)\n"
    "  --bench              time the model: --warmup runs, then --iters timed runs, and\n"
    "                       print min, median, p90 and mean latency in ms and the peak RSS.\n"
    "                       Inputs not given are filled with fixed pseudo-random values:\n"
    "                       floats in [-1, 1), integers 0, booleans true\n"
    "  --shape NAME=DIMS    with --bench, a model with dynamic dims: the shape of the\n"
    "                       synthetic input NAME, e.g. --shape ids=4x77. Every input with\n"
    "                       dynamic dims needs --input or --shape: there is no default\n"
    "  --max-dim NAME=N     a model with dynamic dims: run with a context for sizes of dim\n"
    "                       NAME up to N only, its memory placed for them (with --info:\n"
    "                       the context memory such a context holds)\n"
    "  --iters N            timed runs for --bench, 1 to 1000000 (default 50)\n"
    "  --warmup N           untimed runs before them, 0 to 1000000 (default 5)\n"
    "  --weights FILE       the weights file of a model compiled with aotc --weights file\n"
    "                       (default: MODEL.weights beside MODEL.so)\n"
    "  --help, --version\n"
    "\n"
    "Input files must match the model input exactly: dtype and shape, little-endian,\n"
    "C order (.npy format 1.0, 2.0 or 3.0). A dynamic dim may have any size in its range\n"
    "(and the same size wherever its name appears); outputs are written at the shape of\n"
    "the run. bfloat16 tensors, which .npy cannot name, are read and written as uint16\n"
    "arrays holding the raw bits.\n"
    "Exit status: 0 success, 1 error, 2 usage error.\n";

// A mistake in the command line itself (exit status 2).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Any other failure (exit status 1).
struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- command line ---------------------------------------------------------------------

struct InputArg {
  std::string name;
  std::string path;
};

// --shape NAME=DIMS: the shape of a synthetic --bench input with dynamic dims.
struct ShapeArg {
  std::string name;
  std::vector<int64_t> dims;
  std::string text;  // DIMS as given, for messages
};

struct Options {
  bool help = false;
  bool version = false;
  std::string model_path;
  bool info = false;
  bool json = false;
  std::vector<InputArg> inputs;
  std::vector<ShapeArg> shapes;
  std::vector<std::pair<std::string, int64_t>> max_dims;  // --max-dim NAME=N
  std::optional<std::string> output_dir;
  int threads = 1;
  std::optional<std::string> weights;  // --weights FILE
  bool bench = false;
  long iters = 50;
  long warmup = 5;
};

// An integer option within [low, high], or a UsageError that names the option.
long parse_count(const std::string& option, const std::string& text, long low, long high) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || n < low || n > high)
    throw UsageError(option + " needs an integer from " + std::to_string(low) + " to " +
                     std::to_string(high) + ", got '" + text + "'");
  return n;
}

// --shape NAME=DIMS with DIMS as aotc's --input writes sizes: "4x77". Whether the sizes
// fit the model is the model's to say (aotc_model_output_dims), not the command line's.
ShapeArg parse_shape(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw UsageError("--shape needs NAME=DIMS, e.g. ids=4x77, got '" + spec + "'");
  ShapeArg shape{spec.substr(0, eq), {}, spec.substr(eq + 1)};
  const std::string& dims = shape.text;
  for (size_t pos = 0;;) {
    const size_t x = dims.find('x', pos);
    const std::string part = dims.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    // At most 12 digits: any size a model takes, and no overflow.
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("--shape " + spec + ": '" + dims + "' is not a list of sizes like 4x77");
    shape.dims.push_back(std::stoll(part));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  if (shape.dims.size() > AOTC_MAX_RANK)
    throw UsageError("--shape " + spec + ": at most " + std::to_string(AOTC_MAX_RANK) + " dims");
  return shape;
}

Options parse_args(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<std::string> inline_value;
    // Accept both "--flag value" and "--flag=value".
    if (arg.rfind("--", 0) == 0) {
      if (const size_t eq = arg.find('='); eq != std::string::npos) {
        inline_value = arg.substr(eq + 1);
        arg.resize(eq);
      }
    }
    const auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= argc) throw UsageError("option '" + arg + "' needs a value");
      return argv[++i];
    };
    const auto no_value = [&] {
      if (inline_value) throw UsageError("option '" + arg + "' takes no value");
    };
    if (arg == "--help" || arg == "-h") {
      no_value();
      options.help = true;
    } else if (arg == "--version") {
      no_value();
      options.version = true;
    } else if (arg == "--info") {
      no_value();
      options.info = true;
    } else if (arg == "--json") {
      no_value();
      options.json = true;
    } else if (arg == "--input") {
      const std::string spec = value();
      const size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        throw UsageError("--input needs NAME=FILE.npy, got '" + spec + "'");
      options.inputs.push_back({spec.substr(0, eq), spec.substr(eq + 1)});
    } else if (arg == "--shape") {
      options.shapes.push_back(parse_shape(value()));
    } else if (arg == "--max-dim") {
      const std::string spec = value();
      const size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UsageError("--max-dim needs NAME=N, e.g. S=128, got '" + spec + "'");
      options.max_dims.emplace_back(spec.substr(0, eq), parse_count("--max-dim " + spec.substr(0, eq),
                                                                    spec.substr(eq + 1), 0, 1000000000000L));
    } else if (arg == "--output-dir") {
      options.output_dir = value();
      if (options.output_dir->empty()) throw UsageError("--output-dir needs a directory");
    } else if (arg == "--weights") {
      options.weights = value();
      if (options.weights->empty()) throw UsageError("--weights needs a file");
    } else if (arg == "--threads") {
      options.threads = static_cast<int>(parse_count(arg, value(), 1, 1024));
    } else if (arg == "--bench") {
      no_value();
      options.bench = true;
    } else if (arg == "--iters") {
      options.iters = parse_count(arg, value(), 1, 1000000);
    } else if (arg == "--warmup") {
      options.warmup = parse_count(arg, value(), 0, 1000000);
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw UsageError("unknown option '" + arg + "'");
    } else if (options.model_path.empty()) {
      options.model_path = arg;
    } else {
      throw UsageError("unexpected argument '" + arg + "' (the model is '" + options.model_path + "')");
    }
  }
  if (options.help || options.version) return options;
  if (options.model_path.empty()) throw UsageError("no model given");
  if (options.json && !options.info && !options.bench) throw UsageError("--json goes with --info or --bench");
  if (options.info && options.bench) throw UsageError("--info and --bench do not go together");
  if (options.bench) {
    if (options.output_dir) throw UsageError("--bench writes no outputs: drop --output-dir");
  } else if (options.info) {
    if (!options.inputs.empty() || !options.shapes.empty() || options.output_dir)
      throw UsageError("--info does not run the model: drop --input/--shape/--output-dir");
  } else {
    if (!options.output_dir) throw UsageError("missing --output-dir (or use --info)");
    if (!options.shapes.empty())
      throw UsageError("--shape goes with --bench: a run takes each input's shape from its .npy file");
  }
  return options;
}

// ---- the model library ----------------------------------------------------------------

// The ABI functions of one loaded model library.
struct Api {
  uint32_t (*abi_version)(void);
  const char* (*last_error)(void);
  const char* (*status_name)(aotc_status);
  size_t (*dtype_size)(aotc_dtype);
  const char* (*dtype_name)(aotc_dtype);
  aotc_status (*model_create)(aotc_model**);
  aotc_status (*model_destroy)(aotc_model*);
  aotc_status (*model_num_inputs)(const aotc_model*, size_t*);
  aotc_status (*model_num_outputs)(const aotc_model*, size_t*);
  aotc_status (*model_input_info)(const aotc_model*, size_t, aotc_tensor_info*);
  aotc_status (*model_output_info)(const aotc_model*, size_t, aotc_tensor_info*);
  aotc_status (*model_arena_size)(const aotc_model*, uint64_t*);
  aotc_status (*context_create)(aotc_model*, const aotc_context_options*, aotc_context**);
  aotc_status (*context_destroy)(aotc_context*);
  aotc_status (*run)(const aotc_model*, aotc_context*, const aotc_tensor*, size_t, aotc_tensor*, size_t);
  // Minor version 1 (nullptr in older libraries).
  aotc_status (*model_create_v2)(const aotc_model_options*, aotc_model**);
  aotc_status (*model_weights_info)(aotc_weights_info*);
  aotc_status (*model_arena_requirements)(const aotc_model*, int32_t, uint64_t*, uint64_t*);
  // Minor version 2 (nullptr in older libraries, which all run on the CPU).
  aotc_status (*model_device)(aotc_device_type*);
  // Minor version 3 (nullptr in libraries built before aotc recorded versions).
  const char* (*runtime_version)(void);
  const char* (*compiler_version)(void);
  // Minor version 4 (nullptr in older libraries, whose shapes are all fixed).
  aotc_status (*model_input_dim_range)(const aotc_model*, size_t, int32_t, aotc_dim_range*);
  aotc_status (*model_output_dim_range)(const aotc_model*, size_t, int32_t, aotc_dim_range*);
  aotc_status (*model_output_dims)(const aotc_model*, const aotc_tensor*, size_t, size_t, int64_t*);
  aotc_status (*context_output_dims)(const aotc_context*, size_t, int64_t*);
  // Minor version 6 (nullptr in older libraries: no aotc_context_options.dim_limits).
  aotc_status (*model_arena_requirements_v2)(const aotc_model*, const aotc_context_options*, uint64_t*,
                                             uint64_t*);
};

// The version of the aotc that generated the library and of the runtime linked into it,
// for --info; nullopt where the library predates the functions (or reports nothing).
std::optional<std::string> compiler_version(const Api& api) {
  const char* version = api.compiler_version ? api.compiler_version() : nullptr;
  if (!version || !*version) return std::nullopt;
  return std::string(version);
}

std::optional<std::string> runtime_version(const Api& api) {
  const char* version = api.runtime_version ? api.runtime_version() : nullptr;
  if (!version || !*version) return std::nullopt;
  return std::string(version);
}

// "cpu" or "cuda": where the library's model runs. aotc-run always passes host memory; a
// CUDA model copies inputs to the GPU and outputs back itself (AOTC_MEMORY_HOST).
const char* device_name(const Api& api) {
  aotc_device_type device = AOTC_DEVICE_CPU;
  if (api.model_device && api.model_device(&device) == AOTC_OK && device == AOTC_DEVICE_CUDA) return "cuda";
  return "cpu";
}

// Where aotc --weights file puts the weights of MODEL.so: MODEL.weights (the .so suffix
// replaced, else .weights appended), as codegen's weights_path_for does.
std::string default_weights_path(const std::string& model_path) {
  const size_t slash = model_path.rfind('/');
  const size_t name_start = slash == std::string::npos ? 0 : slash + 1;
  const size_t name_size = model_path.size() - name_start;
  if (name_size > 3 && model_path.compare(model_path.size() - 3, 3, ".so") == 0)
    return model_path.substr(0, model_path.size() - 3) + ".weights";
  return model_path + ".weights";
}

// Where a loaded model's weights come from.
struct WeightsSource {
  bool external = false;
  std::string path;  // the weights file, when external
  uint64_t size_bytes = 0;
  uint64_t checksum = 0;
  bool known = false;  // false: a library older than aotc_model_weights_info (embedded)
};

// Owns the dlopen handle, the model and its context; releases them in reverse order
// (the context's worker threads must stop before the code they run is unmapped).
class Library {
 public:
  Library(const std::string& path, const std::optional<std::string>& weights) : path_(path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      throw RunError("cannot open model '" + path + "': " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw RunError("cannot open model '" + path + "': is a directory");
    // Without a slash dlopen would search the library path instead of the current directory.
    const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
    handle_.reset(::dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL));
    if (!handle_) {
      const char* why = ::dlerror();
      throw RunError("cannot load model '" + path +
                     "' (not a shared library for this machine?): " + (why ? why : "unknown dlopen error"));
    }
    resolve("aotc_abi_version", api_.abi_version);
    // Check the version before trusting any other signature.
    const uint32_t version = api_.abi_version();
    if (version != AOTC_ABI_VERSION)
      throw RunError("model '" + path + "' has ABI version " + std::to_string(version) +
                     ", this aotc-run supports version " + std::to_string(AOTC_ABI_VERSION));
    resolve("aotc_last_error", api_.last_error);
    resolve("aotc_status_name", api_.status_name);
    resolve("aotc_dtype_size", api_.dtype_size);
    resolve("aotc_dtype_name", api_.dtype_name);
    resolve("aotc_model_create", api_.model_create);
    resolve("aotc_model_destroy", api_.model_destroy);
    resolve("aotc_model_num_inputs", api_.model_num_inputs);
    resolve("aotc_model_num_outputs", api_.model_num_outputs);
    resolve("aotc_model_input_info", api_.model_input_info);
    resolve("aotc_model_output_info", api_.model_output_info);
    resolve("aotc_model_arena_size", api_.model_arena_size);
    resolve("aotc_context_create", api_.context_create);
    resolve("aotc_context_destroy", api_.context_destroy);
    resolve("aotc_run", api_.run);
    resolve_optional("aotc_model_create_v2", api_.model_create_v2);
    resolve_optional("aotc_model_weights_info", api_.model_weights_info);
    resolve_optional("aotc_model_arena_requirements", api_.model_arena_requirements);
    resolve_optional("aotc_model_device", api_.model_device);
    resolve_optional("aotc_runtime_version", api_.runtime_version);
    resolve_optional("aotc_compiler_version", api_.compiler_version);
    resolve_optional("aotc_model_input_dim_range", api_.model_input_dim_range);
    resolve_optional("aotc_model_output_dim_range", api_.model_output_dim_range);
    resolve_optional("aotc_model_output_dims", api_.model_output_dims);
    resolve_optional("aotc_context_output_dims", api_.context_output_dims);
    resolve_optional("aotc_model_arena_requirements_v2", api_.model_arena_requirements_v2);
    aotc_weights_info info{};
    if (api_.model_weights_info) {
      check(api_.model_weights_info(&info), "aotc_model_weights_info");
      weights_.known = true;
      weights_.external = info.location == AOTC_WEIGHTS_EXTERNAL;
      weights_.size_bytes = info.size_bytes;
      weights_.checksum = info.checksum;
    }
    if (!weights_.external) {
      if (weights)
        throw RunError("model '" + path + "' has its weights embedded: --weights " + *weights +
                       " is only for models compiled with aotc --weights file");
      check(api_.model_create(&model_), "aotc_model_create");
      return;
    }
    if (!api_.model_create_v2)
      throw RunError("'" + path_ + "' has external weights but no aotc_model_create_v2");
    weights_.path = weights ? *weights : default_weights_path(path);
    aotc_model_options options{};
    options.weights_path = weights_.path.c_str();
    const aotc_status status = api_.model_create_v2(&options, &model_);
    if (status != AOTC_OK && !weights) {
      struct stat st {};
      if (::stat(weights_.path.c_str(), &st) != 0)
        throw RunError("model '" + path + "' keeps its weights in a separate file, expected at '" +
                       weights_.path + "' (not found: " + std::strerror(errno) +
                       "); give it with --weights FILE");
    }
    check(status, "aotc_model_create_v2");
  }

  ~Library() {
    if (context_) api_.context_destroy(context_);
    if (model_) api_.model_destroy(model_);
    // handle_ closes last, being the first member.
  }

  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Api& api() const { return api_; }
  aotc_model* model() const { return model_; }
  const WeightsSource& weights() const { return weights_; }

  aotc_context* context(int threads) {
    if (!context_) {
      const aotc_context_options options = context_options(threads);
      check(api_.context_create(model_, &options, &context_), "aotc_context_create");
    }
    return context_;
  }

  // --max-dim: the context's dim_limits (kept here: the options point into them).
  void set_dim_limits(const std::vector<std::pair<std::string, int64_t>>& max_dims) {
    if (!max_dims.empty() && !api_.model_arena_requirements_v2)
      throw RunError(
          "--max-dim needs a library of C ABI minor version 6 or later (aotc_context_options."
          "dim_limits): rebuild '" +
          path_ + "' with this aotc");
    for (const auto& entry : max_dims) limit_names_.push_back(entry.first);
    for (size_t i = 0; i < max_dims.size(); ++i)
      limits_.push_back({limit_names_[i].c_str(), max_dims[i].second, {0, 0}});
  }

  aotc_context_options context_options(int threads) const {
    aotc_context_options options{};
    options.num_threads = threads;
    options.num_dim_limits = static_cast<int32_t>(limits_.size());
    options.dim_limits = limits_.empty() ? nullptr : limits_.data();
    return options;
  }

  // The memory a context of this many threads holds (aotc_model_arena_requirements, with
  // --max-dim its _v2); nullopt for a library older than either.
  std::optional<uint64_t> context_bytes(int threads) const {
    uint64_t bytes = 0;
    if (!limits_.empty()) {
      const aotc_context_options options = context_options(threads);
      check(api_.model_arena_requirements_v2(model_, &options, &bytes, nullptr),
            "aotc_model_arena_requirements_v2");
      return bytes;
    }
    if (!api_.model_arena_requirements) return std::nullopt;
    check(api_.model_arena_requirements(model_, threads, &bytes, nullptr), "aotc_model_arena_requirements");
    return bytes;
  }

  // Throws RunError with the model's own message if status is not AOTC_OK.
  void check(aotc_status status, const char* call) const {
    if (status == AOTC_OK) return;
    throw RunError(std::string(call) + " failed with " + api_.status_name(status) + ": " + api_.last_error());
  }

 private:
  template <class Fn>
  void resolve(const char* name, Fn& fn) {
    ::dlerror();
    void* symbol = ::dlsym(handle_.get(), name);
    if (!symbol) throw RunError("'" + path_ + "' is not an aotc model: it does not export " + name);
    static_assert(sizeof fn == sizeof symbol);
    std::memcpy(&fn, &symbol, sizeof fn);  // POSIX guarantees the conversion works
  }

  // A function of a later minor version: nullptr when the library predates it.
  template <class Fn>
  void resolve_optional(const char* name, Fn& fn) {
    void* symbol = ::dlsym(handle_.get(), name);
    static_assert(sizeof fn == sizeof symbol);
    std::memcpy(&fn, &symbol, sizeof fn);
  }

  struct Closer {
    void operator()(void* handle) const { ::dlclose(handle); }
  };
  // Declared first so it is destroyed last, and also when the constructor throws.
  std::unique_ptr<void, Closer> handle_;
  std::string path_;
  std::vector<std::string> limit_names_;  // --max-dim
  std::vector<aotc_dim_limit> limits_;
  Api api_{};
  WeightsSource weights_;
  aotc_model* model_ = nullptr;
  aotc_context* context_ = nullptr;
};

// One dim of a tensor as aotc_model_{input,output}_dim_range reports it.
struct DimRange {
  std::optional<std::string> name;  // a dynamic dim's name ("S") or size ("B*S"); nullopt: fixed
  int64_t min = 0;
  int64_t max = 0;
  int64_t multiple_of = 1;
};

struct TensorSig {
  std::string name;
  aotc_dtype dtype;
  std::vector<int64_t> dims;  // as the info gives them: -1 for a dynamic dim
  uint64_t size_bytes;        // of the largest shape
  // One per dim; empty for a library older than minor version 4 (every dim fixed).
  std::vector<DimRange> ranges;

  bool dynamic() const {
    return std::any_of(ranges.begin(), ranges.end(), [](const DimRange& r) { return r.name.has_value(); });
  }
};

struct Signature {
  std::vector<TensorSig> inputs;
  std::vector<TensorSig> outputs;
  // Some tensor has a dynamic dim (aotc --dim): shapes come from the inputs of each run.
  bool dynamic = false;
  uint64_t arena_bytes = 0;
  // Memory of a 1-thread context and the scratch each further thread adds (when the
  // library reports them: minor version 1).
  std::optional<uint64_t> context_bytes, scratch_bytes_per_thread;
};

Signature read_signature(const Library& lib) {
  const Api& api = lib.api();
  Signature sig;
  size_t count = 0;
  const auto read = [&](bool input, size_t index) {
    aotc_tensor_info info{};
    lib.check(input ? api.model_input_info(lib.model(), index, &info)
                    : api.model_output_info(lib.model(), index, &info),
              input ? "aotc_model_input_info" : "aotc_model_output_info");
    const std::string what = (input ? "input " : "output ") + std::to_string(index);
    if (info.rank < 0 || info.rank > AOTC_MAX_RANK || (info.rank > 0 && !info.dims))
      throw RunError("the model reports an invalid rank for " + what);
    TensorSig t{info.name ? info.name : "",
                info.dtype,
                std::vector<int64_t>(info.dims, info.dims + info.rank),
                info.size_bytes,
                {}};
    const auto dim_range = input ? api.model_input_dim_range : api.model_output_dim_range;
    for (int32_t d = 0; dim_range && d < info.rank; ++d) {
      aotc_dim_range range{};
      lib.check(dim_range(lib.model(), index, d, &range),
                input ? "aotc_model_input_dim_range" : "aotc_model_output_dim_range");
      DimRange& r = t.ranges.emplace_back();
      if (range.name) r.name = range.name;
      r.min = range.min;
      r.max = range.max;
      r.multiple_of = range.multiple_of;
      if (r.min < 0 || r.max < r.min || r.multiple_of < 1 || (!r.name && t.dims[d] != r.min))
        throw RunError("the model reports an invalid range for dim " + std::to_string(d) + " of " + what);
    }
    // Only a named dim may be unknown (-1) before a run; anything else negative is garbage
    // (or a dynamic model in a library without the functions that say its sizes).
    for (size_t d = 0; d < t.dims.size(); ++d)
      if (t.dims[d] < 0 && !(d < t.ranges.size() && t.ranges[d].name))
        throw RunError("the model reports dim " + std::to_string(d) + " of " + what + " as " +
                       std::to_string(t.dims[d]) + " without naming it (aotc_model_*_dim_range)");
    return t;
  };
  lib.check(api.model_num_inputs(lib.model(), &count), "aotc_model_num_inputs");
  for (size_t i = 0; i < count; ++i) sig.inputs.push_back(read(true, i));
  lib.check(api.model_num_outputs(lib.model(), &count), "aotc_model_num_outputs");
  for (size_t i = 0; i < count; ++i) sig.outputs.push_back(read(false, i));
  const auto dynamic = [](const std::vector<TensorSig>& list) {
    return std::any_of(list.begin(), list.end(), [](const TensorSig& t) { return t.dynamic(); });
  };
  sig.dynamic = dynamic(sig.inputs) || dynamic(sig.outputs);
  if (sig.dynamic && !api.model_output_dims)
    throw RunError("the model has dynamic dims but does not export aotc_model_output_dims");
  lib.check(api.model_arena_size(lib.model(), &sig.arena_bytes), "aotc_model_arena_size");
  if (const std::optional<uint64_t> one = lib.context_bytes(1)) {
    sig.context_bytes = *one;
    sig.scratch_bytes_per_thread = *lib.context_bytes(2) - *one;
  }
  return sig;
}

// The .npy element type that holds an aotc dtype (bfloat16: its raw bits as uint16).
std::optional<npy::DType> npy_dtype_of(aotc_dtype dtype) {
  switch (dtype) {
    case AOTC_DTYPE_FLOAT32:
      return npy::DType::Float32;
    case AOTC_DTYPE_FLOAT16:
      return npy::DType::Float16;
    case AOTC_DTYPE_BFLOAT16:
      return npy::DType::UInt16;
    case AOTC_DTYPE_INT64:
      return npy::DType::Int64;
    case AOTC_DTYPE_INT32:
      return npy::DType::Int32;
    case AOTC_DTYPE_BOOL:
      return npy::DType::Bool;
  }
  return std::nullopt;
}

// ---- --info -----------------------------------------------------------------------------

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string hex64(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

// A tensor name for the human-readable --info: names come from the model (dict keys can
// hold spaces, tabs, newlines or terminal escapes), so anything but a plain identifier is
// quoted, with control characters escaped as Python would.
std::string display_name(const std::string& name) {
  const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '.' || c == ':' || c == '-' || c >= 0x80;
  });
  if (plain) return name;
  std::string text = "'";
  for (unsigned char c : name) {
    if (c == '\\' || c == '\'') {
      text += '\\';
      text += static_cast<char>(c);
    } else if (c == '\n') {
      text += "\\n";
    } else if (c == '\t') {
      text += "\\t";
    } else if (c == '\r') {
      text += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      text += hex;
    } else {
      text += static_cast<char>(c);
    }
  }
  return text + "'";
}

// A dim's name or size expression from the model for human-readable text: control
// characters escaped (a library not built by aotc could name its dims anything).
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// A tensor's shape, its dynamic dims by name: "[B, S, 64]"; "[2, 3]" when all are fixed.
std::string shape_text(const TensorSig& t) {
  std::string out = "[";
  for (size_t d = 0; d < t.dims.size(); ++d) {
    if (d) out += ", ";
    const bool named = d < t.ranges.size() && t.ranges[d].name;
    out += named ? printable(*t.ranges[d].name) : std::to_string(t.dims[d]);
  }
  return out + "]";
}

// The ranges of an input's dynamic dims, each name once: "B in 1..8, S in 8..512 (multiple
// of 8)"; "" for an input of fixed shape.
std::string ranges_text(const TensorSig& t) {
  std::string out;
  std::vector<std::string> shown;
  for (const DimRange& r : t.ranges) {
    if (!r.name || std::find(shown.begin(), shown.end(), *r.name) != shown.end()) continue;
    shown.push_back(*r.name);
    out += (out.empty() ? "" : ", ") + printable(*r.name) + " in " + std::to_string(r.min) + ".." +
           std::to_string(r.max);
    if (r.multiple_of > 1) out += " (multiple of " + std::to_string(r.multiple_of) + ")";
  }
  return out;
}

void print_info(const Options& options, const Library& lib, const Signature& sig) {
  const Api& api = lib.api();
  const WeightsSource& weights = lib.weights();
  std::string out;
  if (options.json) {
    const auto tensors = [&](const std::vector<TensorSig>& list) {
      std::string text = "[";
      for (size_t i = 0; i < list.size(); ++i) {
        const TensorSig& t = list[i];
        std::string dims;
        for (size_t d = 0; d < t.dims.size(); ++d) dims += (d ? ", " : "") + std::to_string(t.dims[d]);
        text += std::string(i ? ", " : "") + "{\"name\": " + json_string(t.name) +
                ", \"dtype\": " + json_string(api.dtype_name(t.dtype)) + ", \"shape\": [" + dims +
                "], \"size_bytes\": " + std::to_string(t.size_bytes);
        // A tensor with dynamic dims (shape -1 there, size_bytes of the largest shape) adds
        // every dim's range; tensors of fixed shape keep the object they always had.
        if (t.dynamic()) {
          text += ", \"dims\": [";
          for (size_t d = 0; d < t.ranges.size(); ++d) {
            const DimRange& r = t.ranges[d];
            text += std::string(d ? ", " : "") + "{\"name\": " + (r.name ? json_string(*r.name) : "null") +
                    ", \"min\": " + std::to_string(r.min) + ", \"max\": " + std::to_string(r.max) +
                    ", \"multiple_of\": " + std::to_string(r.multiple_of) + "}";
          }
          text += "]";
        }
        text += "}";
      }
      return text + "]";
    };
    std::string memory;
    if (sig.context_bytes)
      memory = ", \"context_bytes\": " + std::to_string(*sig.context_bytes) +
               ", \"scratch_bytes_per_thread\": " + std::to_string(*sig.scratch_bytes_per_thread);
    std::string weights_json = "{\"location\": " + json_string(weights.external ? "file" : "embedded");
    if (weights.external) weights_json += ", \"path\": " + json_string(weights.path);
    if (weights.known)
      weights_json += ", \"size_bytes\": " + std::to_string(weights.size_bytes) +
                      ", \"checksum\": " + json_string(hex64(weights.checksum));
    weights_json += "}";
    const auto json_or_null = [](const std::optional<std::string>& text) {
      return text ? json_string(*text) : std::string("null");
    };
    out = "{\"model\": " + json_string(options.model_path) +
          ", \"abi_version\": " + std::to_string(api.abi_version()) +
          ", \"aotc_version\": " + json_or_null(compiler_version(api)) +
          ", \"runtime_version\": " + json_or_null(runtime_version(api)) +
          ", \"device\": " + json_string(device_name(api)) +
          ", \"arena_bytes\": " + std::to_string(sig.arena_bytes) + memory +
          ", \"weights\": " + weights_json + ", \"inputs\": " + tensors(sig.inputs) +
          ", \"outputs\": " + tensors(sig.outputs) + "}\n";
  } else {
    const auto tensors = [&](const char* title, const std::vector<TensorSig>& list) {
      std::string text = std::string(title) + ":\n";
      for (size_t i = 0; i < list.size(); ++i) {
        const TensorSig& t = list[i];
        // Dynamic dims by name; an input's with their ranges (an output's sizes follow from
        // them: "B*S"), and the bytes of the largest shape.
        const std::string ranges = &list == &sig.inputs ? ranges_text(t) : "";
        text += "  " + std::to_string(i) + " " + display_name(t.name) + ": " + api.dtype_name(t.dtype) + " " +
                shape_text(t) + (ranges.empty() ? "" : " with " + ranges) +
                (t.dims.empty() ? " (a scalar, "
                 : t.dynamic()  ? " (at most "
                                : " (") +
                std::to_string(t.size_bytes) + " bytes)\n";
      }
      return text;
    };
    std::string memory;
    if (sig.context_bytes)
      memory = "context memory: " + std::to_string(*sig.context_bytes) + " bytes with 1 thread, +" +
               std::to_string(*sig.scratch_bytes_per_thread) + " per further thread\n";
    std::string weights_text = "weights: ";
    if (weights.external)
      weights_text += "file " + weights.path + " (" + std::to_string(weights.size_bytes) +
                      " bytes, checksum " + hex64(weights.checksum) + ")\n";
    else if (weights.known)
      weights_text += "embedded (" + std::to_string(weights.size_bytes) + " bytes)\n";
    else
      weights_text += "embedded\n";
    const std::string unknown = "unknown (a library built before aotc recorded versions)";
    out = "model: " + options.model_path + "\nabi version: " + std::to_string(api.abi_version()) +
          "\naotc version: " +
          compiler_version(api).value_or(api.compiler_version ? "unknown (the library records none)"
                                                              : unknown) +
          "\nruntime version: " + runtime_version(api).value_or(unknown) + "\ndevice: " + device_name(api) +
          "\narena bytes: " + std::to_string(sig.arena_bytes) + "\n" + memory + weights_text +
          tensors("inputs", sig.inputs) + tensors("outputs", sig.outputs);
  }
  if (std::fputs(out.c_str(), stdout) < 0 || std::fflush(stdout) != 0)
    throw RunError(std::string("cannot write to stdout: ") + std::strerror(errno));
}

// ---- running ----------------------------------------------------------------------------

std::string describe(const char* dtype_name, const std::vector<int64_t>& shape) {
  return std::string(dtype_name) + " " + npy::shape_string(shape);
}

// A model tensor as its info says: "int64 [B, S]", "float32 [2, 3]".
std::string describe(const Api& api, const TensorSig& t) {
  return std::string(api.dtype_name(t.dtype)) + " " + shape_text(t);
}

std::string input_names(const Signature& sig) {
  std::string names;
  for (const TensorSig& t : sig.inputs) names += (names.empty() ? "" : ", ") + t.name;
  return names.empty() ? "(none)" : names;
}

// "4x77": a shape as --shape takes it.
std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text;
  for (size_t d = 0; d < dims.size(); ++d) text += (d ? "x" : "") + std::to_string(dims[d]);
  return text;
}

// The largest shape an input with dynamic dims takes, for the example in an error message.
std::vector<int64_t> largest_shape(const TensorSig& t) {
  std::vector<int64_t> dims = t.dims;
  for (size_t d = 0; d < dims.size() && d < t.ranges.size(); ++d)
    if (t.ranges[d].name) dims[d] = t.ranges[d].max / t.ranges[d].multiple_of * t.ranges[d].multiple_of;
  return dims;
}

// Fixed pseudo-random contents for an input that --bench was not given: floats in [-1, 1)
// (float16/bfloat16: 0.5, exact in both), integers 0 (a valid index for any embedding or
// gather), booleans true (a mask that hides nothing). shape: the info's, or --shape's.
npy::Array synthetic_input(const TensorSig& t, const std::vector<int64_t>& shape) {
  npy::Array array;
  array.dtype = *npy_dtype_of(t.dtype);
  array.shape = shape;
  const uint64_t bytes = npy::byte_count(array.dtype, shape);  // the model checked the shape
  try {
    array.data = npy::AlignedBytes(static_cast<size_t>(bytes));  // zero-filled
  } catch (const std::bad_alloc&) {
    throw RunError("out of memory allocating input '" + t.name + "' (" + std::to_string(bytes) + " bytes)");
  }
  unsigned char* data = array.data.data();
  if (t.dtype == AOTC_DTYPE_FLOAT32) {
    uint32_t state = 0x9e3779b9u;
    for (size_t i = 0; i < array.data.size() / sizeof(float); ++i) {
      state = state * 1664525u + 1013904223u;  // LCG: the same values on every run
      const float v = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
      std::memcpy(data + i * sizeof v, &v, sizeof v);
    }
  } else if (t.dtype == AOTC_DTYPE_FLOAT16 || t.dtype == AOTC_DTYPE_BFLOAT16) {
    const uint16_t half = t.dtype == AOTC_DTYPE_FLOAT16 ? 0x3800 : 0x3f00;  // 0.5
    for (size_t i = 0; i < array.data.size() / 2; ++i) std::memcpy(data + 2 * i, &half, 2);
  } else if (t.dtype == AOTC_DTYPE_BOOL && array.data.size() > 0) {
    std::memset(data, 1, array.data.size());
  }
  return array;
}

// Removes temporary output files that were not renamed into place.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const std::string& path : paths) std::remove(path.c_str());
  }
};

// The inputs and output buffers of one run, and the aotc_tensor arrays that point at them.
struct RunBuffers {
  std::vector<npy::Array> inputs;
  std::vector<aotc_tensor> in_tensors;
  std::vector<std::vector<int64_t>> output_dims;  // this run's: the info's, or for its inputs
  std::vector<npy::AlignedBytes> outputs;
  std::vector<aotc_tensor> out_tensors;
};

// What an --input or --shape gives, for messages: the file, or the dims as written.
const std::string& arg_value(const InputArg& arg) { return arg.path; }
const std::string& arg_value(const ShapeArg& arg) { return arg.text; }

// For each input, in model order, the --input or --shape that gives it (nullptr: none),
// after checking that every name is a model input given once.
template <class Arg>
std::vector<const Arg*> match_args(const std::vector<Arg>& args, const char* option, const Signature& sig) {
  std::vector<const Arg*> given(sig.inputs.size(), nullptr);
  for (const Arg& arg : args) {
    size_t index = 0;
    while (index < sig.inputs.size() && sig.inputs[index].name != arg.name) ++index;
    if (index == sig.inputs.size())
      throw RunError("unknown input '" + arg.name + "' (in " + option + " " + arg.name + "=" +
                     arg_value(arg) + "); the model's inputs are: " + input_names(sig));
    if (given[index])
      throw RunError("input '" + arg.name + "' is given twice (" + arg_value(*given[index]) + " and " +
                     arg_value(arg) + ")");
    given[index] = &arg;
  }
  return given;
}

// Reads the file given for each model input, in model order, checking its dtype, and its
// shape where the input's is fixed; a dim of dynamic size is the model's to check (with
// the other inputs' shapes: a dim name means one size). With --bench, inputs not given
// get synthetic_input() at their info's shape or --shape's. Then every output's buffer,
// sized for this run's shapes.
RunBuffers prepare_run(const Options& options, const Library& lib, const Signature& sig) {
  const Api& api = lib.api();
  const std::vector<const InputArg*> given = match_args(options.inputs, "--input", sig);
  const std::vector<const ShapeArg*> shaped = match_args(options.shapes, "--shape", sig);
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const TensorSig& t = sig.inputs[i];
    if (given[i] && shaped[i])
      throw RunError("input '" + t.name + "' is given both as a file (--input) and a shape (--shape)");
    if (!given[i] && !npy_dtype_of(t.dtype))
      throw RunError("input '" + t.name + "' has dtype " + api.dtype_name(t.dtype) +
                     ", which aotc-run cannot feed");
    if (!given[i] && !options.bench)
      throw RunError("missing input '" + t.name + "' (" + describe(api, t) + "): give --input " + t.name +
                     "=FILE.npy");
    if (!given[i] && !shaped[i] && t.dynamic())
      throw RunError("input '" + t.name + "' (" + describe(api, t) + " with " + ranges_text(t) +
                     ") has dynamic dims: give the shape to time it at with --shape " + t.name +
                     "=DIMS, e.g. --shape " + t.name + "=" + dims_text(largest_shape(t)) +
                     ", or a file with --input");
    if (shaped[i] && !t.dynamic() && shaped[i]->dims != t.dims)
      throw RunError("input '" + t.name + "' has the fixed shape " + shape_text(t) + ": --shape " + t.name +
                     "=" + shaped[i]->text + " does not match (--shape is for inputs with dynamic dims)");
  }
  RunBuffers buffers;
  std::vector<npy::Array>& inputs = buffers.inputs;
  inputs.resize(sig.inputs.size());
  std::vector<std::vector<int64_t>> shapes(sig.inputs.size());
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const TensorSig& t = sig.inputs[i];
    if (!given[i]) {
      shapes[i] = shaped[i] ? shaped[i]->dims : t.dims;
      continue;
    }
    const std::string& path = given[i]->path;
    npy::Array& array = inputs[i];
    try {
      array = npy::read_file(path);
    } catch (const npy::Error& e) {
      throw RunError("input '" + t.name + "': " + e.what());
    }
    const std::optional<npy::DType> want = npy_dtype_of(t.dtype);
    if (!want)
      throw RunError("input '" + t.name + "' has dtype " + api.dtype_name(t.dtype) +
                     ", which aotc-run cannot feed");
    const bool dtype_ok = array.dtype == *want;
    if (!dtype_ok || (!t.dynamic() && array.shape != t.dims)) {
      // Name the expected type in numpy's terms when they differ (bfloat16 as uint16 bits).
      std::string expected = describe(api, t);
      if (t.dtype == AOTC_DTYPE_BFLOAT16) expected += " (as uint16 bits)";
      throw RunError("input '" + t.name + "': expected " + expected + ", got " +
                     describe(npy::dtype_name(array.dtype), array.shape) + " in " + path);
    }
    shapes[i] = array.shape;
  }

  // The shapes of the inputs, only ranks and dims read: what aotc_model_output_dims takes.
  std::vector<aotc_tensor>& in_tensors = buffers.in_tensors;
  in_tensors.resize(sig.inputs.size());
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    aotc_tensor& t = in_tensors[i];
    t.dtype = sig.inputs[i].dtype;
    t.rank = static_cast<int32_t>(shapes[i].size());
    t.dims = shapes[i].data();
  }
  std::vector<std::vector<int64_t>>& output_dims = buffers.output_dims;
  for (size_t i = 0; i < sig.outputs.size(); ++i) {
    std::vector<int64_t>& dims = output_dims.emplace_back(sig.outputs[i].dims);
    if (!sig.dynamic) continue;  // the info's shapes, as before minor version 4
    // This is also where the model checks the inputs' shapes (ranges, multiples, one size
    // per dim name) and says what is wrong: before any --shape input, of whatever size was
    // asked, is allocated.
    // A buffer of the most dims: a scalar output's empty vector has no data() to give.
    int64_t out_dims[AOTC_MAX_RANK] = {};
    const aotc_status status =
        api.model_output_dims(lib.model(), in_tensors.data(), in_tensors.size(), i, out_dims);
    if (status != AOTC_OK) {
      std::string shapes_given;
      for (size_t k = 0; k < sig.inputs.size(); ++k)
        shapes_given += (k ? ", " : "") + display_name(sig.inputs[k].name) + " " +
                        npy::shape_string(shapes[k]) +
                        (given[k]    ? " from " + given[k]->path
                         : shaped[k] ? " (--shape)"
                                     : "");
      throw RunError(std::string("the inputs' shapes do not fit the model (") + api.status_name(status) +
                     "): " + api.last_error() + "; inputs: " + shapes_given);
    }
    std::copy(out_dims, out_dims + dims.size(), dims.begin());
  }
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    if (!given[i]) inputs[i] = synthetic_input(sig.inputs[i], shapes[i]);
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    aotc_tensor& t = in_tensors[i];
    t.data = inputs[i].data.data();
    t.dims = inputs[i].shape.data();  // shapes[i] is going away
    t.size_bytes = inputs[i].data.size();
  }

  std::vector<npy::AlignedBytes>& outputs = buffers.outputs;
  std::vector<aotc_tensor>& out_tensors = buffers.out_tensors;
  out_tensors.resize(sig.outputs.size());
  for (size_t i = 0; i < sig.outputs.size(); ++i) {
    const TensorSig& sig_out = sig.outputs[i];
    const std::optional<npy::DType> dtype = npy_dtype_of(sig_out.dtype);
    if (!dtype)
      throw RunError("output '" + sig_out.name + "' has dtype " + api.dtype_name(sig_out.dtype) +
                     ", which aotc-run cannot write");
    // A dynamic model's output takes the bytes of this run's shape, not the largest's.
    uint64_t bytes = sig_out.size_bytes;
    if (sig.dynamic) {
      try {
        bytes = npy::byte_count(*dtype, output_dims[i]);
      } catch (const npy::Error& e) {
        throw RunError("output '" + sig_out.name + "': the model gives an invalid shape: " + e.what());
      }
    }
    try {
      outputs.emplace_back(static_cast<size_t>(bytes));
    } catch (const std::bad_alloc&) {
      throw RunError("out of memory allocating output '" + sig_out.name + "' (" + std::to_string(bytes) +
                     " bytes)");
    }
    aotc_tensor& t = out_tensors[i];
    t.data = outputs[i].data();
    t.dtype = sig_out.dtype;
    t.rank = static_cast<int32_t>(output_dims[i].size());
    t.dims = output_dims[i].data();
    t.size_bytes = outputs[i].size();
  }
  return buffers;
}

void run_once(Library& lib, aotc_context* context, RunBuffers& b) {
  lib.check(lib.api().run(lib.model(), context, b.in_tensors.data(), b.in_tensors.size(),
                          b.out_tensors.data(), b.out_tensors.size()),
            "aotc_run");
}

// --bench: warm-up runs, then timed runs one after another on one context (the context's
// threads stay up between runs, as in a server). Latencies are wall-clock per run.
void bench_model(const Options& options, Library& lib, const Signature& sig) {
  RunBuffers buffers = prepare_run(options, lib, sig);
  aotc_context* context = lib.context(options.threads);
  for (long i = 0; i < options.warmup; ++i) run_once(lib, context, buffers);
  std::vector<double> ms(static_cast<size_t>(options.iters));
  for (double& t : ms) {
    const auto start = std::chrono::steady_clock::now();
    run_once(lib, context, buffers);
    t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  // p90: the smallest latency that at least 90% of the runs did not exceed.
  const double p90 = sorted[static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n))) - 1];
  double mean = 0;
  for (double t : ms) mean += t / static_cast<double>(n);
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  const long peak_rss_kb = usage.ru_maxrss;  // Linux: kilobytes
  // A dynamic model's latency depends on the shapes: name those of its dynamic inputs
  // (a model of fixed shapes prints what it always printed).
  std::string shapes_text, shapes_json;
  for (size_t i = 0; sig.dynamic && i < sig.inputs.size(); ++i) {
    if (!sig.inputs[i].dynamic()) continue;
    const std::vector<int64_t>& shape = buffers.inputs[i].shape;
    shapes_text +=
        (shapes_text.empty() ? " at " : ", ") + display_name(sig.inputs[i].name) + "=" + dims_text(shape);
    std::string dims;
    for (size_t d = 0; d < shape.size(); ++d) dims += (d ? ", " : "") + std::to_string(shape[d]);
    shapes_json += (shapes_json.empty() ? "" : ", ") + json_string(sig.inputs[i].name) + ": [" + dims + "]";
  }
  // Numbers are formatted into a fixed buffer; the model path, of any length, is not.
  char numbers[400];
  std::string line;
  if (options.json) {
    std::snprintf(
        numbers, sizeof numbers,
        ", \"threads\": %d, \"warmup\": %ld, \"iters\": %ld, \"min_ms\": %.4f, \"median_ms\": %.4f, "
        "\"p90_ms\": %.4f, \"mean_ms\": %.4f, \"max_ms\": %.4f, \"peak_rss_kb\": %ld}\n",
        options.threads, options.warmup, options.iters, sorted.front(), median, p90, mean, sorted.back(),
        peak_rss_kb);
    line = "{\"model\": " + json_string(options.model_path) +
           (sig.dynamic ? ", \"shapes\": {" + shapes_json + "}" : "") + numbers;
  } else {
    std::snprintf(numbers, sizeof numbers,
                  ": %ld runs after %ld warm-up, %d thread%s: min %.3f ms, median %.3f ms, p90 %.3f ms, "
                  "mean %.3f ms; peak RSS %.1f MiB\n",
                  options.iters, options.warmup, options.threads, options.threads == 1 ? "" : "s",
                  sorted.front(), median, p90, mean, static_cast<double>(peak_rss_kb) / 1024.0);
    line = options.model_path + shapes_text + numbers;
  }
  if (std::fputs(line.c_str(), stdout) < 0 || std::fflush(stdout) != 0)
    throw RunError(std::string("cannot write to stdout: ") + std::strerror(errno));
}

void run_model(const Options& options, Library& lib, const Signature& sig) {
  const Api& api = lib.api();
  RunBuffers buffers = prepare_run(options, lib, sig);
  std::vector<npy::AlignedBytes>& outputs = buffers.outputs;
  aotc_context* context = lib.context(options.threads);
  run_once(lib, context, buffers);
  // The shape the run wrote (aotc_context_output_dims) must be the one the buffers were
  // sized for: anything else is a bug in the library, not something to write to a file.
  for (size_t i = 0; sig.dynamic && api.context_output_dims && i < sig.outputs.size(); ++i) {
    int64_t dims[AOTC_MAX_RANK] = {};
    lib.check(api.context_output_dims(context, i, dims), "aotc_context_output_dims");
    const std::vector<int64_t> written(dims, dims + buffers.output_dims[i].size());
    if (written != buffers.output_dims[i])
      throw RunError("output '" + sig.outputs[i].name + "': the run wrote shape " +
                     npy::shape_string(written) + ", but aotc_model_output_dims said " +
                     npy::shape_string(buffers.output_dims[i]));
  }

  const std::filesystem::path dir = *options.output_dir;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir))
    throw RunError("cannot create output directory '" + dir.string() +
                   "': " + (error ? error.message() : "not a directory"));
  // All outputs or none: write every temporary file first, then rename them in place.
  TempFiles temps;
  std::vector<std::string> finals;
  try {
    for (size_t i = 0; i < sig.outputs.size(); ++i) {
      const std::string path = (dir / ("out" + std::to_string(i) + ".npy")).string();
      temps.paths.push_back(npy::write_temp_file(path, *npy_dtype_of(sig.outputs[i].dtype),
                                                 buffers.output_dims[i],
                                                 {outputs[i].data(), outputs[i].size()}));
      finals.push_back(path);
    }
    for (size_t i = 0; i < finals.size(); ++i) {
      npy::commit_temp_file(temps.paths[i], finals[i]);
      temps.paths[i].clear();  // nothing left to clean up
    }
  } catch (const npy::Error& e) {
    throw RunError(e.what());
  }
  for (size_t i = 0; i < finals.size(); ++i) {
    std::printf("wrote %s (%s: %s)\n", finals[i].c_str(), sig.outputs[i].name.c_str(),
                describe(api.dtype_name(sig.outputs[i].dtype), buffers.output_dims[i]).c_str());
  }
  std::fflush(stdout);
}

int real_main(int argc, char** argv) {
  const Options options = parse_args(argc, argv);
  if (options.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (options.version) {
    std::printf("aotc-run %s (C ABI version %u)\n", AOTC_VERSION, AOTC_ABI_VERSION);
    return 0;
  }
  Library lib(options.model_path, options.weights);
  lib.set_dim_limits(options.max_dims);
  const Signature sig = read_signature(lib);
  if (options.info)
    print_info(options, lib, sig);
  else if (options.bench)
    bench_model(options, lib, sig);
  else
    run_model(options, lib, sig);
  return 0;
}

// One line on stderr, whatever the message holds.
void report(const char* message, const char* hint = "") {
  std::string line = message;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(stderr, "aotc-run: error: %s%s\n", line.c_str(), hint);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return real_main(argc, argv);
  } catch (const UsageError& e) {
    report(e.what(), " (see aotc-run --help)");
    return 2;
  } catch (const std::bad_alloc&) {
    report("out of memory");
    return 1;
  } catch (const std::exception& e) {
    report(e.what());
    return 1;
  } catch (...) {
    report("unexpected internal error");
    return 1;
  }
}
