// noalloc_run - runs a model .so through its C ABI and proves that a run makes no heap
// allocation: this executable defines malloc & co. (alloc_hooks.cpp), counting every
// allocation while a run is in progress. The model is dlopen'ed; its calls to malloc
// (its own operator new included: the C++ runtime is linked into it) resolve to these
// definitions, because the executable exports them (-rdynamic) and the dynamic linker
// searches it first. Worker threads of the context count too: the count is global.
//
//   noalloc_run MODEL.so [--weights FILE | --weights-buffer FILE] [--threads N]
//               [--caller-arena] [--runs N] [--input FILE.raw ...] [--output-dir DIR]
//               [--create-v1]
//
// Inputs are raw little-endian bytes in the model's input order (dense, exactly
// size_bytes each); outputs are written as DIR/out<i>.raw. --weights maps the file
// (aotc_model_create_v2 with weights_path); --weights-buffer reads it into a 64-byte
// aligned buffer first (weights_data). --caller-arena gives the context an arena of
// exactly aotc_model_arena_requirements bytes. --create-v1 only calls aotc_model_create
// and prints its status and message (exit 0 if it fails as expected for external weights).
//
// Prints "allocations during N runs: K" and exits 0 only when K is 0 and every call
// succeeded. It first checks that the hooks see an allocation made inside the model
// library (aotc_model_create allocates the model), so a zero cannot come from hooks that
// are not in effect.
#include <aotc/aotc.h>
#include <dlfcn.h>

#include "alloc_hooks.h"

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// ---- running the model -----------------------------------------------------------------

namespace {

struct Api {
  decltype(&aotc_last_error) last_error;
  decltype(&aotc_status_name) status_name;
  decltype(&aotc_model_create) model_create;
  decltype(&aotc_model_create_v2) model_create_v2;
  decltype(&aotc_model_destroy) model_destroy;
  decltype(&aotc_model_num_inputs) num_inputs;
  decltype(&aotc_model_num_outputs) num_outputs;
  decltype(&aotc_model_input_info) input_info;
  decltype(&aotc_model_output_info) output_info;
  decltype(&aotc_model_arena_requirements) arena_requirements;
  decltype(&aotc_context_create) context_create;
  decltype(&aotc_context_destroy) context_destroy;
  decltype(&aotc_run) run;
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "noalloc_run: %s\n", message.c_str());
  std::exit(1);
}

template <class F>
void load(void* lib, const char* name, F& fn) {
  void* symbol = dlsym(lib, name);
  if (!symbol) die(std::string("the model does not export ") + name);
  std::memcpy(&fn, &symbol, sizeof fn);
}

Api g_api;

void check(aotc_status status, const char* call) {
  if (status != AOTC_OK)
    die(std::string(call) + " failed with " + g_api.status_name(status) + ": " + g_api.last_error());
}

std::vector<unsigned char> read_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) die("cannot open " + path + ": " + std::strerror(errno));
  std::vector<unsigned char> bytes;
  unsigned char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) bytes.insert(bytes.end(), buffer, buffer + n);
  std::fclose(f);
  return bytes;
}

// A 64-byte aligned heap block (allocated before counting starts).
struct AlignedBlock {
  unsigned char* data = nullptr;
  explicit AlignedBlock(size_t size) {
    if (size) data = static_cast<unsigned char*>(aligned_alloc(64, (size + 63) / 64 * 64));
    if (size && !data) die("out of memory");
  }
  ~AlignedBlock() { free(data); }
  AlignedBlock(const AlignedBlock&) = delete;
  AlignedBlock& operator=(const AlignedBlock&) = delete;
};

struct Options {
  std::string model;
  std::string weights, weights_buffer;
  int threads = 1;
  bool caller_arena = false;
  bool create_v1 = false;
  int runs = 5;
  std::vector<std::string> inputs;
  std::string output_dir;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--weights")
      o.weights = value();
    else if (arg == "--weights-buffer")
      o.weights_buffer = value();
    else if (arg == "--threads")
      o.threads = std::atoi(value().c_str());
    else if (arg == "--runs")
      o.runs = std::atoi(value().c_str());
    else if (arg == "--input")
      o.inputs.push_back(value());
    else if (arg == "--output-dir")
      o.output_dir = value();
    else if (arg == "--caller-arena")
      o.caller_arena = true;
    else if (arg == "--create-v1")
      o.create_v1 = true;
    else if (o.model.empty() && arg[0] != '-')
      o.model = arg;
    else
      die("unknown argument " + arg);
  }
  if (o.model.empty()) die("usage: noalloc_run MODEL.so [options] (see the source)");
  if (o.runs < 1 || o.threads < 1) die("--runs and --threads must be at least 1");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::string open_path = o.model.find('/') == std::string::npos ? "./" + o.model : o.model;
  void* lib = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) die(std::string("cannot load ") + o.model + ": " + dlerror());
  load(lib, "aotc_last_error", g_api.last_error);
  load(lib, "aotc_status_name", g_api.status_name);
  load(lib, "aotc_model_create", g_api.model_create);
  load(lib, "aotc_model_create_v2", g_api.model_create_v2);
  load(lib, "aotc_model_destroy", g_api.model_destroy);
  load(lib, "aotc_model_num_inputs", g_api.num_inputs);
  load(lib, "aotc_model_num_outputs", g_api.num_outputs);
  load(lib, "aotc_model_input_info", g_api.input_info);
  load(lib, "aotc_model_output_info", g_api.output_info);
  load(lib, "aotc_model_arena_requirements", g_api.arena_requirements);
  load(lib, "aotc_context_create", g_api.context_create);
  load(lib, "aotc_context_destroy", g_api.context_destroy);
  load(lib, "aotc_run", g_api.run);

  if (o.create_v1) {
    aotc_model* model = nullptr;
    const aotc_status status = g_api.model_create(&model);
    std::printf("aotc_model_create: %s: %s\n", g_api.status_name(status), g_api.last_error());
    if (model) g_api.model_destroy(model);
    return status == AOTC_OK ? 1 : 0;
  }

  std::vector<unsigned char> weights_bytes;
  AlignedBlock weights_buffer(
      o.weights_buffer.empty() ? 0 : (weights_bytes = read_file(o.weights_buffer)).size());
  aotc_model_options model_options{};
  if (!o.weights.empty()) model_options.weights_path = o.weights.c_str();
  if (!o.weights_buffer.empty()) {
    if (!weights_bytes.empty()) std::memcpy(weights_buffer.data, weights_bytes.data(), weights_bytes.size());
    model_options.weights_data = weights_buffer.data ? weights_buffer.data : weights_bytes.data();
    model_options.weights_size = weights_bytes.size();
  }

  // The hooks must see what the model library allocates: creating a model allocates.
  aotc_model* model = nullptr;
  aotc::test::start_counting_allocations();
  const aotc_status created = g_api.model_create_v2(&model_options, &model);
  const long create_allocations = aotc::test::stop_counting_allocations();
  check(created, "aotc_model_create_v2");
  if (create_allocations == 0)
    die("the allocation hooks saw nothing while the model was created: not in effect");

  size_t num_inputs = 0, num_outputs = 0;
  check(g_api.num_inputs(model, &num_inputs), "aotc_model_num_inputs");
  check(g_api.num_outputs(model, &num_outputs), "aotc_model_num_outputs");
  if (!o.inputs.empty() && o.inputs.size() != num_inputs)
    die("the model has " + std::to_string(num_inputs) + " inputs, got " + std::to_string(o.inputs.size()));
  std::vector<aotc_tensor_info> in_info(num_inputs), out_info(num_outputs);
  std::vector<std::vector<unsigned char>> in_data(num_inputs), out_data(num_outputs);
  std::vector<aotc_tensor> in(num_inputs), out(num_outputs);
  for (size_t i = 0; i < num_inputs; ++i) {
    check(g_api.input_info(model, i, &in_info[i]), "aotc_model_input_info");
    if (o.inputs.empty()) {
      in_data[i].assign(in_info[i].size_bytes, 0);
      for (size_t b = 0; b + 4 <= in_data[i].size(); b += 4) {
        const float v = static_cast<float>((b / 4) % 17) * 0.125f - 1.0f;
        std::memcpy(&in_data[i][b], &v, 4);
      }
    } else {
      in_data[i] = read_file(o.inputs[i]);
      if (in_data[i].size() != in_info[i].size_bytes)
        die(o.inputs[i] + " has " + std::to_string(in_data[i].size()) + " bytes, input " + in_info[i].name +
            " needs " + std::to_string(in_info[i].size_bytes));
    }
    in[i] = {in_data[i].data(),
             in_info[i].dtype,
             in_info[i].rank,
             in_info[i].dims,
             in_info[i].size_bytes,
             AOTC_MEMORY_HOST,
             {}};
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    check(g_api.output_info(model, i, &out_info[i]), "aotc_model_output_info");
    out_data[i].assign(out_info[i].size_bytes, 0);
    out[i] = {out_data[i].data(),
              out_info[i].dtype,
              out_info[i].rank,
              out_info[i].dims,
              out_info[i].size_bytes,
              AOTC_MEMORY_HOST,
              {}};
  }

  aotc_context_options context_options{};
  context_options.num_threads = o.threads;
  uint64_t arena_bytes = 0, alignment = 0;
  check(g_api.arena_requirements(model, o.threads, &arena_bytes, &alignment),
        "aotc_model_arena_requirements");
  AlignedBlock arena(o.caller_arena ? arena_bytes : 0);
  if (o.caller_arena) {
    context_options.arena = arena.data;
    context_options.arena_size = arena_bytes;
  }
  aotc_context* context = nullptr;
  check(g_api.context_create(model, &context_options, &context), "aotc_context_create");

  // Every run counts, the first one included.
  long first_run = 0, during = 0;
  size_t first_size = 0;
  for (int r = 0; r < o.runs; ++r) {
    aotc::test::start_counting_allocations();
    const aotc_status status = g_api.run(model, context, in.data(), num_inputs, out.data(), num_outputs);
    const long allocations = aotc::test::stop_counting_allocations();
    if (allocations && !first_size) first_size = aotc::test::first_counted_allocation_size();
    if (r == 0) first_run = allocations;
    during += allocations;
    check(status, "aotc_run");
  }

  check(g_api.context_destroy(context), "aotc_context_destroy");
  check(g_api.model_destroy(model), "aotc_model_destroy");

  if (!o.output_dir.empty()) {
    for (size_t i = 0; i < num_outputs; ++i) {
      const std::string path = o.output_dir + "/out" + std::to_string(i) + ".raw";
      FILE* f = std::fopen(path.c_str(), "wb");
      if (!f || std::fwrite(out_data[i].data(), 1, out_data[i].size(), f) != out_data[i].size())
        die("cannot write " + path);
      std::fclose(f);
    }
  }
  std::printf(
      "threads %d, %s weights, %s arena (%llu bytes, %llu-byte aligned); model create made %ld "
      "allocations (hooks in effect)\n",
      o.threads, !o.weights.empty() ? "mapped file" : (!o.weights_buffer.empty() ? "caller buffer" : "own"),
      o.caller_arena ? "caller" : "own", static_cast<unsigned long long>(arena_bytes),
      static_cast<unsigned long long>(alignment), create_allocations);
  std::printf("allocations during %d runs: %ld (first run: %ld)", o.runs, during, first_run);
  if (during) std::printf("; the first one of %zu bytes", first_size);
  std::printf("\n");
  return during == 0 ? 0 : 1;
}
