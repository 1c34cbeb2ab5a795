// fuzz_abi_run.cpp - libFuzzer target for the input validation of the C ABI
// (runtime/src/abi.cpp), on the hand-written fixture model (tests/abi/fixture_model.cpp:
// inputs x float32[2,3] and ids int64[4], outputs y float32[2,3] and s float32[1]).
//
// The fixture and the runtime sources are linked straight into this program. One model
// and its contexts are created once; each fuzz input is decoded into a sequence of ABI
// calls, playing a careless or hostile C caller: wrong counts, NULL arrays, dtypes that
// are no enumerator at all, negative or huge ranks, wrong dims, NULL data or dims, short
// buffers, another model's context, destroyed-looking objects, bad thread counts,
// reserved fields that are not zero, caller arenas that are too small, misaligned or
// NULL with a size, weights given to a model that embeds its own (aotc_model_create_v2),
// destroying a model under its contexts.
//
// Every buffer handed to the ABI (tensor arrays, dims, data, arenas) is allocated with exactly
// the size the call claims, so ASan catches any read or write past what the caller gave.
// An invalid enum value is stored the way a C caller would store it (its bytes), so UBSan
// catches C++ code that loads it through the enum type. Oracles besides the sanitizers:
//   - aotc_run returns AOTC_OK exactly when the call is valid (AOTC_ERR_INTERNAL when the
//     fixture's trap id -777 is passed), and otherwise a caller-error status with a message;
//   - a failed run leaves the outputs untouched, and no run changes the inputs;
//   - a successful run computes y = x * 2 + 1 and s = float(sum(ids)) exactly;
//   - *_info describes the fixture correctly; names and messages are NUL-terminated.
//
// Built by tests/fuzz/meson.build with clang++ -fsanitize=fuzzer,address,undefined.
#include <aotc/aotc.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

static_assert(sizeof(aotc_dtype) == sizeof(int32_t) && sizeof(aotc_status) == sizeof(int32_t));

constexpr int64_t kThrowSentinel = -777;  // the fixture throws on ids[0] == this

struct Want {
  const char* name;
  int32_t dtype;
  int32_t rank;
  int64_t dims[2];
  uint64_t bytes;
};
constexpr Want kWantIn[2] = {{"x", AOTC_DTYPE_FLOAT32, 2, {2, 3}, 24}, {"ids", AOTC_DTYPE_INT64, 1, {4}, 32}};
constexpr Want kWantOut[2] = {{"y", AOTC_DTYPE_FLOAT32, 2, {2, 3}, 24}, {"s", AOTC_DTYPE_FLOAT32, 1, {1}, 4}};

[[noreturn]] void bug(const char* what, long long detail = 0) {
  std::fprintf(stderr, "fuzz_abi_run: invariant violated: %s (%lld); last error: '%s'\n", what, detail,
               aotc_last_error());
  std::abort();
}

// A C caller may put any int into an enum-typed field or argument. Build such values from
// their bytes, without loading them as the enum type here.
__attribute__((no_sanitize("enum"))) aotc_dtype dtype_from_bits(int32_t v) {
  aotc_dtype d;
  std::memcpy(&d, &v, sizeof d);
  return d;
}
__attribute__((no_sanitize("enum"))) aotc_status status_from_bits(int32_t v) {
  aotc_status s;
  std::memcpy(&s, &v, sizeof s);
  return s;
}
int32_t bits(const aotc_dtype& d) {
  int32_t v;
  std::memcpy(&v, &d, sizeof v);
  return v;
}

void check_last_error_set() {
  const char* e = aotc_last_error();
  if (!e) bug("aotc_last_error() is NULL");
  const size_t n = std::strlen(e);  // ASan: must be NUL-terminated
  if (n == 0) bug("a failed call left no message");
}

bool is_caller_error(aotc_status s) {
  switch (static_cast<int>(s)) {
    case AOTC_ERR_NULL_POINTER:
    case AOTC_ERR_INVALID_ARGUMENT:
    case AOTC_ERR_WRONG_COUNT:
    case AOTC_ERR_WRONG_DTYPE:
    case AOTC_ERR_WRONG_SHAPE:
    case AOTC_ERR_BUFFER_TOO_SMALL:
    case AOTC_ERR_WRONG_MODEL:
      return true;
    default:
      return false;
  }
}

// Objects that were never (or are no longer) live: 64 bytes of a fixed pattern, never
// the magic of a real object (the fuzzer does not control their contents).
alignas(64) unsigned char g_fake_object[64];

struct Globals {
  aotc_model* model = nullptr;
  aotc_model* other_model = nullptr;  // a second model of the same library
  aotc_context* ctx1 = nullptr;       // 1 thread
  aotc_context* ctx2 = nullptr;       // 2 threads: the run goes through a worker
  aotc_context* other_ctx = nullptr;  // belongs to other_model
};
Globals g;

void init_once() {
  if (g.model) return;
  std::memset(g_fake_object, 0xa5, sizeof g_fake_object);
  aotc_context_options two = {};
  two.num_threads = 2;
  if (aotc_model_create(&g.model) != AOTC_OK || aotc_model_create(&g.other_model) != AOTC_OK ||
      aotc_context_create(g.model, nullptr, &g.ctx1) != AOTC_OK ||
      aotc_context_create(g.model, &two, &g.ctx2) != AOTC_OK ||
      aotc_context_create(g.other_model, nullptr, &g.other_ctx) != AOTC_OK)
    bug("cannot create the fixture model and its contexts");
}

// ---- model and context arguments ----------------------------------------------------

enum class Who { kGood, kNull, kOther, kFake };

Who pick_who(FuzzedDataProvider& in) {
  // Mostly the right object, so that the deeper checks are reached.
  const uint8_t v = in.ConsumeIntegral<uint8_t>();
  if (v < 200) return Who::kGood;
  return static_cast<Who>(1 + v % 3);
}

aotc_model* model_for(Who w) {
  switch (w) {
    case Who::kGood:
      return g.model;
    case Who::kNull:
      return nullptr;
    case Who::kOther:
      return g.other_model;
    case Who::kFake:
      return reinterpret_cast<aotc_model*>(g_fake_object);
  }
  return nullptr;
}

// ---- tensors ------------------------------------------------------------------------

// One caller tensor with its own exactly-sized buffers.
struct Tensor {
  aotc_tensor t = {};
  void* data = nullptr;               // malloc'd, exactly t.size_bytes bytes (or NULL)
  int64_t* dims = nullptr;            // malloc'd, exactly the entries the rank promises (or NULL)
  std::vector<unsigned char> before;  // data contents before the run
  bool valid = false;                 // what the ABI must accept
  Tensor() = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor() {
    std::free(data);
    std::free(dims);
  }
};

constexpr uint64_t kMaxBuffer = 1 << 12;

void make_tensor(FuzzedDataProvider& in, const Want& want, bool fill, Tensor& out) {
  // Which parts are wrong: one bit per part, mostly all right.
  const uint8_t wrong = in.ConsumeBool() ? in.ConsumeIntegral<uint8_t>() : 0;

  int32_t dtype = want.dtype;
  if (wrong & 1)
    dtype = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(-1, 8) : in.ConsumeIntegral<int32_t>();
  out.t.dtype = dtype_from_bits(dtype);

  int32_t rank = want.rank;
  if (wrong & 2)
    rank = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(-2, 10) : in.ConsumeIntegral<int32_t>();
  out.t.rank = rank;

  bool dims_ok = true;
  if (!(wrong & 4) || in.ConsumeBool()) {
    // A dims array of exactly the entries the rank promises (at most 64: a caller with
    // rank 2^31 cannot have that many, and the ABI must not read any for rank > 8).
    const int64_t entries = rank < 0 ? 0 : (rank > 64 ? 64 : rank);
    out.dims =
        static_cast<int64_t*>(std::malloc(static_cast<size_t>(entries) * sizeof(int64_t) + (entries == 0)));
    for (int64_t d = 0; d < entries; ++d) {
      int64_t v = d < want.rank ? want.dims[d] : 1;
      if ((wrong & 8) && in.ConsumeBool()) v = in.ConsumeIntegral<int64_t>();
      out.dims[d] = v;
      if (d < want.rank && v != want.dims[d]) dims_ok = false;
    }
    out.t.dims = out.dims;
  } else {
    out.t.dims = nullptr;
    dims_ok = rank == 0;
  }

  uint64_t size = want.bytes;
  if (wrong & 16) {
    switch (in.ConsumeIntegralInRange<int>(0, 4)) {
      case 0:
        size = 0;
        break;
      case 1:
        size = want.bytes - 1;
        break;
      case 2:
        size = want.bytes + in.ConsumeIntegralInRange<uint64_t>(1, 64);
        break;
      case 3:
        size = in.ConsumeIntegralInRange<uint64_t>(0, kMaxBuffer);
        break;
      default:  // a claim with no buffer behind it (data is then NULL)
        size = in.ConsumeIntegral<uint64_t>();
        break;
    }
  }
  out.t.size_bytes = size;
  const bool null_data = (wrong & 32) || size > kMaxBuffer;
  if (!null_data) {
    out.data = std::malloc(size ? size : 1);
    // Input contents come from the fuzz input too (the fixture's trap id among them).
    std::memset(out.data, 0, size);
    if (fill) {
      const std::vector<uint8_t> bytes = in.ConsumeBytes<uint8_t>(size);
      if (!bytes.empty()) std::memcpy(out.data, bytes.data(), bytes.size());
    }
    out.before.assign(static_cast<unsigned char*>(out.data), static_cast<unsigned char*>(out.data) + size);
  }
  out.t.data = out.data;
  if ((wrong & 64) && in.ConsumeBool()) out.t.reserved[0] = in.ConsumeIntegral<uint64_t>();  // ignored today

  out.valid =
      dtype == want.dtype && rank == want.rank && dims_ok && out.t.data != nullptr && size >= want.bytes;
}

// An array of exactly `count` tensors (or NULL): each entry is checked against the
// model's input or output of the same index when there is one.
struct TensorArray {
  std::vector<Tensor> owned;
  aotc_tensor* array = nullptr;  // malloc'd, exactly count entries
  ~TensorArray() { std::free(array); }
};

size_t pick_count(FuzzedDataProvider& in) {
  const uint8_t v = in.ConsumeIntegral<uint8_t>();
  if (v < 200) return 2;
  if (v < 250) return v % 4;  // 0..3
  return in.ConsumeBool() ? SIZE_MAX : static_cast<size_t>(in.ConsumeIntegral<uint32_t>());
}

void make_array(FuzzedDataProvider& in, size_t count, const Want* want, bool fill, TensorArray& out,
                bool& all_valid) {
  if (in.ConsumeIntegral<uint8_t>() >= 250) {  // a NULL array: never valid, as the count must be 2
    all_valid = false;
    return;
  }
  const size_t n = count <= 4 ? count : 4;  // a count above 4 is a lie; the ABI must reject it first
  out.owned = std::vector<Tensor>(n);
  out.array = static_cast<aotc_tensor*>(std::malloc(n * sizeof(aotc_tensor) + (n == 0)));
  for (size_t i = 0; i < n; ++i) {
    make_tensor(in, want[i < 2 ? i : 1], fill, out.owned[i]);
    out.array[i] = out.owned[i].t;
    if (i >= 2) out.owned[i].valid = false;
    all_valid = all_valid && out.owned[i].valid;
  }
}

bool unchanged(const Tensor& t) {
  return !t.data || t.before.empty() || std::memcmp(t.data, t.before.data(), t.before.size()) == 0;
}

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

void do_run(FuzzedDataProvider& in) {
  const Who who = pick_who(in);
  aotc_model* model = model_for(who);
  aotc_context* ctx = g.ctx1;
  switch (in.ConsumeIntegral<uint8_t>() % 8) {
    case 0:
      ctx = g.ctx2;
      break;
    case 1:
      ctx = nullptr;
      break;
    case 2:
      ctx = g.other_ctx;
      break;
    case 3:
      ctx = reinterpret_cast<aotc_context*>(g_fake_object);
      break;
    default:
      break;
  }
  const size_t num_in = pick_count(in), num_out = pick_count(in);
  const bool pair_ok =
      (who == Who::kGood && (ctx == g.ctx1 || ctx == g.ctx2)) || (who == Who::kOther && ctx == g.other_ctx);
  bool valid = pair_ok && num_in == 2 && num_out == 2;
  TensorArray ins, outs;
  make_array(in, num_in, kWantIn, true, ins, valid);
  make_array(in, num_out, kWantOut, false, outs, valid);
  for (Tensor& t : outs.owned)  // a recognisable pattern: a failed run must not touch it
    if (t.data) std::memset(t.data, 0x5a, t.t.size_bytes), t.before.assign(t.t.size_bytes, 0x5a);

  const aotc_status s = aotc_run(model, ctx, ins.array, num_in, outs.array, num_out);

  for (const Tensor& t : ins.owned)
    if (!unchanged(t)) bug("aotc_run changed an input");
  int64_t first_id = 0;
  if (valid) std::memcpy(&first_id, ins.owned[1].data, sizeof first_id);
  if (valid && first_id == kThrowSentinel) {
    if (s != AOTC_ERR_INTERNAL) bug("the fixture's exception did not become AOTC_ERR_INTERNAL", s);
    check_last_error_set();
    return;
  }
  if (valid != (s == AOTC_OK)) bug(valid ? "a valid run failed" : "an invalid run succeeded", s);
  if (s != AOTC_OK) {
    if (!is_caller_error(s)) bug("an invalid run failed with a status that is no caller error", s);
    check_last_error_set();
    for (const Tensor& t : outs.owned)
      if (!unchanged(t)) bug("a failed run wrote to an output");
    return;
  }
  // The fixture's arithmetic, recomputed.
  const auto* x = static_cast<const float*>(ins.owned[0].data);
  const auto* ids = static_cast<const int64_t*>(ins.owned[1].data);
  const auto* y = static_cast<const float*>(outs.owned[0].data);
  const auto* sum = static_cast<const float*>(outs.owned[1].data);
  for (int i = 0; i < 6; ++i)
    if (!same_float(y[i], x[i] * 2.0f + 1.0f)) bug("wrong y", i);
  uint64_t total = 0;
  for (int i = 0; i < 4; ++i) total += static_cast<uint64_t>(ids[i]);
  if (!same_float(sum[0], static_cast<float>(static_cast<int64_t>(total)))) bug("wrong s");
  // Bytes beyond what the model writes stay as they were.
  for (const Tensor& t : outs.owned)
    for (size_t b = (&t == &outs.owned[0] ? 24 : 4); b < t.before.size(); ++b)
      if (static_cast<unsigned char*>(t.data)[b] != 0x5a) bug("a run wrote past the output's dense size");
}

void do_info(FuzzedDataProvider& in) {
  const Who who = pick_who(in);
  const bool output = in.ConsumeBool();
  const uint8_t v = in.ConsumeIntegral<uint8_t>();
  const size_t index = v < 200 ? v % 3 : in.ConsumeIntegral<size_t>();
  const bool null_out = in.ConsumeIntegral<uint8_t>() >= 240;
  aotc_tensor_info info;
  std::memset(&info, 0xcc, sizeof info);
  const aotc_model* model = model_for(who);
  const aotc_status s = output ? aotc_model_output_info(model, index, null_out ? nullptr : &info)
                               : aotc_model_input_info(model, index, null_out ? nullptr : &info);
  const bool valid = (who == Who::kGood || who == Who::kOther) && !null_out && index < 2;
  if (valid != (s == AOTC_OK)) bug("*_info: wrong status", s);
  if (s != AOTC_OK) {
    if (!is_caller_error(s)) bug("*_info: status is no caller error", s);
    check_last_error_set();
    return;
  }
  const Want& want = (output ? kWantOut : kWantIn)[index];
  if (!info.name || std::strcmp(info.name, want.name) != 0) bug("*_info: wrong name");
  if (bits(info.dtype) != want.dtype || info.rank != want.rank || !info.dims)
    bug("*_info: wrong dtype or rank");
  for (int d = 0; d < want.rank; ++d)
    if (info.dims[d] != want.dims[d]) bug("*_info: wrong dims");
  if (info.size_bytes != want.bytes) bug("*_info: wrong size_bytes");
  for (uint64_t r : info.reserved)
    if (r != 0) bug("*_info: reserved fields are not zero");
}

void do_counts(FuzzedDataProvider& in) {
  const Who who = pick_who(in);
  const bool null_out = in.ConsumeIntegral<uint8_t>() >= 240;
  const aotc_model* model = model_for(who);
  size_t count = 0;
  uint64_t arena = 0;
  aotc_status s = AOTC_OK;
  const int which = in.ConsumeIntegralInRange<int>(0, 2);
  if (which == 0) s = aotc_model_num_inputs(model, null_out ? nullptr : &count);
  if (which == 1) s = aotc_model_num_outputs(model, null_out ? nullptr : &count);
  if (which == 2) s = aotc_model_arena_size(model, null_out ? nullptr : &arena);
  const bool valid = (who == Who::kGood || who == Who::kOther) && !null_out;
  if (valid != (s == AOTC_OK)) bug("counts: wrong status", s);
  if (s != AOTC_OK) {
    if (!is_caller_error(s)) bug("counts: status is no caller error", s);
    check_last_error_set();
  } else if (which < 2 ? count != 2 : arena == 0) {
    bug("counts: wrong value");
  }
}

void do_names(FuzzedDataProvider& in) {
  const int32_t v =
      in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(-2, 32) : in.ConsumeIntegral<int32_t>();
  const size_t size = aotc_dtype_size(dtype_from_bits(v));
  const char* name = aotc_dtype_name(dtype_from_bits(v));
  if (!name || std::strlen(name) == 0) bug("aotc_dtype_name: NULL or empty");
  const bool known = v >= AOTC_DTYPE_FLOAT32 && v <= AOTC_DTYPE_BOOL;
  if (known != (size != 0) || known != (std::strcmp(name, "unknown") != 0)) bug("dtype size/name", v);
  const char* status = aotc_status_name(status_from_bits(v));
  if (!status || std::strncmp(status, "AOTC_", 5) != 0) bug("aotc_status_name", v);
}

// A valid run on ctx, from fixed data: a context made in any legal way must work.
void check_runs(aotc_model* model, aotc_context* ctx) {
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6];
  int64_t ids[4] = {1, 2, 3, 4};
  float sum[1];
  const int64_t dx[2] = {2, 3}, di[1] = {4}, ds[1] = {1};
  const aotc_tensor ins[2] = {{x, AOTC_DTYPE_FLOAT32, 2, dx, sizeof x, AOTC_MEMORY_HOST, {}},
                              {ids, AOTC_DTYPE_INT64, 1, di, sizeof ids, AOTC_MEMORY_HOST, {}}};
  aotc_tensor outs[2] = {{y, AOTC_DTYPE_FLOAT32, 2, dx, sizeof y, AOTC_MEMORY_HOST, {}},
                         {sum, AOTC_DTYPE_FLOAT32, 1, ds, sizeof sum, AOTC_MEMORY_HOST, {}}};
  if (aotc_run(model, ctx, ins, 2, outs, 2) != AOTC_OK || y[5] != 13.0f || sum[0] != 10.0f)
    bug("a freshly created context does not run");
}

// Frees memory handed to the ABI only after the object using it is gone.
struct Aligned {
  void* block = nullptr;
  ~Aligned() { std::free(block); }
};

// aotc_context_create with fuzzed options, including a caller's arena of exactly the
// size the options claim (ASan catches any use past it), then a run, then destroy.
void do_context(FuzzedDataProvider& in) {
  const Who who = pick_who(in);
  aotc_model* model = model_for(who);
  const uint8_t how = in.ConsumeIntegral<uint8_t>();
  const bool null_options = how & 1;
  const bool null_out = how >= 248;
  aotc_context_options options = {};
  int32_t threads = (how & 2) ? in.ConsumeIntegral<int32_t>() : in.ConsumeIntegralInRange<int32_t>(-1, 3);
  // Valid thread counts above 3 cost a thread start each; keep them cheap.
  if (threads > 3 && threads <= 1024) threads = 1 + threads % 3;
  options.num_threads = threads;
  bool reserved_zero = true;
  if (how & 4) {
    const int which = in.ConsumeIntegralInRange<int>(0, 4);
    const uint64_t v = in.ConsumeIntegral<uint64_t>();
    if (which == 0)  // minor version 5 named the first int32: a CPU model ignores all but a negative one
      options.cuda_graph_cache = static_cast<int32_t>(v);
    else if (which == 1)  // minor version 6 named the second: limits on a model without named dims fail
      options.num_dim_limits = static_cast<int32_t>(v);
    else if (which == 2)
      options.reserved_i[0] = static_cast<int32_t>(v);
    else if (which == 3)  // minor version 6 named the last word: likewise
      options.dim_limits = reinterpret_cast<const aotc_dim_limit*>(static_cast<uintptr_t>(v));
    else  // minor version 2 named the word: a stream on a CPU model fails like a reserved word
      options.cuda_stream = reinterpret_cast<void*>(static_cast<uintptr_t>(v));
    // The pointers (3, 4) are whole words: a null low half with high bits set is no null.
    reserved_zero = which == 0                 ? static_cast<int32_t>(v) >= 0
                    : which == 3 || which == 4 ? v == 0
                                               : static_cast<int32_t>(v) == 0;
  }
  // The arena the model needs for this thread count (as a caller would ask for it).
  uint64_t need = 0, alignment = 0;
  const bool threads_ok = threads >= 0 && threads <= 1024;
  if (threads_ok && (aotc_model_arena_requirements(g.model, threads, &need, &alignment) != AOTC_OK ||
                     alignment != AOTC_MEMORY_ALIGNMENT))
    bug("aotc_model_arena_requirements failed on a valid call");
  Aligned arena;
  bool arena_ok = true;
  if (how & 8) {
    uint64_t size = need;
    switch (in.ConsumeIntegralInRange<int>(0, 3)) {
      case 0:
        break;
      case 1:
        size = need ? need - 1 : 0;
        break;
      case 2:
        size = need + in.ConsumeIntegralInRange<uint64_t>(1, 256);
        break;
      default:
        size = in.ConsumeIntegralInRange<uint64_t>(0, kMaxBuffer);
        break;
    }
    const bool misaligned = in.ConsumeIntegral<uint8_t>() >= 224;
    const bool null_arena = in.ConsumeIntegral<uint8_t>() >= 240;
    if (null_arena) {
      options.arena = nullptr;
      options.arena_size = size;
      arena_ok = size == 0;
    } else {
      // Exactly `size` usable bytes at the address given (+1 when misaligned).
      if (posix_memalign(&arena.block, 64, size + (misaligned ? 1 : 0) + (size == 0)) != 0) return;
      options.arena = static_cast<unsigned char*>(arena.block) + (misaligned ? 1 : 0);
      options.arena_size = size;
      arena_ok = !misaligned && size >= need;
    }
  }
  aotc_context* ctx = reinterpret_cast<aotc_context*>(g_fake_object);
  const aotc_status s =
      aotc_context_create(model, null_options ? nullptr : &options, null_out ? nullptr : &ctx);
  const bool valid = (who == Who::kGood || who == Who::kOther) && !null_out &&
                     (null_options || (threads_ok && reserved_zero && arena_ok));
  if (valid != (s == AOTC_OK)) bug("aotc_context_create: wrong status", s);
  if (s != AOTC_OK) {
    if (!is_caller_error(s)) bug("aotc_context_create: status is no caller error", s);
    check_last_error_set();
    if (!null_out && ctx != nullptr) bug("aotc_context_create: failed but left *out_context set");
    return;
  }
  if (!ctx) bug("aotc_context_create: OK but no context");
  // A model with a live context must refuse to be destroyed.
  if (aotc_model_destroy(model) != AOTC_ERR_INVALID_ARGUMENT) bug("a model was destroyed under its context");
  if (in.ConsumeBool()) check_runs(model, ctx);
  if (aotc_context_destroy(ctx) != AOTC_OK) bug("aotc_context_destroy failed");
}

// aotc_model_create_v2 with fuzzed options. The fixture embeds its weights, so any
// weights given must be refused; a model made must work, and outlive no context.
void do_create_v2(FuzzedDataProvider& in) {
  const uint8_t how = in.ConsumeIntegral<uint8_t>();
  aotc_model_options options = {};
  Aligned weights;
  if (how & 1) options.weights_path = (how & 2) ? "/nonexistent/fixture.weights" : "/dev/null";
  if (how & 4) {
    const uint64_t size = in.ConsumeIntegralInRange<uint64_t>(0, 256);
    if (posix_memalign(&weights.block, 64, size + 1) != 0) return;
    options.weights_data = static_cast<unsigned char*>(weights.block) + ((how & 8) ? 1 : 0);
    options.weights_size = size;
  } else if (how & 8) {
    options.weights_size = in.ConsumeIntegral<uint64_t>();  // a size with no buffer
  }
  bool reserved_zero = true;
  if (how & 16) {
    const uint64_t v = in.ConsumeIntegral<uint64_t>();
    options.reserved[in.ConsumeIntegralInRange<int>(0, 4)] = v;
    reserved_zero = v == 0;
  }
  const bool null_options = (how & 32) && !(how & 0x1f);
  const bool null_out = how >= 250;
  aotc_model* model = reinterpret_cast<aotc_model*>(g_fake_object);
  const aotc_status s = aotc_model_create_v2(null_options ? nullptr : &options, null_out ? nullptr : &model);
  const bool valid = !null_out && reserved_zero && !options.weights_path && !options.weights_data &&
                     options.weights_size == 0;
  if (valid != (s == AOTC_OK)) bug("aotc_model_create_v2: wrong status", s);
  if (s != AOTC_OK) {
    if (!is_caller_error(s) && s != AOTC_ERR_SYSTEM) bug("aotc_model_create_v2: unexpected status", s);
    check_last_error_set();
    if (!null_out && model != nullptr) bug("aotc_model_create_v2: failed but left *out_model set");
    return;
  }
  aotc_context* ctx = nullptr;
  if (aotc_context_create(model, nullptr, &ctx) != AOTC_OK) bug("no context for a new model");
  check_runs(model, ctx);
  if (aotc_model_destroy(model) != AOTC_ERR_INVALID_ARGUMENT) bug("a model was destroyed under its context");
  if (aotc_context_destroy(ctx) != AOTC_OK || aotc_model_destroy(model) != AOTC_OK) bug("destroy failed");
}

// aotc_model_weights_info and aotc_model_arena_requirements.
void do_requirements(FuzzedDataProvider& in) {
  const uint8_t how = in.ConsumeIntegral<uint8_t>();
  if (how & 1) {
    aotc_weights_info info;
    std::memset(&info, 0xcc, sizeof info);
    const bool null_out = how & 2;
    const aotc_status s = aotc_model_weights_info(null_out ? nullptr : &info);
    if (null_out != (s != AOTC_OK)) bug("aotc_model_weights_info: wrong status", s);
    if (s != AOTC_OK) return check_last_error_set();
    if (info.location != AOTC_WEIGHTS_EMBEDDED || info.alignment != AOTC_MEMORY_ALIGNMENT)
      bug("aotc_model_weights_info: the fixture embeds 64-byte aligned weights");
    for (uint64_t r : info.reserved)
      if (r != 0) bug("aotc_model_weights_info: reserved fields are not zero");
    return;
  }
  const Who who = pick_who(in);
  const int32_t threads =
      (how & 2) ? in.ConsumeIntegral<int32_t>() : in.ConsumeIntegralInRange<int32_t>(-1, 5);
  const bool null_bytes = how >= 240, null_alignment = how & 4;
  uint64_t bytes = 0, alignment = 0;
  const aotc_status s = aotc_model_arena_requirements(model_for(who), threads, null_bytes ? nullptr : &bytes,
                                                      null_alignment ? nullptr : &alignment);
  const bool valid =
      (who == Who::kGood || who == Who::kOther) && !null_bytes && threads >= 0 && threads <= 1024;
  if (valid != (s == AOTC_OK)) bug("aotc_model_arena_requirements: wrong status", s);
  if (s != AOTC_OK) {
    if (!is_caller_error(s)) bug("aotc_model_arena_requirements: status is no caller error", s);
    return check_last_error_set();
  }
  uint64_t activations = 0;
  if (aotc_model_arena_size(g.model, &activations) != AOTC_OK || bytes < activations)
    bug("aotc_model_arena_requirements: less than the activations");
  if (!null_alignment && alignment != AOTC_MEMORY_ALIGNMENT) bug("aotc_model_arena_requirements: alignment");
}

void do_destroy(FuzzedDataProvider& in) {
  // Only what a caller may legally pass: NULL, or something that is not a live object
  // (the ABI must say so, not crash). Destroying a live global would end the fuzzing.
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      if (aotc_model_destroy(nullptr) != AOTC_OK) bug("aotc_model_destroy(NULL)");
      break;
    case 1:
      if (aotc_context_destroy(nullptr) != AOTC_OK) bug("aotc_context_destroy(NULL)");
      break;
    case 2:
      if (aotc_model_destroy(reinterpret_cast<aotc_model*>(g_fake_object)) != AOTC_ERR_INVALID_ARGUMENT)
        bug("aotc_model_destroy(garbage)");
      check_last_error_set();
      // And a live model that still has contexts must refuse.
      if (aotc_model_destroy(in.ConsumeBool() ? g.model : g.other_model) != AOTC_ERR_INVALID_ARGUMENT)
        bug("aotc_model_destroy of a model with live contexts");
      check_last_error_set();
      break;
    default:
      if (aotc_context_destroy(reinterpret_cast<aotc_context*>(g_fake_object)) != AOTC_ERR_INVALID_ARGUMENT)
        bug("aotc_context_destroy(garbage)");
      check_last_error_set();
      break;
  }
  if (aotc_abi_version() != AOTC_ABI_VERSION || aotc_abi_minor_version() != AOTC_ABI_MINOR_VERSION)
    bug("aotc_abi_version");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  init_once();
  FuzzedDataProvider in(data, size);
  for (int step = 0; step < 16 && in.remaining_bytes() > 0; ++step) {
    switch (in.ConsumeIntegralInRange<int>(0, 11)) {
      case 0:
      case 1:
      case 2:
      case 3:
        do_run(in);
        break;  // the run is what matters most
      case 4:
        do_info(in);
        break;
      case 5:
        do_counts(in);
        break;
      case 6:
        do_names(in);
        break;
      case 7:
        do_context(in);
        break;
      case 8:
        do_create_v2(in);
        break;
      case 9:
        do_requirements(in);
        break;
      case 10:
        do_destroy(in);
        break;
      default:
        (void)std::strlen(aotc_last_error());
        break;
    }
  }
  return 0;
}
