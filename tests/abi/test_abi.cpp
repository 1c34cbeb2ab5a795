// test_abi.cpp - tests the C ABI of a model .so (aotc/aotc.h) from the outside, the way a
// user program sees it: the fixture model (fixture_model.cpp) is dlopen'ed and every
// function is reached through dlsym. Covers every error path, the success path, threads,
// and what the library exports and links.
//
// Environment (set by tests/abi/meson.build):
//   AOTC_FIXTURE_MODEL  path of the fixture .so (required)
//   AOTC_FIXTURE_MODEL_EXTERNAL  the same fixture with external weights (required)
//   AOTC_EXPORTS_MAP    templates/exports.map, AOTC_ABI_HEADER  runtime/include/aotc/aotc.h
//   AOTC_NM, AOTC_READELF, AOTC_LDD  tools (default: found on PATH)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <aotc/aotc.h>
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---- loading the fixture ----------------------------------------------------------------

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
  // Minor version 1.
  uint32_t (*abi_minor_version)(void);
  aotc_status (*model_create_v2)(const aotc_model_options*, aotc_model**);
  aotc_status (*model_weights_info)(aotc_weights_info*);
  aotc_status (*model_arena_requirements)(const aotc_model*, int32_t, uint64_t*, uint64_t*);
  // Minor version 3.
  const char* (*runtime_version)(void);
  const char* (*compiler_version)(void);
  // Minor version 4.
  aotc_status (*model_input_dim_range)(const aotc_model*, size_t, int32_t, aotc_dim_range*);
  aotc_status (*model_output_dim_range)(const aotc_model*, size_t, int32_t, aotc_dim_range*);
  aotc_status (*model_output_dims)(const aotc_model*, const aotc_tensor*, size_t, size_t, int64_t*);
  aotc_status (*context_output_dims)(const aotc_context*, size_t, int64_t*);
};

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

template <class Fn>
void resolve(void* handle, const char* name, Fn& fn) {
  void* symbol = dlsym(handle, name);
  if (!symbol) {
    std::fprintf(stderr, "test_abi: the fixture does not export %s\n", name);
    std::abort();
  }
  std::memcpy(&fn, &symbol, sizeof fn);
}

Api load_api(const char* variable) {
  const std::string path = env_or(variable, "");
  if (path.empty()) {
    std::fprintf(stderr, "test_abi: set %s to the fixture model .so\n", variable);
    std::abort();
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "test_abi: cannot load %s: %s\n", path.c_str(), dlerror());
    std::abort();
  }
  Api a{};
  resolve(handle, "aotc_abi_version", a.abi_version);
  resolve(handle, "aotc_last_error", a.last_error);
  resolve(handle, "aotc_status_name", a.status_name);
  resolve(handle, "aotc_dtype_size", a.dtype_size);
  resolve(handle, "aotc_dtype_name", a.dtype_name);
  resolve(handle, "aotc_model_create", a.model_create);
  resolve(handle, "aotc_model_destroy", a.model_destroy);
  resolve(handle, "aotc_model_num_inputs", a.model_num_inputs);
  resolve(handle, "aotc_model_num_outputs", a.model_num_outputs);
  resolve(handle, "aotc_model_input_info", a.model_input_info);
  resolve(handle, "aotc_model_output_info", a.model_output_info);
  resolve(handle, "aotc_model_arena_size", a.model_arena_size);
  resolve(handle, "aotc_context_create", a.context_create);
  resolve(handle, "aotc_context_destroy", a.context_destroy);
  resolve(handle, "aotc_run", a.run);
  resolve(handle, "aotc_abi_minor_version", a.abi_minor_version);
  resolve(handle, "aotc_model_create_v2", a.model_create_v2);
  resolve(handle, "aotc_model_weights_info", a.model_weights_info);
  resolve(handle, "aotc_model_arena_requirements", a.model_arena_requirements);
  resolve(handle, "aotc_runtime_version", a.runtime_version);
  resolve(handle, "aotc_compiler_version", a.compiler_version);
  resolve(handle, "aotc_model_input_dim_range", a.model_input_dim_range);
  resolve(handle, "aotc_model_output_dim_range", a.model_output_dim_range);
  resolve(handle, "aotc_model_output_dims", a.model_output_dims);
  resolve(handle, "aotc_context_output_dims", a.context_output_dims);
  return a;
}

// Loaded once for the whole test binary; never closed (threads of the tests use it).
const Api& api() {
  static const Api loaded = load_api("AOTC_FIXTURE_MODEL");
  return loaded;
}

// The fixture built with external weights: a library of its own, with its own runtime
// (and so its own aotc_last_error).
const Api& ext() {
  static const Api loaded = load_api("AOTC_FIXTURE_MODEL_EXTERNAL");
  return loaded;
}

// Checks a status and that the thread's message mentions each of the given words.
// (Words are copied into strings first: some are temporaries, and doctest prints a
// const char* as a pointer.)
#define CHECK_FAILS_IN(lib, call, status, ...)                                                        \
  do {                                                                                                \
    const aotc_status got_status_ = (call);                                                           \
    const std::string message_ = (lib).last_error();                                                  \
    CHECK_MESSAGE(got_status_ == (status), "got ", std::string((lib).status_name(got_status_)), ": ", \
                  message_);                                                                          \
    const std::vector<std::string> words_ = {__VA_ARGS__};                                            \
    for (const std::string& word_ : words_)                                                           \
      CHECK_MESSAGE(message_.find(word_) != std::string::npos, "'", word_, "' not in: ", message_);   \
  } while (0)
#define CHECK_FAILS(call, status, ...) CHECK_FAILS_IN(api(), call, status, __VA_ARGS__)

// ---- one model, one context, valid tensors; tests break one thing at a time -------------

struct Fixture {
  aotc_model* model = nullptr;
  aotc_context* context = nullptr;
  float x[6] = {0.0f, 1.0f, -1.0f, 2.5f, -3.0f, 100.0f};
  int64_t ids[4] = {1, 20, 300, -4000};
  float y[6] = {};
  float s[1] = {};
  int64_t x_dims[2] = {2, 3};
  int64_t ids_dims[1] = {4};
  int64_t y_dims[2] = {2, 3};
  int64_t s_dims[1] = {1};
  aotc_tensor in[2] = {};
  aotc_tensor out[2] = {};

  const Api* lib = &api();

  explicit Fixture(int threads = 1) {
    REQUIRE(api().model_create(&model) == AOTC_OK);
    aotc_context_options options{};
    options.num_threads = threads;
    REQUIRE(api().context_create(model, &options, &context) == AOTC_OK);
    init_tensors();
  }
  // A model of `library` made by the caller, with a context of the given options.
  Fixture(const Api& library, aotc_model* made, const aotc_context_options& options) : lib(&library) {
    model = made;
    REQUIRE(lib->context_create(model, &options, &context) == AOTC_OK);
    init_tensors();
  }
  void init_tensors() {
    in[0] = tensor(x, AOTC_DTYPE_FLOAT32, 2, x_dims, sizeof x);
    in[1] = tensor(ids, AOTC_DTYPE_INT64, 1, ids_dims, sizeof ids);
    out[0] = tensor(y, AOTC_DTYPE_FLOAT32, 2, y_dims, sizeof y);
    out[1] = tensor(s, AOTC_DTYPE_FLOAT32, 1, s_dims, sizeof s);
  }
  ~Fixture() {
    CHECK(lib->context_destroy(context) == AOTC_OK);
    CHECK(lib->model_destroy(model) == AOTC_OK);
  }
  Fixture(const Fixture&) = delete;
  Fixture& operator=(const Fixture&) = delete;

  static aotc_tensor tensor(void* data, aotc_dtype dtype, int32_t rank, const int64_t* dims, uint64_t bytes) {
    aotc_tensor t{};
    t.data = data;
    t.dtype = dtype;
    t.rank = rank;
    t.dims = dims;
    t.size_bytes = bytes;
    return t;
  }

  aotc_status run() { return lib->run(model, context, in, 2, out, 2); }

  // True when y and s hold the model's result for x and ids (with weights {scale, 1}).
  bool results_correct(float scale = 2.0f) const {
    for (int i = 0; i < 6; ++i)
      if (y[i] != x[i] * scale + 1.0f) return false;
    return s[0] == static_cast<float>(ids[0] + ids[1] + ids[2] + ids[3]);
  }
};

// A block of memory that is certainly not a live handle.
struct Garbage {
  alignas(64) unsigned char bytes[256];
  explicit Garbage(unsigned char fill) { std::memset(bytes, fill, sizeof bytes); }
  aotc_model* model() { return reinterpret_cast<aotc_model*>(bytes); }
  aotc_context* context() { return reinterpret_cast<aotc_context*>(bytes); }
};

}  // namespace

// ---- plain functions --------------------------------------------------------------------

TEST_CASE("abi version matches the header") { CHECK(api().abi_version() == AOTC_ABI_VERSION); }

TEST_CASE("status names") {
  const std::pair<aotc_status, const char*> names[] = {
      {AOTC_OK, "AOTC_OK"},
      {AOTC_ERR_NULL_POINTER, "AOTC_ERR_NULL_POINTER"},
      {AOTC_ERR_INVALID_ARGUMENT, "AOTC_ERR_INVALID_ARGUMENT"},
      {AOTC_ERR_WRONG_COUNT, "AOTC_ERR_WRONG_COUNT"},
      {AOTC_ERR_WRONG_DTYPE, "AOTC_ERR_WRONG_DTYPE"},
      {AOTC_ERR_WRONG_SHAPE, "AOTC_ERR_WRONG_SHAPE"},
      {AOTC_ERR_BUFFER_TOO_SMALL, "AOTC_ERR_BUFFER_TOO_SMALL"},
      {AOTC_ERR_WRONG_MODEL, "AOTC_ERR_WRONG_MODEL"},
      {AOTC_ERR_ABI_MISMATCH, "AOTC_ERR_ABI_MISMATCH"},
      {AOTC_ERR_OUT_OF_MEMORY, "AOTC_ERR_OUT_OF_MEMORY"},
      {AOTC_ERR_SYSTEM, "AOTC_ERR_SYSTEM"},
      {AOTC_ERR_INTERNAL, "AOTC_ERR_INTERNAL"},
  };
  for (const auto& [status, name] : names) CHECK(std::string(api().status_name(status)) == name);
  for (const int unknown : {-1, 9, 19, 22, 31, 1000}) {
    const char* name = api().status_name(static_cast<aotc_status>(unknown));
    REQUIRE(name != nullptr);
    CHECK(std::string(name) == "AOTC_ERR_UNKNOWN");
  }
}

TEST_CASE("dtype sizes and names") {
  const struct {
    aotc_dtype dtype;
    size_t size;
    const char* name;
  } dtypes[] = {
      {AOTC_DTYPE_FLOAT32, 4, "float32"},   {AOTC_DTYPE_FLOAT16, 2, "float16"},
      {AOTC_DTYPE_BFLOAT16, 2, "bfloat16"}, {AOTC_DTYPE_INT64, 8, "int64"},
      {AOTC_DTYPE_INT32, 4, "int32"},       {AOTC_DTYPE_BOOL, 1, "bool"},
  };
  for (const auto& d : dtypes) {
    CHECK(api().dtype_size(d.dtype) == d.size);
    CHECK(std::string(api().dtype_name(d.dtype)) == d.name);
  }
  for (const int unknown : {0, 7, -1, 255}) {
    CHECK(api().dtype_size(static_cast<aotc_dtype>(unknown)) == 0);
    CHECK(std::string(api().dtype_name(static_cast<aotc_dtype>(unknown))) == "unknown");
  }
}

TEST_CASE("last error is thread-local and never NULL") {
  CHECK_FAILS(api().model_create(nullptr), AOTC_ERR_NULL_POINTER, "out_model");
  std::string other_thread_message = "not run";
  std::thread([&] { other_thread_message = api().last_error(); }).join();
  CHECK(other_thread_message.empty());
  CHECK(api().last_error() != nullptr);
}

// ---- model and its description ----------------------------------------------------------

TEST_CASE("model description") {
  aotc_model* model = nullptr;
  REQUIRE(api().model_create(&model) == AOTC_OK);
  REQUIRE(model != nullptr);
  size_t count = 0;
  REQUIRE(api().model_num_inputs(model, &count) == AOTC_OK);
  CHECK(count == 2);
  REQUIRE(api().model_num_outputs(model, &count) == AOTC_OK);
  CHECK(count == 2);
  uint64_t arena = 0;
  REQUIRE(api().model_arena_size(model, &arena) == AOTC_OK);
  CHECK(arena > 0);

  const struct {
    bool input;
    size_t index;
    const char* name;
    aotc_dtype dtype;
    std::vector<int64_t> dims;
    uint64_t bytes;
  } expected[] = {
      {true, 0, "x", AOTC_DTYPE_FLOAT32, {2, 3}, 24},
      {true, 1, "ids", AOTC_DTYPE_INT64, {4}, 32},
      {false, 0, "y", AOTC_DTYPE_FLOAT32, {2, 3}, 24},
      {false, 1, "s", AOTC_DTYPE_FLOAT32, {1}, 4},
  };
  for (const auto& e : expected) {
    const std::string name = e.name;
    CAPTURE(name);
    aotc_tensor_info info;
    std::memset(&info, 0xab, sizeof info);  // every field must be written
    REQUIRE((e.input ? api().model_input_info(model, e.index, &info)
                     : api().model_output_info(model, e.index, &info)) == AOTC_OK);
    CHECK(std::string(info.name) == e.name);
    CHECK(info.dtype == e.dtype);
    REQUIRE(info.rank == static_cast<int32_t>(e.dims.size()));
    CHECK(std::vector<int64_t>(info.dims, info.dims + info.rank) == e.dims);
    CHECK(info.size_bytes == e.bytes);
    for (const uint64_t r : info.reserved) CHECK(r == 0);
  }
  CHECK(api().model_destroy(model) == AOTC_OK);
}

TEST_CASE("null out pointers") {
  aotc_model* model = nullptr;
  REQUIRE(api().model_create(&model) == AOTC_OK);
  CHECK_FAILS(api().model_create(nullptr), AOTC_ERR_NULL_POINTER, "out_model");
  CHECK_FAILS(api().model_num_inputs(model, nullptr), AOTC_ERR_NULL_POINTER, "out_count");
  CHECK_FAILS(api().model_num_outputs(model, nullptr), AOTC_ERR_NULL_POINTER, "out_count");
  CHECK_FAILS(api().model_input_info(model, 0, nullptr), AOTC_ERR_NULL_POINTER, "out_info");
  CHECK_FAILS(api().model_output_info(model, 0, nullptr), AOTC_ERR_NULL_POINTER, "out_info");
  CHECK_FAILS(api().model_arena_size(model, nullptr), AOTC_ERR_NULL_POINTER, "out_bytes");
  CHECK_FAILS(api().context_create(model, nullptr, nullptr), AOTC_ERR_NULL_POINTER, "out_context");
  CHECK(api().model_destroy(model) == AOTC_OK);
}

TEST_CASE("null model and context") {
  size_t count = 99;
  aotc_tensor_info info{};
  uint64_t bytes = 0;
  CHECK_FAILS(api().model_num_inputs(nullptr, &count), AOTC_ERR_NULL_POINTER, "model");
  CHECK_FAILS(api().model_num_outputs(nullptr, &count), AOTC_ERR_NULL_POINTER, "model");
  CHECK(count == 99);  // untouched on failure
  CHECK_FAILS(api().model_input_info(nullptr, 0, &info), AOTC_ERR_NULL_POINTER, "model");
  CHECK_FAILS(api().model_output_info(nullptr, 0, &info), AOTC_ERR_NULL_POINTER, "model");
  CHECK_FAILS(api().model_arena_size(nullptr, &bytes), AOTC_ERR_NULL_POINTER, "model");
  aotc_context* context = reinterpret_cast<aotc_context*>(&count);
  CHECK_FAILS(api().context_create(nullptr, nullptr, &context), AOTC_ERR_NULL_POINTER, "model");
  CHECK(context == nullptr);  // out pointer cleared on failure

  // Destroying NULL is a no-op, like free(NULL).
  CHECK(api().model_destroy(nullptr) == AOTC_OK);
  CHECK(api().context_destroy(nullptr) == AOTC_OK);

  Fixture f;
  CHECK_FAILS(api().run(nullptr, f.context, f.in, 2, f.out, 2), AOTC_ERR_NULL_POINTER, "model");
  CHECK_FAILS(api().run(f.model, nullptr, f.in, 2, f.out, 2), AOTC_ERR_NULL_POINTER, "context");
  CHECK_FAILS(api().run(f.model, f.context, nullptr, 2, f.out, 2), AOTC_ERR_NULL_POINTER, "inputs");
  CHECK_FAILS(api().run(f.model, f.context, f.in, 2, nullptr, 2), AOTC_ERR_NULL_POINTER, "outputs");
}

TEST_CASE("garbage handles are rejected") {
  for (const unsigned char fill : {0x00, 0x5a, 0xff}) {
    CAPTURE(static_cast<int>(fill));
    Garbage garbage(fill);
    size_t count = 0;
    aotc_tensor_info info{};
    uint64_t bytes = 0;
    aotc_context* context = nullptr;
    CHECK_FAILS(api().model_num_inputs(garbage.model(), &count), AOTC_ERR_INVALID_ARGUMENT, "model");
    CHECK_FAILS(api().model_num_outputs(garbage.model(), &count), AOTC_ERR_INVALID_ARGUMENT, "model");
    CHECK_FAILS(api().model_input_info(garbage.model(), 0, &info), AOTC_ERR_INVALID_ARGUMENT, "model");
    CHECK_FAILS(api().model_output_info(garbage.model(), 0, &info), AOTC_ERR_INVALID_ARGUMENT, "model");
    CHECK_FAILS(api().model_arena_size(garbage.model(), &bytes), AOTC_ERR_INVALID_ARGUMENT, "model");
    CHECK_FAILS(api().context_create(garbage.model(), nullptr, &context), AOTC_ERR_INVALID_ARGUMENT, "model");
    CHECK(context == nullptr);
    CHECK_FAILS(api().model_destroy(garbage.model()), AOTC_ERR_INVALID_ARGUMENT, "model");
    CHECK_FAILS(api().context_destroy(garbage.context()), AOTC_ERR_INVALID_ARGUMENT, "context");

    Fixture f;
    CHECK_FAILS(api().run(garbage.model(), f.context, f.in, 2, f.out, 2), AOTC_ERR_INVALID_ARGUMENT, "model");
    CHECK_FAILS(api().run(f.model, garbage.context(), f.in, 2, f.out, 2), AOTC_ERR_INVALID_ARGUMENT,
                "context");
  }
  // One kind of handle passed as the other.
  Fixture f;
  size_t count = 0;
  CHECK_FAILS(api().model_num_inputs(reinterpret_cast<aotc_model*>(f.context), &count),
              AOTC_ERR_INVALID_ARGUMENT, "model");
  CHECK_FAILS(api().run(f.model, reinterpret_cast<aotc_context*>(f.model), f.in, 2, f.out, 2),
              AOTC_ERR_INVALID_ARGUMENT, "context");
  CHECK(f.run() == AOTC_OK);  // the real handles still work
}

TEST_CASE("info index out of range") {
  aotc_model* model = nullptr;
  REQUIRE(api().model_create(&model) == AOTC_OK);
  aotc_tensor_info info{};
  CHECK_FAILS(api().model_input_info(model, 2, &info), AOTC_ERR_INVALID_ARGUMENT, "input index 2",
              "2 inputs");
  CHECK_FAILS(api().model_output_info(model, 2, &info), AOTC_ERR_INVALID_ARGUMENT, "output index 2",
              "2 outputs");
  CHECK_FAILS(api().model_input_info(model, SIZE_MAX, &info), AOTC_ERR_INVALID_ARGUMENT, "out of range");
  CHECK_FAILS(api().model_output_info(model, SIZE_MAX, &info), AOTC_ERR_INVALID_ARGUMENT, "out of range");
  CHECK(api().model_destroy(model) == AOTC_OK);
}

// ---- contexts -----------------------------------------------------------------------------

TEST_CASE("context options") {
  aotc_model* model = nullptr;
  REQUIRE(api().model_create(&model) == AOTC_OK);
  for (const int32_t bad : {-1, -1000, 1025, INT32_MIN, INT32_MAX}) {
    CAPTURE(bad);
    aotc_context_options options{};
    options.num_threads = bad;
    aotc_context* context = reinterpret_cast<aotc_context*>(&options);
    CHECK_FAILS(api().context_create(model, &options, &context), AOTC_ERR_INVALID_ARGUMENT, "num_threads",
                std::to_string(bad));
    CHECK(context == nullptr);
  }
  // NULL options, 0 (meaning 1) and a few threads all work.
  aotc_context* context = nullptr;
  REQUIRE(api().context_create(model, nullptr, &context) == AOTC_OK);
  CHECK(api().context_destroy(context) == AOTC_OK);
  for (const int32_t good : {0, 1, 3}) {
    aotc_context_options options{};
    options.num_threads = good;
    REQUIRE(api().context_create(model, &options, &context) == AOTC_OK);
    CHECK(api().context_destroy(context) == AOTC_OK);
  }
  // Minor version 5: cuda_graph_cache is a count, never negative; a CPU model ignores it.
  for (const int32_t bad : {-1, INT32_MIN}) {
    CAPTURE(bad);
    aotc_context_options options{};
    options.cuda_graph_cache = bad;
    context = reinterpret_cast<aotc_context*>(&options);
    CHECK_FAILS(api().context_create(model, &options, &context), AOTC_ERR_INVALID_ARGUMENT,
                "cuda_graph_cache", std::to_string(bad));
    CHECK(context == nullptr);
  }
  for (const int32_t good : {1, 8, 1000, INT32_MAX}) {
    CAPTURE(good);
    aotc_context_options options{};
    options.cuda_graph_cache = good;
    aotc_model* made = nullptr;
    REQUIRE(api().model_create(&made) == AOTC_OK);
    Fixture f(api(), made, options);
    REQUIRE(f.run() == AOTC_OK);
    CHECK(f.results_correct());
  }
  CHECK(api().model_destroy(model) == AOTC_OK);
}

TEST_CASE("context of another model") {
  Fixture a;
  Fixture b;
  CHECK_FAILS(api().run(b.model, a.context, b.in, 2, b.out, 2), AOTC_ERR_WRONG_MODEL, "another model");
  CHECK_FAILS(api().run(a.model, b.context, a.in, 2, a.out, 2), AOTC_ERR_WRONG_MODEL, "another model");
  CHECK(a.run() == AOTC_OK);
  CHECK(b.run() == AOTC_OK);
}

TEST_CASE("a model with live contexts cannot be destroyed") {
  aotc_model* model = nullptr;
  aotc_context* context = nullptr;
  REQUIRE(api().model_create(&model) == AOTC_OK);
  REQUIRE(api().context_create(model, nullptr, &context) == AOTC_OK);
  CHECK_FAILS(api().model_destroy(model), AOTC_ERR_INVALID_ARGUMENT, "live context");
  CHECK(api().context_destroy(context) == AOTC_OK);
  CHECK(api().model_destroy(model) == AOTC_OK);
}

TEST_CASE("one context used by two threads at once: the second run is refused") {
  Fixture f;
  f.ids[0] = -555;  // the fixture's slow sentinel: this run takes 200 ms
  std::atomic<bool> started{false};
  aotc_status slow_status = AOTC_ERR_INTERNAL;
  std::thread slow([&] {
    started = true;
    slow_status = f.run();
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  float y[6];
  float s[1];
  int64_t ids[4] = {1, 2, 3, 4};
  aotc_tensor in[2] = {f.in[0], f.in[1]};
  aotc_tensor out[2] = {f.out[0], f.out[1]};
  in[1].data = ids;
  out[0].data = y;
  out[1].data = s;
  CHECK_FAILS(api().run(f.model, f.context, in, 2, out, 2), AOTC_ERR_INVALID_ARGUMENT, "another thread");
  CHECK_FAILS(api().context_destroy(f.context), AOTC_ERR_INVALID_ARGUMENT, "another thread");
  slow.join();
  CHECK(slow_status == AOTC_OK);
  f.ids[0] = 1;
  CHECK(f.run() == AOTC_OK);
  CHECK(f.results_correct());
}

// ---- running ------------------------------------------------------------------------------

TEST_CASE("run computes the right values") {
  for (const int threads : {1, 2, 4}) {
    CAPTURE(threads);
    Fixture f(threads);
    REQUIRE(f.run() == AOTC_OK);
    CHECK(f.results_correct());
    CHECK(f.y[5] == 201.0f);
    CHECK(f.s[0] == -3679.0f);
    // Again with other values in the same context: nothing stale is kept.
    for (float& v : f.x) v = -v;
    f.ids[2] = 7;
    REQUIRE(f.run() == AOTC_OK);
    CHECK(f.results_correct());
  }
}

TEST_CASE("larger buffers than needed are fine") {
  Fixture f;
  float big_y[10] = {};
  f.out[0].data = big_y;
  f.out[0].size_bytes = sizeof big_y;
  REQUIRE(f.run() == AOTC_OK);
  CHECK(big_y[0] == 1.0f);
  CHECK(big_y[6] == 0.0f);  // nothing written past the tensor
}

TEST_CASE("wrong input and output counts") {
  Fixture f;
  for (const size_t n : {size_t{0}, size_t{1}, size_t{3}}) {
    CAPTURE(n);
    CHECK_FAILS(api().run(f.model, f.context, f.in, n, f.out, 2), AOTC_ERR_WRONG_COUNT, "expected 2 inputs",
                "got " + std::to_string(n));
    CHECK_FAILS(api().run(f.model, f.context, f.in, 2, f.out, n), AOTC_ERR_WRONG_COUNT, "expected 2 outputs",
                "got " + std::to_string(n));
  }
}

TEST_CASE("wrong dtype") {
  Fixture f;
  f.in[0].dtype = AOTC_DTYPE_FLOAT16;
  CHECK_FAILS(f.run(), AOTC_ERR_WRONG_DTYPE, "input 0", "'x'", "float32", "float16");
  f.in[0].dtype = static_cast<aotc_dtype>(99);
  CHECK_FAILS(f.run(), AOTC_ERR_WRONG_DTYPE, "'x'", "float32", "unknown");
  f.in[0].dtype = AOTC_DTYPE_FLOAT32;
  f.in[1].dtype = AOTC_DTYPE_INT32;
  CHECK_FAILS(f.run(), AOTC_ERR_WRONG_DTYPE, "input 1", "'ids'", "int64", "int32");
  f.in[1].dtype = AOTC_DTYPE_INT64;
  f.out[1].dtype = AOTC_DTYPE_BFLOAT16;
  CHECK_FAILS(f.run(), AOTC_ERR_WRONG_DTYPE, "output 1", "'s'", "float32", "bfloat16");
  f.out[1].dtype = AOTC_DTYPE_FLOAT32;
  CHECK(f.run() == AOTC_OK);
}

TEST_CASE("wrong rank") {
  Fixture f;
  const int64_t flat[1] = {6};
  f.in[0].rank = 1;
  f.in[0].dims = flat;
  CHECK_FAILS(f.run(), AOTC_ERR_WRONG_SHAPE, "'x'", "expected shape [2, 3]", "got [6]");
  const int64_t deep[3] = {1, 2, 3};
  f.in[0].rank = 3;
  f.in[0].dims = deep;
  CHECK_FAILS(f.run(), AOTC_ERR_WRONG_SHAPE, "'x'", "[2, 3]", "[1, 2, 3]");
  f.in[0].rank = 0;
  CHECK_FAILS(f.run(), AOTC_ERR_WRONG_SHAPE, "'x'", "[2, 3]", "got []");
  const int64_t many[16] = {2, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  f.in[0].dims = many;
  for (const int32_t bad : {-1, AOTC_MAX_RANK + 1, INT32_MAX, INT32_MIN}) {
    CAPTURE(bad);
    f.in[0].rank = bad;
    CHECK_FAILS(f.run(), AOTC_ERR_WRONG_SHAPE, "'x'", "[2, 3]", "rank " + std::to_string(bad));
  }
  f.in[0] = Fixture::tensor(f.x, AOTC_DTYPE_FLOAT32, 2, f.x_dims, sizeof f.x);
  f.out[1].rank = 2;
  const int64_t s_dims2[2] = {1, 1};
  f.out[1].dims = s_dims2;
  CHECK_FAILS(f.run(), AOTC_ERR_WRONG_SHAPE, "output 1", "'s'", "[1]", "[1, 1]");
}

TEST_CASE("wrong dims") {
  Fixture f;
  const int64_t swapped[2] = {3, 2};
  f.in[0].dims = swapped;
  CHECK_FAILS(f.run(), AOTC_ERR_WRONG_SHAPE, "input 0", "'x'", "expected shape [2, 3]", "got [3, 2]");
  const int64_t negative[2] = {-2, -3};
  f.in[0].dims = negative;
  CHECK_FAILS(f.run(), AOTC_ERR_WRONG_SHAPE, "'x'", "[-2, -3]");
  f.in[0].dims = f.x_dims;
  const int64_t five[1] = {5};
  f.in[1].dims = five;
  CHECK_FAILS(f.run(), AOTC_ERR_WRONG_SHAPE, "'ids'", "[4]", "[5]");
  f.in[1].dims = f.ids_dims;
  const int64_t y_big[2] = {2, 4};
  f.out[0].dims = y_big;
  CHECK_FAILS(f.run(), AOTC_ERR_WRONG_SHAPE, "output 0", "'y'", "[2, 3]", "[2, 4]");
}

TEST_CASE("NULL dims with rank > 0") {
  Fixture f;
  f.in[1].dims = nullptr;
  CHECK_FAILS(f.run(), AOTC_ERR_NULL_POINTER, "'ids'", "dims is NULL");
  f.in[1].dims = f.ids_dims;
  f.out[0].dims = nullptr;
  CHECK_FAILS(f.run(), AOTC_ERR_NULL_POINTER, "'y'", "dims is NULL");
}

TEST_CASE("NULL data") {
  Fixture f;
  f.in[0].data = nullptr;
  CHECK_FAILS(f.run(), AOTC_ERR_NULL_POINTER, "input 0", "'x'", "data is NULL");
  f.in[0].data = f.x;
  f.out[1].data = nullptr;
  CHECK_FAILS(f.run(), AOTC_ERR_NULL_POINTER, "output 1", "'s'", "data is NULL");
}

TEST_CASE("buffer too small") {
  Fixture f;
  f.in[0].size_bytes = 23;
  CHECK_FAILS(f.run(), AOTC_ERR_BUFFER_TOO_SMALL, "'x'", "23", "24");
  f.in[0].size_bytes = 0;
  CHECK_FAILS(f.run(), AOTC_ERR_BUFFER_TOO_SMALL, "'x'", "needs 24");
  f.in[0].size_bytes = sizeof f.x;
  f.out[1].size_bytes = 3;
  CHECK_FAILS(f.run(), AOTC_ERR_BUFFER_TOO_SMALL, "output 1", "'s'", "needs 4");
}

TEST_CASE("failed runs do not write outputs") {
  Fixture f;
  for (float& v : f.y) v = 42.0f;
  f.in[1].dims = nullptr;
  CHECK(f.run() == AOTC_ERR_NULL_POINTER);
  for (const float v : f.y) CHECK(v == 42.0f);
}

TEST_CASE("an exception inside the model becomes AOTC_ERR_INTERNAL") {
  Fixture f;
  f.ids[0] = -777;  // the fixture's sentinel
  CHECK_FAILS(f.run(), AOTC_ERR_INTERNAL, "exception");
  f.ids[0] = 1;
  CHECK(f.run() == AOTC_OK);  // the context is still usable
  CHECK(f.results_correct());
}

TEST_CASE("4 threads, one shared model, one context each with num_threads=2") {
  aotc_model* model = nullptr;
  REQUIRE(api().model_create(&model) == AOTC_OK);
  constexpr int kThreads = 4;
  constexpr int kRuns = 300;
  std::atomic<int> failures{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      aotc_context_options options{};
      options.num_threads = 2;
      aotc_context* context = nullptr;
      if (api().context_create(model, &options, &context) != AOTC_OK) {
        ++failures;
        return;
      }
      const int64_t x_dims[2] = {2, 3}, ids_dims[1] = {4}, s_dims[1] = {1};
      for (int r = 0; r < kRuns; ++r) {
        float x[6], y[6] = {}, s[1] = {};
        int64_t ids[4];
        for (int i = 0; i < 6; ++i) x[i] = static_cast<float>(t * 1000 + r * 10 + i);
        for (int i = 0; i < 4; ++i) ids[i] = t * 100000 + r * 100 + i;
        const aotc_tensor in[2] = {Fixture::tensor(x, AOTC_DTYPE_FLOAT32, 2, x_dims, sizeof x),
                                   Fixture::tensor(ids, AOTC_DTYPE_INT64, 1, ids_dims, sizeof ids)};
        aotc_tensor out[2] = {Fixture::tensor(y, AOTC_DTYPE_FLOAT32, 2, x_dims, sizeof y),
                              Fixture::tensor(s, AOTC_DTYPE_FLOAT32, 1, s_dims, sizeof s)};
        // Every few runs, fail on purpose: errors stay on this thread.
        if (r % 7 == 3) {
          if (api().run(model, context, in, 1, out, 2) != AOTC_ERR_WRONG_COUNT ||
              std::strstr(api().last_error(), "expected 2 inputs, got 1") == nullptr)
            ++wrong;
          continue;
        }
        if (api().run(model, context, in, 2, out, 2) != AOTC_OK) {
          ++failures;
          continue;
        }
        for (int i = 0; i < 6; ++i)
          if (y[i] != x[i] * 2.0f + 1.0f) ++wrong;
        if (s[0] != static_cast<float>(ids[0] + ids[1] + ids[2] + ids[3])) ++wrong;
      }
      if (api().context_destroy(context) != AOTC_OK) ++failures;
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(failures.load() == 0);
  CHECK(wrong.load() == 0);
  CHECK(api().model_destroy(model) == AOTC_OK);
}

// ---- minor version 1: external weights ----------------------------------------------------

namespace {

// The fixture's weights: {scale, bias} padded to 64 bytes (fixture_model.cpp).
std::vector<unsigned char> fixture_weights(float scale = 2.0f) {
  float w[16] = {scale, 1.0f};
  std::vector<unsigned char> bytes(sizeof w);
  std::memcpy(bytes.data(), w, sizeof w);
  return bytes;
}

// The checksum as aotc.h documents it, written independently of the runtime.
uint64_t documented_checksum(const std::vector<unsigned char>& bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t w = 0;
    for (size_t b = 0; b < 8 && i + b < bytes.size(); ++b) w |= uint64_t{bytes[i + b]} << (8 * b);
    h = (h ^ w) * 0x100000001b3ULL;
  }
  return h;
}

std::string hex(uint64_t v) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}

// A directory of its own for the files of one test, removed afterwards.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "aotc-abi-test-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::vector<unsigned char>& bytes) const {
    const std::string file = (path / name).string();
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
    return file;
  }
};

// A 64-byte aligned block with `offset` extra bytes before the returned pointer and a
// guard of 0xab bytes after `size` bytes.
struct Aligned {
  std::vector<unsigned char> storage;
  unsigned char* data = nullptr;
  size_t size = 0;
  static constexpr size_t kGuard = 64;
  explicit Aligned(size_t bytes, size_t offset = 0)
      : storage(bytes + offset + kGuard + 128, 0xab), size(bytes) {
    const auto address = reinterpret_cast<uintptr_t>(storage.data());
    data = storage.data() + (64 - address % 64) % 64 + offset;
    std::memset(data, 0, bytes);
  }
  bool guard_intact() const {
    for (size_t i = 0; i < kGuard; ++i)
      if (data[size + i] != 0xab) return false;
    return true;
  }
};

bool mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(path) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("minor version and weights info") {
  CHECK(api().abi_minor_version() == AOTC_ABI_MINOR_VERSION);
  CHECK(ext().abi_minor_version() == AOTC_ABI_MINOR_VERSION);
  const uint64_t checksum = documented_checksum(fixture_weights());
  for (const bool external : {false, true}) {
    CAPTURE(external);
    const Api& lib = external ? ext() : api();
    aotc_weights_info info;
    std::memset(&info, 0xcd, sizeof info);  // every field must be written
    REQUIRE(lib.model_weights_info(&info) == AOTC_OK);
    CHECK(info.location == (external ? AOTC_WEIGHTS_EXTERNAL : AOTC_WEIGHTS_EMBEDDED));
    CHECK(info.alignment == AOTC_MEMORY_ALIGNMENT);
    CHECK(info.size_bytes == 64);
    CHECK(info.checksum == checksum);
    for (const uint64_t r : info.reserved) CHECK(r == 0);
    CHECK_FAILS_IN(lib, lib.model_weights_info(nullptr), AOTC_ERR_NULL_POINTER, "out_info");
  }
}

TEST_CASE("create_v2 on a model with embedded weights") {
  aotc_model* model = nullptr;
  REQUIRE(api().model_create_v2(nullptr, &model) == AOTC_OK);  // NULL options: like aotc_model_create
  CHECK(api().model_destroy(model) == AOTC_OK);
  aotc_model_options options{};
  REQUIRE(api().model_create_v2(&options, &model) == AOTC_OK);
  {
    Fixture f(api(), model, aotc_context_options{});
    REQUIRE(f.run() == AOTC_OK);
    CHECK(f.results_correct());
  }
  CHECK_FAILS(api().model_create_v2(&options, nullptr), AOTC_ERR_NULL_POINTER, "out_model");
  TempDir dir;
  const std::string path = dir.write("w.weights", fixture_weights());
  options.weights_path = path.c_str();
  model = reinterpret_cast<aotc_model*>(&options);
  CHECK_FAILS(api().model_create_v2(&options, &model), AOTC_ERR_INVALID_ARGUMENT, "embedded", "weights_path");
  CHECK(model == nullptr);
  options = {};
  options.reserved[4] = 1;
  CHECK_FAILS(api().model_create_v2(&options, &model), AOTC_ERR_INVALID_ARGUMENT, "reserved");
}

TEST_CASE("a model with external weights needs create_v2 and its weights") {
  aotc_model* model = reinterpret_cast<aotc_model*>(&model);
  CHECK_FAILS_IN(ext(), ext().model_create(&model), AOTC_ERR_INVALID_ARGUMENT, "aotc_model_create_v2",
                 "weights_path", "64 bytes");
  CHECK(model == nullptr);
  CHECK_FAILS_IN(ext(), ext().model_create_v2(nullptr, &model), AOTC_ERR_INVALID_ARGUMENT,
                 "aotc_model_create_v2", "weights_path");
  aotc_model_options options{};
  CHECK_FAILS_IN(ext(), ext().model_create_v2(&options, &model), AOTC_ERR_INVALID_ARGUMENT, "weights_path");
  options.weights_size = 64;
  CHECK_FAILS_IN(ext(), ext().model_create_v2(&options, &model), AOTC_ERR_INVALID_ARGUMENT,
                 "weights_data is NULL", "64");
  CHECK(model == nullptr);
}

TEST_CASE("create_v2 with a weights file") {
  TempDir dir;
  const std::string path = dir.write("model.weights", fixture_weights());
  aotc_model_options options{};
  options.weights_path = path.c_str();
  aotc_model* model = nullptr;
  REQUIRE(ext().model_create_v2(&options, &model) == AOTC_OK);
  CHECK(mapped(path));  // mapped, not read into memory
  for (const int threads : {1, 2, 3}) {
    CAPTURE(threads);
    aotc_context_options context_options{};
    context_options.num_threads = threads;
    Fixture f(ext(), model, context_options);
    REQUIRE(f.run() == AOTC_OK);
    CHECK(f.results_correct());
    f.model = nullptr;  // shared by the three rounds: destroyed below
  }
  CHECK(ext().model_destroy(model) == AOTC_OK);
  CHECK_FALSE(mapped(path));  // unmapped at destroy
}

TEST_CASE("create_v2 with weights in a caller's buffer, used in place") {
  Aligned buffer(64);
  const std::vector<unsigned char> weights = fixture_weights();
  std::memcpy(buffer.data, weights.data(), weights.size());
  aotc_model_options options{};
  options.weights_data = buffer.data;
  options.weights_size = 64;
  aotc_model* model = nullptr;
  REQUIRE(ext().model_create_v2(&options, &model) == AOTC_OK);
  Fixture f(ext(), model, aotc_context_options{});
  REQUIRE(f.run() == AOTC_OK);
  CHECK(f.results_correct());
  // Not a copy: a change to the buffer (which callers must not make) shows in the next run.
  const float three = 3.0f;
  std::memcpy(buffer.data, &three, sizeof three);
  REQUIRE(f.run() == AOTC_OK);
  CHECK(f.results_correct(3.0f));
  std::memcpy(buffer.data, weights.data(), weights.size());
  CHECK(buffer.guard_intact());
}

TEST_CASE("create_v2: wrong, missing and misplaced weights are clear errors") {
  TempDir dir;
  const std::string want = hex(documented_checksum(fixture_weights()));
  aotc_model* model = reinterpret_cast<aotc_model*>(&dir);
  const auto with_file = [&](const std::string& path) {
    aotc_model_options options{};
    options.weights_path = path.c_str();
    return ext().model_create_v2(&options, &model);
  };
  const auto with_buffer = [&](const void* data, uint64_t size) {
    aotc_model_options options{};
    options.weights_data = data;
    options.weights_size = size;
    return ext().model_create_v2(&options, &model);
  };

  SUBCASE("wrong checksum") {
    const std::vector<unsigned char> other = fixture_weights(2.5f);
    const std::string path = dir.write("other.weights", other);
    CHECK_FAILS_IN(ext(), with_file(path), AOTC_ERR_INVALID_ARGUMENT, path, "checksum", "expected " + want,
                   "got " + hex(documented_checksum(other)));
    Aligned buffer(64);
    std::memcpy(buffer.data, other.data(), other.size());
    CHECK_FAILS_IN(ext(), with_buffer(buffer.data, 64), AOTC_ERR_INVALID_ARGUMENT, "weights_data", "checksum",
                   "expected " + want);
  }
  SUBCASE("wrong size") {
    std::vector<unsigned char> short_weights = fixture_weights();
    short_weights.resize(60);
    const std::string path = dir.write("short.weights", short_weights);
    CHECK_FAILS_IN(ext(), with_file(path), AOTC_ERR_INVALID_ARGUMENT, path, "expected 64 bytes", "got 60");
    std::vector<unsigned char> long_weights = fixture_weights();
    long_weights.resize(128);
    const std::string long_path = dir.write("long.weights", long_weights);
    CHECK_FAILS_IN(ext(), with_file(long_path), AOTC_ERR_INVALID_ARGUMENT, long_path, "expected 64 bytes",
                   "got 128");
    const std::string empty = dir.write("empty.weights", {});
    CHECK_FAILS_IN(ext(), with_file(empty), AOTC_ERR_INVALID_ARGUMENT, empty, "expected 64 bytes", "got 0");
    Aligned buffer(64);
    std::memcpy(buffer.data, fixture_weights().data(), 64);
    CHECK_FAILS_IN(ext(), with_buffer(buffer.data, 32), AOTC_ERR_INVALID_ARGUMENT, "weights_data",
                   "expected 64 bytes", "got 32");
  }
  SUBCASE("missing file, a directory, an empty path") {
    const std::string missing = (dir.path / "missing.weights").string();
    CHECK_FAILS_IN(ext(), with_file(missing), AOTC_ERR_SYSTEM, missing, "No such file");
    CHECK_FAILS_IN(ext(), with_file(dir.path.string()), AOTC_ERR_INVALID_ARGUMENT, dir.path.string(),
                   "not a regular file");
    CHECK_FAILS_IN(ext(), with_file(""), AOTC_ERR_SYSTEM, "cannot open weights file ''");
  }
  SUBCASE("misaligned buffer") {
    for (const size_t offset : {size_t{1}, size_t{4}, size_t{8}, size_t{32}}) {
      CAPTURE(offset);
      Aligned buffer(64, offset);
      std::memcpy(buffer.data, fixture_weights().data(), 64);
      CHECK_FAILS_IN(ext(), with_buffer(buffer.data, 64), AOTC_ERR_INVALID_ARGUMENT, "weights_data",
                     "not 64-byte aligned");
    }
  }
  SUBCASE("both a file and a buffer, a size without a buffer, reserved fields") {
    Aligned buffer(64);
    std::memcpy(buffer.data, fixture_weights().data(), 64);
    const std::string path = dir.write("model.weights", fixture_weights());
    aotc_model_options options{};
    options.weights_path = path.c_str();
    options.weights_data = buffer.data;
    options.weights_size = 64;
    CHECK_FAILS_IN(ext(), ext().model_create_v2(&options, &model), AOTC_ERR_INVALID_ARGUMENT, "not both");
    options.weights_data = nullptr;
    CHECK_FAILS_IN(ext(), ext().model_create_v2(&options, &model), AOTC_ERR_INVALID_ARGUMENT, "not both");
    options.weights_size = 0;
    options.reserved[0] = 7;
    CHECK_FAILS_IN(ext(), ext().model_create_v2(&options, &model), AOTC_ERR_INVALID_ARGUMENT, "reserved");
  }
  CHECK(model == nullptr);                 // cleared on every failure
  CHECK_FALSE(mapped(dir.path.string()));  // and nothing left mapped
}

// ---- minor version 3: versions ------------------------------------------------------------

TEST_CASE("runtime and compiler versions") {
  const std::string runtime = api().runtime_version();
  // The project's semantic version (tests/abi/meson.build), else at least its form.
  const std::string want = env_or("AOTC_PROJECT_VERSION", "");
  if (!want.empty())
    CHECK(runtime == want);
  else
    CHECK(std::regex_match(runtime, std::regex(R"(\d+\.\d+\.\d+)")));
  CHECK(std::string(ext().runtime_version()) == runtime);
  // What the model code recorded: the fixture's own string; "" where it recorded none.
  CHECK(std::string(api().compiler_version()) == "0.1.0 (fixture)");
  CHECK(ext().compiler_version() != nullptr);
  CHECK(std::string(ext().compiler_version()).empty());
  // Static strings: the same pointer on every call.
  CHECK(api().runtime_version() == api().runtime_version());
  CHECK(api().compiler_version() == api().compiler_version());
}

// ---- minor version 4: dynamic dims, on a model whose dims are all fixed ----------------------

TEST_CASE("dim ranges and output dims of a fixed-shape model") {
  Fixture f;
  aotc_dim_range range{};
  REQUIRE(api().model_input_dim_range(f.model, 0, 1, &range) == AOTC_OK);
  CHECK(range.name == nullptr);
  CHECK(range.min == 3);
  CHECK(range.max == 3);
  CHECK(range.multiple_of == 1);
  REQUIRE(api().model_output_dim_range(f.model, 0, 0, &range) == AOTC_OK);
  CHECK(range.min == 2);
  CHECK_FAILS(api().model_input_dim_range(f.model, 0, 2, &range), AOTC_ERR_INVALID_ARGUMENT, "rank 2",
              "dim 2");
  CHECK_FAILS(api().model_input_dim_range(f.model, 9, 0, &range), AOTC_ERR_INVALID_ARGUMENT, "index 9");
  CHECK_FAILS(api().model_input_dim_range(f.model, 0, 0, nullptr), AOTC_ERR_NULL_POINTER, "out_range");
  int64_t dims[2] = {-1, -1};
  REQUIRE(api().model_output_dims(f.model, f.in, 2, 0, dims) == AOTC_OK);
  CHECK(dims[0] == 2);
  CHECK(dims[1] == 3);
  f.x_dims[1] = 4;
  CHECK_FAILS(api().model_output_dims(f.model, f.in, 2, 0, dims), AOTC_ERR_WRONG_SHAPE, "input 0", "[2, 3]");
  f.x_dims[1] = 3;
  CHECK_FAILS(api().model_output_dims(f.model, f.in, 1, 0, dims), AOTC_ERR_WRONG_COUNT, "expected 2 inputs");
  // Before any run: the model's shape; after one, the run's (the same here).
  dims[0] = dims[1] = -1;
  REQUIRE(api().context_output_dims(f.context, 0, dims) == AOTC_OK);
  CHECK(dims[0] == 2);
  CHECK(dims[1] == 3);
  REQUIRE(api().run(f.model, f.context, f.in, 2, f.out, 2) == AOTC_OK);
  REQUIRE(api().context_output_dims(f.context, 1, dims) == AOTC_OK);
  CHECK(dims[0] == 1);
  CHECK_FAILS(api().context_output_dims(f.context, 2, dims), AOTC_ERR_INVALID_ARGUMENT, "index 2");
}

// ---- minor version 1: caller-provided arenas ----------------------------------------------

TEST_CASE("arena requirements") {
  aotc_model* model = nullptr;
  REQUIRE(api().model_create(&model) == AOTC_OK);
  uint64_t arena = 0;
  REQUIRE(api().model_arena_size(model, &arena) == AOTC_OK);
  CHECK(arena == 256);  // the activations only, as before
  // The fixture: 256 bytes of activations, then 128 bytes of scratch per thread.
  for (const int32_t threads : {0, 1, 2, 4, 1024}) {
    CAPTURE(threads);
    uint64_t bytes = 0, alignment = 0;
    REQUIRE(api().model_arena_requirements(model, threads, &bytes, &alignment) == AOTC_OK);
    CHECK(bytes == 256 + 128 * static_cast<uint64_t>(threads ? threads : 1));
    CHECK(alignment == AOTC_MEMORY_ALIGNMENT);
  }
  uint64_t bytes = 0;
  REQUIRE(api().model_arena_requirements(model, 3, &bytes, nullptr) == AOTC_OK);  // alignment optional
  CHECK(bytes == 256 + 3 * 128);
  CHECK_FAILS(api().model_arena_requirements(model, 1, nullptr, nullptr), AOTC_ERR_NULL_POINTER, "out_bytes");
  CHECK_FAILS(api().model_arena_requirements(model, -1, &bytes, nullptr), AOTC_ERR_INVALID_ARGUMENT,
              "num_threads", "-1");
  CHECK_FAILS(api().model_arena_requirements(model, 1025, &bytes, nullptr), AOTC_ERR_INVALID_ARGUMENT,
              "num_threads");
  CHECK_FAILS(api().model_arena_requirements(nullptr, 1, &bytes, nullptr), AOTC_ERR_NULL_POINTER, "model");
  Garbage garbage(0x5a);
  CHECK_FAILS(api().model_arena_requirements(garbage.model(), 1, &bytes, nullptr), AOTC_ERR_INVALID_ARGUMENT,
              "model");
  CHECK(api().model_destroy(model) == AOTC_OK);
}

TEST_CASE("a caller's arena is used in place") {
  for (const int threads : {1, 2, 3}) {
    CAPTURE(threads);
    aotc_model* model = nullptr;
    REQUIRE(api().model_create(&model) == AOTC_OK);
    uint64_t need = 0;
    REQUIRE(api().model_arena_requirements(model, threads, &need, nullptr) == AOTC_OK);
    Aligned arena(need);
    aotc_context_options options{};
    options.num_threads = threads;
    options.arena = arena.data;
    options.arena_size = need;
    {
      Fixture f(api(), model, options);
      for (int round = 0; round < 3; ++round) {
        REQUIRE(f.run() == AOTC_OK);
        CHECK(f.results_correct());
        // The fixture keeps x * scale at the start of its arena: the run used this memory.
        float scaled[6];
        std::memcpy(scaled, arena.data, sizeof scaled);
        for (int i = 0; i < 6; ++i) CHECK(scaled[i] == f.x[i] * 2.0f);
        for (float& v : f.x) v += 1.5f;
      }
      CHECK(arena.guard_intact());  // nothing written past what it asked for
    }  // destroying the context does not free the caller's arena (the vector does)
  }
}

TEST_CASE("a caller's arena: too small, misaligned, NULL with a size") {
  aotc_model* model = nullptr;
  REQUIRE(api().model_create(&model) == AOTC_OK);
  uint64_t need = 0;
  REQUIRE(api().model_arena_requirements(model, 2, &need, nullptr) == AOTC_OK);
  aotc_context* context = reinterpret_cast<aotc_context*>(&need);
  aotc_context_options options{};
  options.num_threads = 2;

  Aligned small(need - 1);
  options.arena = small.data;
  options.arena_size = need - 1;
  CHECK_FAILS(api().context_create(model, &options, &context), AOTC_ERR_BUFFER_TOO_SMALL,
              "arena holds " + std::to_string(need - 1), "needs " + std::to_string(need), "2 thread");
  options.arena_size = 0;
  CHECK_FAILS(api().context_create(model, &options, &context), AOTC_ERR_BUFFER_TOO_SMALL, "arena holds 0");
  // Enough for one thread is not enough for two.
  uint64_t one = 0;
  REQUIRE(api().model_arena_requirements(model, 1, &one, nullptr) == AOTC_OK);
  Aligned for_one(one);
  options.arena = for_one.data;
  options.arena_size = one;
  CHECK_FAILS(api().context_create(model, &options, &context), AOTC_ERR_BUFFER_TOO_SMALL,
              "needs " + std::to_string(need));

  for (const size_t offset : {size_t{1}, size_t{8}, size_t{32}}) {
    CAPTURE(offset);
    Aligned misaligned(need, offset);
    options.arena = misaligned.data;
    options.arena_size = need;
    CHECK_FAILS(api().context_create(model, &options, &context), AOTC_ERR_INVALID_ARGUMENT, "arena",
                "not 64-byte aligned");
  }
  options.arena = nullptr;
  options.arena_size = need;
  CHECK_FAILS(api().context_create(model, &options, &context), AOTC_ERR_INVALID_ARGUMENT, "arena is NULL",
              std::to_string(need));
  options.arena_size = 0;
  // Minor version 5 named the first int32 (cuda_graph_cache), minor version 6 the second
  // (num_dim_limits) and the last word (dim_limits): the third int32 stays reserved.
  options.reserved_i[0] = -1;
  CHECK_FAILS(api().context_create(model, &options, &context), AOTC_ERR_INVALID_ARGUMENT, "reserved");
  options.reserved_i[0] = 0;
  // Dim limits on a model without named dims, or given inconsistently.
  const aotc_dim_limit limit{"N", 1, {0, 0}};
  options.dim_limits = &limit;
  options.num_dim_limits = 1;
  CHECK_FAILS(api().context_create(model, &options, &context), AOTC_ERR_INVALID_ARGUMENT, "no named dims");
  options.num_dim_limits = 0;
  CHECK_FAILS(api().context_create(model, &options, &context), AOTC_ERR_INVALID_ARGUMENT,
              "num_dim_limits is 0");
  options.dim_limits = nullptr;
  options.num_dim_limits = 2;
  CHECK_FAILS(api().context_create(model, &options, &context), AOTC_ERR_NULL_POINTER, "dim_limits is NULL");
  options.num_dim_limits = -1;
  CHECK_FAILS(api().context_create(model, &options, &context), AOTC_ERR_INVALID_ARGUMENT, "num_dim_limits");
  options.num_dim_limits = 0;
  CHECK(context == nullptr);
  // No context was left behind: the model can go.
  CHECK(api().model_destroy(model) == AOTC_OK);
}

TEST_CASE("external weights and a caller's arena together, from many threads") {
  Aligned weights(64);
  std::memcpy(weights.data, fixture_weights().data(), 64);
  aotc_model_options model_options{};
  model_options.weights_data = weights.data;
  model_options.weights_size = 64;
  aotc_model* model = nullptr;
  REQUIRE(ext().model_create_v2(&model_options, &model) == AOTC_OK);
  constexpr int kThreads = 4;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t need = 0;
      if (ext().model_arena_requirements(model, 2, &need, nullptr) != AOTC_OK) {
        ++wrong;
        return;
      }
      Aligned arena(need);
      aotc_context_options options{};
      options.num_threads = 2;
      options.arena = arena.data;
      options.arena_size = need;
      aotc_context* context = nullptr;
      if (ext().context_create(model, &options, &context) != AOTC_OK) {
        ++wrong;
        return;
      }
      const int64_t x_dims[2] = {2, 3}, ids_dims[1] = {4}, s_dims[1] = {1};
      for (int r = 0; r < 100; ++r) {
        float x[6], y[6] = {}, s[1] = {};
        int64_t ids[4] = {t, r, 1, 2};
        for (int i = 0; i < 6; ++i) x[i] = static_cast<float>(t * 100 + r + i);
        const aotc_tensor in[2] = {Fixture::tensor(x, AOTC_DTYPE_FLOAT32, 2, x_dims, sizeof x),
                                   Fixture::tensor(ids, AOTC_DTYPE_INT64, 1, ids_dims, sizeof ids)};
        aotc_tensor out[2] = {Fixture::tensor(y, AOTC_DTYPE_FLOAT32, 2, x_dims, sizeof y),
                              Fixture::tensor(s, AOTC_DTYPE_FLOAT32, 1, s_dims, sizeof s)};
        if (ext().run(model, context, in, 2, out, 2) != AOTC_OK) ++wrong;
        for (int i = 0; i < 6; ++i)
          if (y[i] != x[i] * 2.0f + 1.0f) ++wrong;
      }
      if (ext().context_destroy(context) != AOTC_OK || !arena.guard_intact()) ++wrong;
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(wrong.load() == 0);
  CHECK(ext().model_destroy(model) == AOTC_OK);
}

// ---- what the library exports and links ---------------------------------------------------

namespace {

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a command and returns its stdout; fails the test if it does not exit with 0.
std::string command_output(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE_MESSAGE(pipe != nullptr, "cannot run: ", command);
  std::string out;
  char buffer[4096];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, got);
  const int status = pclose(pipe);
  REQUIRE_MESSAGE(status == 0, "failed (", status, "): ", command);
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  REQUIRE_MESSAGE(file.good(), "cannot read ", path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::set<std::string> all_matches(const std::string& text, const std::regex& pattern) {
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1]);
  return names;
}

}  // namespace

TEST_CASE("the model .so exports exactly the ABI of aotc.h and exports.map") {
  const std::string model = env_or("AOTC_FIXTURE_MODEL", "");
  const std::string nm = env_or("AOTC_NM", "nm");
  const std::string exported_text =
      command_output(shell_quote(nm) + " -D --defined-only " + shell_quote(model));
  // Lines look like "000000000000abcd T aotc_run".
  const std::set<std::string> exported =
      all_matches(exported_text, std::regex(R"(^\S*\s+\S\s+(\S+)\s*$)", std::regex::multiline));

  std::set<std::string> from_header;
  if (const char* header = std::getenv("AOTC_ABI_HEADER"); header && *header)
    from_header = all_matches(read_text(header), std::regex(R"(AOTC_API\s[^;]*?\b(aotc_\w+)\s*\()"));
  else
    MESSAGE("AOTC_ABI_HEADER not set: not comparing with aotc.h");
  std::set<std::string> from_map;
  if (const char* map = std::getenv("AOTC_EXPORTS_MAP"); map && *map)
    from_map = all_matches(read_text(map), std::regex(R"(^\s*(aotc_\w+)\s*;)", std::regex::multiline));
  else
    MESSAGE("AOTC_EXPORTS_MAP not set: not comparing with exports.map");

  CAPTURE(exported_text);
  const std::set<std::string> abi = {
      "aotc_abi_version",
      "aotc_last_error",
      "aotc_status_name",
      "aotc_dtype_size",
      "aotc_dtype_name",
      "aotc_model_create",
      "aotc_model_destroy",
      "aotc_model_num_inputs",
      "aotc_model_num_outputs",
      "aotc_model_input_info",
      "aotc_model_output_info",
      "aotc_model_arena_size",
      "aotc_context_create",
      "aotc_context_destroy",
      "aotc_run",
      // minor version 1
      "aotc_abi_minor_version",
      "aotc_model_create_v2",
      "aotc_model_weights_info",
      "aotc_model_arena_requirements",
      // minor version 2 (CUDA models)
      "aotc_model_device",
      "aotc_context_set_cuda_stream",
      "aotc_context_cuda_stream",
      // minor version 3 (versions)
      "aotc_runtime_version",
      "aotc_compiler_version",
      // minor version 4 (dynamic dims)
      "aotc_model_input_dim_range",
      "aotc_model_output_dim_range",
      "aotc_model_output_dims",
      "aotc_context_output_dims",
      // minor version 6 (contexts for smaller largest sizes)
      "aotc_model_arena_requirements_v2",
  };
  CHECK(exported == abi);
  if (!from_header.empty()) CHECK(from_header == abi);
  if (!from_map.empty()) CHECK(from_map == abi);
  for (const std::string& name : exported) CHECK_MESSAGE(name.rfind("aotc_", 0) == 0, name);
}

TEST_CASE("the model .so needs no LibTorch") {
  const std::string model = env_or("AOTC_FIXTURE_MODEL", "");
  const std::string dynamic =
      command_output(shell_quote(env_or("AOTC_READELF", "readelf")) + " -d " + shell_quote(model));
  CAPTURE(dynamic);
  const std::set<std::string> needed =
      all_matches(dynamic, std::regex(R"(\(NEEDED\)\s+Shared library: \[([^\]]+)\])"));
  CHECK(!needed.empty());  // libc at least: the regex does match readelf's output
  for (const std::string& lib : needed) {
    CAPTURE(lib);
    CHECK(lib.find("torch") == std::string::npos);
    CHECK(lib.find("c10") == std::string::npos);
  }
  CHECK(dynamic.find("TEXTREL") == std::string::npos);  // truly position-independent

  // ldd also lists what the NEEDED libraries pull in. Only names and paths are checked:
  // the load addresses it prints are hex and may well contain "c10".
  const std::string resolved =
      command_output(shell_quote(env_or("AOTC_LDD", "ldd")) + " " + shell_quote(model));
  CAPTURE(resolved);
  const std::regex address(R"(\s*\(0x[0-9a-fA-F]+\))");
  std::istringstream lines(resolved);
  for (std::string line; std::getline(lines, line);) {
    const std::string names = std::regex_replace(line, address, "");
    CAPTURE(names);
    CHECK(names.find("torch") == std::string::npos);
    CHECK(names.find("c10") == std::string::npos);
    CHECK(names.find("not found") == std::string::npos);
  }
}
