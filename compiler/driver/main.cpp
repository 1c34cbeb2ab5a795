// aotc: compiles a TorchScript file into a self-contained model .so.
//   aotc model.pt -o model.so --input x:1x3x224x224 [--input ids:2x128:int64] ...
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "../../codegen/codegen.h"
#include "../../codegen/cuda/cuda_target.h"
#include "../frontend/frontend.h"
#include "../ir/error.h"
#include "../ops/cuda/cuda_registry.h"
#include "../ops/op_registry.h"
#include "aotc_config.h"
#include "build_model.h"
#include "dynamic_build.h"
#include "input_spec.h"

namespace {

constexpr const char* kUsage =
    R"(usage: aotc MODEL.pt -o MODEL.so --input NAME:DIMS[:DTYPE] [--input ...] [options]
       aotc --check MODEL.pt --input NAME:DIMS[:DTYPE] [--input ...]
       aotc --list-ops [--markdown]

Compiles a TorchScript module (torch.jit.script or torch.jit.trace, saved with
torch.jit.save) into a shared library with a C ABI (see aotc/aotc.h). No LibTorch
is needed to run it.

  -o PATH                  the .so to write (written atomically; never left half-done)
  --input NAME:DIMS[:DTYPE]
                           one per argument of the method, in order. NAME is the Python
                           argument name, DIMS like 1x3x224x224, DTYPE one of float32
                           (default), float16, bfloat16, int64, int32, bool. Arguments
                           with a default value (mask=None, ...) may be left out
  --dim NAME=MIN..MAX      a dim that varies between runs: DIMS in --input may name it in
                           place of a size (ids:BxS:int64 with --dim B=1..32 --dim S=1..512;
                           names have no 'x'); the library runs every size in range, the
                           same name is the same size; MAX sizes the memory. CPU and CUDA
  --method NAME            the method to compile (default: forward)
  --emit-source DIR        keep the generated sources and build.ninja in DIR
  --no-build               with --emit-source: write the sources and build.ninja only; build
                           and write no .so (-o optional; a developer aid: diff the sources)
  --target-triple TRIPLE   the CPU to build for (default: the host; aarch64-linux-gnu)
  --weights embed|file     weights inside the .so (default) or in MODEL.weights beside it
  --check                  print the model's op census (every op reached for these input
                           shapes: how often, supported or not, and where the unsupported
                           ones are) and exit 1 if anything cannot be compiled, else 0;
                           writes no file
  --winograd on|off        CPU: 3x3 stride-1 convolutions with 16+ input channels by Winograd,
                           F(4x4,3x3) where the batch has 25+ tiles of 4x4 (a 20x20 plane
                           at batch 1), else F(2x2,3x3) (default: on; faster, but those
                           layers' weights take 36/9 or 16/9 the memory: off for the
                           smallest footprint). CUDA: stride-1 3x3x3 and 1x3x3 conv3d
                           by Winograd, F(4,3) at fp32, F(2,3) at lower precisions
  --cpu-threads N          CPU: the threads the model will run on (num_threads of a context),
                           for the kernel choices that depend on them: from 8, 1x1
                           convolutions stay on the implicit GEMM, faster there than the
                           positions-as-rows kernel taken for fewer (default: few). Any
                           thread count runs any build correctly
  --target cpu|cuda        the device the model runs on (default: cpu). cuda builds CUDA C++
                           with nvcc; the .so needs the GPU driver and cuBLAS at run time
  --cuda-arch sm_NN        the GPU to build for with --target cuda (default: sm_90, H100)
  --precision fp32|tf32|fp16|bf16
                           matrix products with --target cuda: exact float32 (default, as
                           torch.backends.cuda.matmul.allow_tf32 = False), on tf32 tensor
                           cores, or on fp16 / bf16 tensor cores with float32 accumulation
                           (convolution weights stored in the 16-bit type)
  --quantized-engine x86|fbgemm
                           int8 models: whose rounding to reproduce, torch's quantized
                           engine's (torch.backends.quantized.engine). x86 (default, torch's
                           default on x86-64) rounds convolutions with symmetric weights and
                           at most 100 groups as oneDNN does, as torch's x86 engine does on
                           CPUs with AVX512-VNNI; fbgemm (torch's x86 engine on CPUs without
                           AVX512-VNNI too) as fbgemm does
  --list-ops               print the TorchScript ops aotc can lower, one per line
  --markdown               with --list-ops: the supported-op list as docs/OPS.md has it
  -v, --verbose            print the graph, the passes, the memory plan and timings
  -h, --help               this help
  --version                the version
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

aotc::driver::InputSignature parse_input(const std::string& text) {
  try {
    return aotc::driver::parse_input_signature(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

aotc::driver::DimRange parse_dim(const std::string& text) {
  try {
    return aotc::driver::parse_dim_range(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string ops_list() {
  const aotc::ops::Registry& registry = aotc::ops::Registry::get();
  std::set<std::string> names;
  for (const std::string& name : registry.lowering_names()) names.insert(name);
  for (const std::string& name : registry.quantized_lowering_names()) names.insert(name);
  for (const std::string& name : aotc::frontend::quantized_elementwise_ops()) names.insert(name);
  std::string text;
  for (const std::string& name : names) text += name + "\n";
  return text;
}

// docs/OPS.md: the registry's lowerings, an op and its in-place form on one row.
// scripts/gen_ops_doc.sh writes it; the ops_doc test fails when it is out of date.
std::string ops_markdown() {
  const std::vector<std::string> names = aotc::ops::Registry::get().lowering_names();
  const std::set<std::string> all(names.begin(), names.end());
  std::vector<std::string> rows;
  int inplace = 0;
  for (const std::string& name : names) {
    const bool is_inplace = name.size() > 1 && name.back() == '_' && name.find("::__") == std::string::npos;
    const std::string base = name.substr(0, name.size() - 1);
    if (is_inplace && all.count(base)) continue;  // on its base op's row
    std::string row = "| `" + name + "` | ";
    if (all.count(name + "_")) {
      row += "`" + name + "_`";
      ++inplace;
    }
    rows.push_back(row + " |");
  }
  std::string text =
      "# Supported ops\n\n"
      "<!-- Generated from aotc's op registry by scripts/gen_ops_doc.sh (aotc --list-ops --markdown).\n"
      "     Do not edit: the ops_doc test fails when this file differs from the registry. -->\n\n"
      "aotc lowers " +
      std::to_string(names.size()) + " TorchScript ops to its own IR, which the generated code runs: the " +
      std::to_string(rows.size()) + " below, " + std::to_string(inplace) +
      " of them in their in-place form too (`x.relu_()`, `x += y`).\n\n"
      "Ops are only needed for what the model computes at run time. Anything whose inputs are\n"
      "known when compiling is evaluated by LibTorch at compile time, whatever the op: shape\n"
      "arithmetic (`aten::size`, `prim::NumToTensor`, int and float math, lists, tuples, dicts,\n"
      "strings), `prim::If` and `prim::Loop` decided by shapes and constants (loops are unrolled),\n"
      "and tensor ops on constants. `aotc --check MODEL.pt --input NAME:DIMS ...` prints every op\n"
      "a model reaches for the given input shapes and whether each is supported.\n\n"
      "| op | in-place form |\n| --- | --- |\n";
  for (const std::string& row : rows) text += row + "\n";
  std::string quantized;
  std::set<std::string> quantized_names;
  for (const std::string& name : aotc::ops::Registry::get().quantized_lowering_names())
    quantized_names.insert(name);
  for (const std::string& name : aotc::frontend::quantized_elementwise_ops()) quantized_names.insert(name);
  for (const std::string& name : quantized_names) quantized += "| `" + name + "` |\n";
  text +=
      "\n## Quantized tensors\n\n"
      "Models quantized with torch.ao.quantization (eager or FX graph mode; quint8 activations,\n"
      "qint8 weights per tensor or per output channel) run on aotc's int8 kernels, with torch's\n"
      "own arithmetic. These ops take quantized tensors (the element-wise ones as a table of\n"
      "all 256 results that torch computes at compile time); any other op given one is\n"
      "refused with its Python line (dequantize first to run it in float32).\n\n"
      "| op |\n| --- |\n" +
      quantized;
  // The IR ops those lower to, and which target has a generator for each.
  const std::vector<std::string> cpu = aotc::ops::Registry::get().ir_op_kinds();
  const std::vector<std::string> cuda = aotc::ops::cuda::CudaRegistry::get().kinds();
  std::set<std::string> kinds(cpu.begin(), cpu.end());
  kinds.insert(cuda.begin(), cuda.end());
  std::string table, missing;
  int missing_count = 0;
  for (const std::string& kind : kinds) {
    const bool on_cpu = std::find(cpu.begin(), cpu.end(), kind) != cpu.end();
    const bool on_cuda = std::find(cuda.begin(), cuda.end(), kind) != cuda.end();
    table += "| `" + kind + "` | " + (on_cpu ? "yes" : "") + " | " + (on_cuda ? "yes" : "") + " |\n";
    if (on_cpu && !on_cuda) {
      missing += std::string(missing.empty() ? "" : ", ") + "`" + kind + "`";
      ++missing_count;
    }
  }
  text +=
      "\n## IR ops by target\n\n"
      "Each TorchScript op above lowers to some of these IR ops; a model compiles for a target\n"
      "when every IR op it lowers to has a generator there (`--target cuda` names the first one\n"
      "that has none, with its Python line). " +
      (missing_count == 0
           ? std::string("Every IR op of the CPU target has a CUDA generator.")
           : "IR ops of the CPU target without a CUDA generator (" + std::to_string(missing_count) + " of " +
                 std::to_string(cpu.size()) + "; docs/CUDA.md says why): " + missing + ".") +
      "\n\n| IR op | CPU | CUDA |\n| --- | --- | --- |\n" + table;
  return text;
}

// aotc --check: the census on stdout; status 1 when anything cannot be compiled.
int print_census(const aotc::frontend::Census& census, const aotc::frontend::Options& options) {
  std::string inputs;
  for (const auto& in : options.inputs)
    inputs += (inputs.empty() ? "" : ", ") + in.name + ": " + aotc::ir::dtype_name(in.dtype) +
              aotc::ir::shape_str(in.shape);
  std::printf("op census of %s, %s(%s)\n", options.model_path.c_str(), options.method.c_str(),
              inputs.c_str());
  int runtime_kinds = 0, bad_kinds = 0, compile_kinds = 0;
  std::printf("\nrun-time ops (lowered to aotc IR), uses after specialisation:\n");
  std::printf("  %6s  %-40s %s\n", "uses", "op", "status");
  for (const auto& [name, use] : census.ops) {
    const int uses = use.runtime + use.unsupported + use.failed;
    if (uses == 0) continue;
    ++runtime_kinds;
    std::string status = "supported";
    if (use.unsupported > 0) {
      status = "UNSUPPORTED";
      ++bad_kinds;
    } else if (use.failed > 0) {
      status = "supported, but " + std::to_string(use.failed) + " use(s) refused (see below)";
      ++bad_kinds;
    }
    std::printf("  %6d  %-40s %s\n", uses, name.c_str(), status.c_str());
  }
  if (runtime_kinds == 0) std::printf("  (none)\n");
  std::printf("\nevaluated at compile time (shape arithmetic, control flow, constants):\n");
  for (const auto& [name, use] : census.ops) {
    if (use.compile_time == 0) continue;
    ++compile_kinds;
    std::printf("  %6d  %s\n", use.compile_time, name.c_str());
  }
  if (compile_kinds == 0) std::printf("  (none)\n");
  if (!census.ok()) std::printf("\n%s\n", census.error_report().c_str());
  std::printf("\n%d run-time op(s), %d not compilable; %d evaluated at compile time: %s\n", runtime_kinds,
              bad_kinds, compile_kinds,
              census.ok() ? "the model can be compiled" : "the model cannot be compiled");
  return census.ok() ? 0 : 1;
}

// What the command line asks for; nullopt when it was answered already (--help, ...).
struct Job {
  aotc::frontend::Options options;           // with dynamic dims: the inputs at the --dim maxima
  aotc::driver::DynamicSignature signature;  // --input, --dim
  bool dynamic = false;                      // a --dim or a named dim is given
  bool check = false;                        // --check: the op census only
  std::string output, emit_dir;
  bool verbose = false;
  std::string target_triple;                                               // --target-triple; empty: the host
  aotc::codegen::WeightsMode weights = aotc::codegen::WeightsMode::Embed;  // --weights
  bool cuda = false;                                                       // --target cuda
  aotc::codegen::cuda::CudaOptions cuda_options;                           // --cuda-arch, --precision
  bool cuda_flags_given = false;
  bool winograd = true;   // --winograd
  int cpu_threads = 0;    // --cpu-threads; 0: not said
  bool no_build = false;  // --no-build: the sources in emit_dir, no build, no .so
};

std::optional<Job> parse_command_line(int argc, char** argv) {
  Job job;
  aotc::frontend::Options& options = job.options;
  std::string& output = job.output;
  std::string& emit_dir = job.emit_dir;
  bool& verbose = job.verbose;
  bool list_ops = false, markdown = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) throw UsageError(std::string(flag) + " needs a value");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return std::nullopt;
    } else if (arg == "--version") {
      std::printf("aotc %s\n", aotc::codegen::aotc_version());
      return std::nullopt;
    } else if (arg == "--list-ops") {
      list_ops = true;
    } else if (arg == "--markdown") {
      markdown = true;
    } else if (arg == "--check") {
      job.check = true;
    } else if (arg == "-o" || arg == "--output") {
      output = value("-o");
    } else if (arg == "--input") {
      job.signature.inputs.push_back(parse_input(value("--input")));
    } else if (arg == "--dim") {
      job.signature.dims.push_back(parse_dim(value("--dim")));
    } else if (arg == "--method") {
      options.method = value("--method");
    } else if (arg == "--emit-source") {
      emit_dir = value("--emit-source");
    } else if (arg == "--no-build") {
      job.no_build = true;
    } else if (arg == "--target-triple") {
      job.target_triple = value("--target-triple");
    } else if (arg == "--weights") {
      const std::string mode = value("--weights");
      if (mode == "embed")
        job.weights = aotc::codegen::WeightsMode::Embed;
      else if (mode == "file")
        job.weights = aotc::codegen::WeightsMode::File;
      else
        throw UsageError("--weights must be 'embed' or 'file', got '" + mode + "'");
    } else if (arg == "--winograd") {
      const std::string mode = value("--winograd");
      if (mode != "on" && mode != "off")
        throw UsageError("--winograd must be 'on' or 'off', got '" + mode + "'");
      job.winograd = mode == "on";
    } else if (arg == "--cpu-threads") {
      const std::string text = value("--cpu-threads");
      int threads = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), threads);
      if (error != std::errc() || end != text.data() + text.size() || threads < 1 || threads > 1024)
        throw UsageError("--cpu-threads must be a whole number from 1 to 1024, got '" + text + "'");
      job.cpu_threads = threads;
    } else if (arg == "--quantized-engine") {
      const std::string engine = value("--quantized-engine");
      if (engine != "x86" && engine != "fbgemm")
        throw UsageError("--quantized-engine must be 'x86' or 'fbgemm', got '" + engine + "'");
      options.quantized_engine =
          engine == "x86" ? aotc::ir::QuantizedEngine::X86 : aotc::ir::QuantizedEngine::Fbgemm;
    } else if (arg == "--target") {
      const std::string target = value("--target");
      if (target == "cuda")
        job.cuda = true;
      else if (target != "cpu")
        throw UsageError("--target must be 'cpu' or 'cuda', got '" + target + "'");
    } else if (arg == "--cuda-arch") {
      try {
        job.cuda_options.arch = aotc::codegen::cuda::parse_cuda_arch(value("--cuda-arch"));
      } catch (const aotc::CompileError& e) {
        throw UsageError(e.what());
      }
      job.cuda_flags_given = true;
    } else if (arg == "--precision") {
      job.cuda_options.precision = value("--precision");
      const std::string& p = job.cuda_options.precision;
      if (p != "fp32" && p != "tf32" && p != "fp16" && p != "bf16")
        throw UsageError("--precision must be fp32, tf32, fp16 or bf16, got '" + p + "'");
      job.cuda_flags_given = true;
    } else if (arg == "-v" || arg == "--verbose") {
      verbose = true;
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError("unknown option '" + arg + "'");
    } else if (options.model_path.empty()) {
      options.model_path = arg;
    } else {
      throw UsageError("more than one model file given ('" + options.model_path + "' and '" + arg + "')");
    }
  }
  if (markdown && !list_ops) throw UsageError("--markdown goes with --list-ops");
  if (list_ops) {
    std::fputs(markdown ? ops_markdown().c_str() : ops_list().c_str(), stdout);
    return std::nullopt;
  }
  if (options.model_path.empty()) throw UsageError("no model file given");
  if (job.check && !output.empty()) throw UsageError("--check writes no file; leave out -o");
  // Without a build there is nothing to keep but the sources: --emit-source says where.
  if (job.no_build && emit_dir.empty()) throw UsageError("--no-build goes with --emit-source DIR");
  if (output.empty() && !job.check && !job.no_build) throw UsageError("no output file given (-o MODEL.so)");
  if (job.cuda_flags_given && !job.cuda) throw UsageError("--cuda-arch and --precision need --target cuda");
  if (job.cuda && !job.target_triple.empty())
    throw UsageError("--target cuda builds for the host CPU; --target-triple cannot be combined with it");
  for (const auto& in : job.signature.inputs) job.dynamic |= in.dynamic();
  job.dynamic |= !job.signature.dims.empty();
  if (job.dynamic) {
    try {
      aotc::driver::check_dynamic_signature(job.signature);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    std::vector<int64_t> largest;
    for (const auto& d : job.signature.dims) largest.push_back(d.max);
    options.inputs = aotc::driver::specs_at(job.signature, largest);
  } else {
    for (const auto& in : job.signature.inputs) options.inputs.push_back(in.spec);
  }
  for (size_t i = 0; i < options.inputs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (options.inputs[i].name == options.inputs[j].name)
        throw UsageError("--input '" + options.inputs[i].name + "' is given twice");
  options.verbose = verbose;
  return job;
}

int compile(const Job& job) {
  const aotc::frontend::Options& options = job.options;
  const bool verbose = job.verbose;
  const auto start = std::chrono::steady_clock::now();
  if (job.check) {
    aotc::frontend::Census census;
    aotc::frontend::import_torchscript(options, &census);
    return print_census(census, options);
  }
  aotc::codegen::resolve_target(job.target_triple);  // an unknown or unbuilt target fails before the work
  aotc::driver::ModelBuild build;
  build.source_name = options.model_path;
  build.output = job.output;
  build.emit_dir = job.emit_dir;
  build.verbose = verbose;
  build.target_triple = job.target_triple;
  build.weights = job.weights;
  build.cuda = job.cuda;
  build.cuda_options = job.cuda_options;
  build.winograd = job.winograd;
  build.cpu_threads = job.cpu_threads;
  build.no_build = job.no_build;
  if (job.dynamic) {
    aotc::frontend::ModuleFile file(options.model_path);
    aotc::driver::build_dynamic_model(
        [&](const std::vector<aotc::frontend::InputSpec>& inputs) {
          aotc::frontend::Options at = options;
          at.inputs = inputs;
          at.verbose = false;
          at.fold_small_factories = false;  // the samples must be one graph at every size
          return file.import(at);
        },
        job.signature, build);
    if (verbose) std::fprintf(stderr, "aotc: total %.2f s\n", seconds_since(start));
    return 0;
  }
  aotc::ir::Graph graph = aotc::frontend::import_torchscript(options);
  if (verbose) std::fprintf(stderr, "aotc: frontend %.2f s\n", seconds_since(start));
  aotc::driver::build_model(std::move(graph), build);
  if (verbose) std::fprintf(stderr, "aotc: total %.2f s\n", seconds_since(start));
  return 0;
}

// A corrupt file can make LibTorch's unpickler ask for unbounded memory. The compile
// child gets an address-space limit: 4 GiB plus 16 times the file size, at most the
// machine's memory; AOTC_MEMORY_LIMIT_MB overrides it (0: no limit). Not under ASan or
// TSan, which reserve terabytes of address space.
uint64_t memory_limit_bytes = 0;

void limit_memory(const std::string& model_path) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  (void)model_path;
  return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  (void)model_path;
  return;
#endif
#endif
  uint64_t limit = 0;
  if (const char* env = std::getenv("AOTC_MEMORY_LIMIT_MB")) {
    limit = std::strtoull(env, nullptr, 10) << 20;
  } else {
    std::error_code ec;
    const uint64_t file = std::filesystem::file_size(model_path, ec);
    const uint64_t physical =
        static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    limit = (uint64_t{4} << 30) + 16 * (ec ? 0 : file);
    if (physical > 0 && limit > physical) limit = physical;
  }
  if (limit == 0) return;
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = limit;
  if (setrlimit(RLIMIT_AS, &rl) == 0) memory_limit_bytes = limit;
}

// Runs compile() and turns every exception into a message and an exit status.
int compile_reporting_errors(const Job& job) {
  try {
    return compile(job);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "aotc: error: %s: out of memory while compiling (limit %llu MiB; the file may be corrupt, "
                 "or set AOTC_MEMORY_LIMIT_MB)\n",
                 job.options.model_path.c_str(), static_cast<unsigned long long>(memory_limit_bytes >> 20));
  } catch (const aotc::CompileError& e) {
    std::fprintf(stderr, "aotc: error: %s\n", e.what());
  } catch (const std::exception& e) {
    // Not one of ours (LibTorch, the standard library): say which file it was about.
    std::string message = e.what();
    std::fprintf(stderr, "aotc: error: %s: %s\n", job.options.model_path.c_str(),
                 message.substr(0, message.find('\n')).c_str());
  } catch (...) {
    std::fprintf(stderr, "aotc: error: unexpected failure\n");
  }
  return 1;
}

// Removes what a crashed compile may have left: its temporary directory and a temporary
// file beside the output (".NAME.tmp.XXXXXX", see codegen/build_library.cpp).
void clean_after_crash(const std::string& temp_root, const std::string& output) {
  std::error_code ec;
  std::filesystem::remove_all(temp_root, ec);
  const std::filesystem::path out(output);
  const std::filesystem::path dir = out.has_parent_path() ? out.parent_path() : ".";
  const std::string prefix = "." + out.filename().string() + ".tmp.";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().filename().string().rfind(prefix, 0) == 0) std::filesystem::remove(entry.path(), ec);
}

// The model file comes from strangers and LibTorch parses it; a crash in there must not
// be a crash of aotc. The compile runs in a child process with its own temporary
// directory; a child killed by a signal becomes an ordinary error, and what it left is
// removed. AOTC_NO_FORK=1 runs in-process (for debuggers).
int compile_isolated(const Job& job) {
  if (std::getenv("AOTC_NO_FORK")) return compile_reporting_errors(job);
  std::string temp_root = (std::filesystem::temp_directory_path() / "aotc-XXXXXX").string();
  if (!mkdtemp(temp_root.data())) {
    std::fprintf(stderr, "aotc: error: cannot create a temporary directory: %s\n", std::strerror(errno));
    return 1;
  }
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "aotc: error: cannot start the compile process: %s\n", std::strerror(errno));
    std::filesystem::remove_all(temp_root);
    return 1;
  }
  if (child == 0) {
    setenv("TMPDIR", temp_root.c_str(), 1);
    limit_memory(job.options.model_path);
    const int code = compile_reporting_errors(job);
    std::fflush(nullptr);
    _exit(code);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  std::error_code ec;
  if (WIFEXITED(status)) {
    std::filesystem::remove_all(temp_root, ec);
    return WEXITSTATUS(status);
  }
  if (!job.output.empty()) clean_after_crash(temp_root, job.output);
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  std::fprintf(stderr, "aotc: error: %s: compiling crashed (signal %d, %s)%s; no output was written\n",
               job.options.model_path.c_str(), sig, sig ? strsignal(sig) : "unknown",
               sig == SIGKILL ? ", probably out of memory" : ": the file is probably corrupt");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<Job> job;
  try {
    job = parse_command_line(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "aotc: error: %s\n(run 'aotc --help' for usage)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aotc: error: %s\n", e.what());
    return 2;
  }
  return job ? compile_isolated(*job) : 0;
}
