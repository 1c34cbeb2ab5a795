// abi.cpp - the C ABI of a model .so (declared in aotc/aotc.h), over the model
// description that generated code provides. Every entry point catches everything:
// no exception may cross into the caller.
#include <aotc/aotc.h>
#include <aotc/rt/model_desc.h>
#include <aotc/rt/thread_pool.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "aotc_runtime_version.h"
#include "place_arena.h"
#include "status.h"

using aotc::rt::fail;

namespace {

constexpr uint64_t kModelMagic = 0x6c65646f6d63746fULL;    // "otcmodel"
constexpr uint64_t kContextMagic = 0x747874636374746fULL;  // "ottcctxt"
constexpr size_t kArenaAlignment = AOTC_MEMORY_ALIGNMENT;
static_assert(kArenaAlignment == aotc::rt::kWeightsAlignment);

// The struct layouts are the ABI: named fields took the place of reserved ones of the
// same size and offset (on the 64-bit targets aotc builds for).
static_assert(sizeof(void*) != 8 ||
              (sizeof(aotc_context_options) == 48 && offsetof(aotc_context_options, arena) == 16 &&
               offsetof(aotc_context_options, arena_size) == 24));
static_assert(sizeof(void*) != 8 || sizeof(aotc_model_options) == 64);
// Minor version 2 named the third reserved word of the context options and the first of
// a tensor's: same sizes, same offsets.
static_assert(sizeof(void*) != 8 || offsetof(aotc_context_options, cuda_stream) == 32);
static_assert(sizeof(void*) != 8 || (sizeof(aotc_tensor) == 64 && offsetof(aotc_tensor, memory) == 32));
// Minor version 5 named the first of the context options' three reserved int32s, minor
// version 6 the second and the last reserved word.
static_assert(offsetof(aotc_context_options, cuda_graph_cache) == 4 &&
              offsetof(aotc_context_options, num_dim_limits) == 8 &&
              offsetof(aotc_context_options, reserved_i) == 12 &&
              sizeof(aotc_context_options::reserved_i) == sizeof(int32_t));
static_assert(sizeof(void*) != 8 || offsetof(aotc_context_options, dim_limits) == 40);
static_assert(sizeof(void*) != 8 || sizeof(aotc_dim_limit) == 32);
static_assert(sizeof(aotc_weights_info) == 56);

// Weights of a model whose blob is empty: any 64-byte aligned address will do.
alignas(64) const unsigned char kNoWeights[64] = {};

}  // namespace

struct aotc_model {
  uint64_t magic;
  const aotc::rt::ModelDesc* desc;
  // Dense byte sizes of each input and output, computed once at create.
  uint64_t* input_bytes;
  uint64_t* output_bytes;
  // What *_info reports as dims: the largest shape with -1 for each dynamic dim; inputs
  // then outputs, AOTC_MAX_RANK entries each (models with dynamic dims only).
  int64_t* info_dims;
  // Contexts not yet destroyed: destroying the model under them would leave them dangling.
  std::atomic<int64_t> live_contexts;
  // The weights runs read: the library's own, a caller's buffer, or the mapped file.
  const unsigned char* weights;
  void* mapping;  // the weights file mapped at create (munmap at destroy), or nullptr
  size_t mapping_bytes;
  void* device_state;  // a device model's (DeviceHooks::model_create), or nullptr
};

struct aotc_context {
  uint64_t magic;
  aotc_model* model;
  unsigned char* arena;
  bool owns_arena;  // false: the caller's (aotc_context_options.arena)
  aotc::rt::ThreadPool* pool;
  const void** input_ptrs;
  void** output_ptrs;
  // Models with dynamic dims: the named dims' sizes and every output's dims of the last run.
  int64_t dims[aotc::rt::kMaxNamedDims];
  // Models with dynamic dims: the largest size of each named dim the context runs at
  // (aotc_context_options.dim_limits), and its arena's offsets, placed for them.
  int64_t limits[aotc::rt::kMaxNamedDims];
  int64_t* arena_offsets;
  int64_t (*output_dims)[AOTC_MAX_RANK];
  // Set while a run is in progress: a context serves one thread at a time.
  std::atomic<bool> busy;
  void* device_state;  // a device model's (DeviceHooks::context_create), or nullptr
};

namespace {

uint64_t dense_bytes(const aotc::rt::TensorDesc& t) {
  uint64_t count = 1;
  for (int32_t d = 0; d < t.rank; ++d) count *= static_cast<uint64_t>(t.dims[d]);
  return count * aotc_dtype_size(t.dtype);
}

aotc_status check_model(const aotc_model* model) {
  if (!model) return fail(AOTC_ERR_NULL_POINTER, "model is NULL");
  if (model->magic != kModelMagic)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "model is not a live aotc_model (destroyed or garbage)");
  return AOTC_OK;
}

uint64_t round_up(uint64_t bytes, uint64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

bool all_zero(const uint64_t* values, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (values[i]) return false;
  return true;
}

// Bytes of a context's arena: the activations (activation_bytes), then each thread's
// kernel scratch.
uint64_t context_arena_bytes(const aotc::rt::ModelDesc& desc, uint64_t activation_bytes, int threads) {
  return round_up(activation_bytes, kArenaAlignment) +
         static_cast<uint64_t>(threads) * round_up(desc.thread_scratch_bytes, kArenaAlignment);
}

// A model with dynamic dims: the largest size of each named dim that a context with these
// options runs at: the model's, lowered by options->dim_limits; every limit checked.
aotc_status resolve_limits(const aotc::rt::ModelDesc& desc, const aotc_context_options* options,
                           int64_t* limits) {
  const int32_t count = options ? options->num_dim_limits : 0;
  const aotc_dim_limit* given = options ? options->dim_limits : nullptr;
  if (count < 0) return fail(AOTC_ERR_INVALID_ARGUMENT, "num_dim_limits is %d; it counts dim_limits", count);
  if (count > 0 && !given)
    return fail(AOTC_ERR_NULL_POINTER, "dim_limits is NULL but num_dim_limits is %d", count);
  if (count == 0 && given)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "dim_limits is set but num_dim_limits is 0");
  if (count > 0 && !desc.dynamic)
    return fail(AOTC_ERR_INVALID_ARGUMENT,
                "dim_limits: this model has no named dims (aotc --dim): every shape is fixed");
  if (!desc.dynamic) return AOTC_OK;
  const aotc::rt::DynamicDesc& dyn = *desc.dynamic;
  bool set[aotc::rt::kMaxNamedDims] = {};
  for (size_t k = 0; k < dyn.num_dims; ++k) limits[k] = dyn.dims[k].max;
  for (int32_t i = 0; i < count; ++i) {
    const aotc_dim_limit& limit = given[i];
    if (!all_zero(limit.reserved, sizeof limit.reserved / sizeof limit.reserved[0]))
      return fail(AOTC_ERR_INVALID_ARGUMENT, "dim_limits[%d]: the reserved fields must be zero", i);
    if (!limit.name) return fail(AOTC_ERR_NULL_POINTER, "dim_limits[%d]: name is NULL", i);
    size_t k = 0;
    while (k < dyn.num_dims && std::strcmp(dyn.dims[k].name, limit.name) != 0) ++k;
    if (k == dyn.num_dims) {
      char names[256] = "";
      for (size_t j = 0, used = 0; j < dyn.num_dims && used < sizeof names; ++j)
        used += static_cast<size_t>(
            std::snprintf(names + used, sizeof names - used, "%s%s", j ? ", " : "", dyn.dims[j].name));
      return fail(AOTC_ERR_INVALID_ARGUMENT, "dim_limits[%d]: the model has no dim '%.100s' (its dims: %s)",
                  i, limit.name, names);
    }
    if (set[k])
      return fail(AOTC_ERR_INVALID_ARGUMENT, "dim_limits[%d]: %s is limited twice", i, dyn.dims[k].name);
    set[k] = true;
    const aotc::rt::DimDesc& dim = dyn.dims[k];
    const int64_t step = dim.multiple_of > 1 ? dim.multiple_of : 1;
    if (limit.max > dim.max || limit.max / step * step < dim.min)
      return fail(AOTC_ERR_INVALID_ARGUMENT,
                  "dim_limits[%d]: %s max %lld is outside the dim's range %lld..%lld%s", i, dim.name,
                  static_cast<long long>(limit.max), static_cast<long long>(dim.min),
                  static_cast<long long>(dim.max), step > 1 ? " (it must hold a multiple of its step)" : "");
    limits[k] = limit.max / step * step;
  }
  return AOTC_OK;
}

// The activation bytes of a context running at sizes up to limits (a model with dynamic
// dims; desc.arena_bytes otherwise), its arena offsets written to offsets (num_arena_offsets).
aotc_status context_activation_bytes(const aotc::rt::ModelDesc& desc, const int64_t* limits, int64_t* offsets,
                                     uint64_t* out_bytes) {
  *out_bytes = desc.arena_bytes;
  if (!desc.dynamic || !desc.dynamic->arena_plans) return AOTC_OK;
  const int64_t bytes = aotc::rt::place_arena(*desc.dynamic, limits, offsets);
  if (bytes < 0) return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory placing the context's arena");
  *out_bytes = static_cast<uint64_t>(bytes);
  return AOTC_OK;
}

// num_threads as the options give it (0 means 1); fails outside [0, 1024].
aotc_status check_threads(int32_t threads) {
  if (threads < 0 || threads > 1024)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "num_threads must be in [0, 1024], got %d", threads);
  return AOTC_OK;
}

// Checks external weights against the model: size first (cheap), then the checksum.
aotc_status check_weights(const aotc::rt::ModelDesc& desc, const unsigned char* data, uint64_t size,
                          const char* what, const char* name) {
  if (size != desc.weights_bytes)
    return fail(AOTC_ERR_INVALID_ARGUMENT,
                "%s%s%s: expected %llu bytes (this model's weights), got %llu: the weights of another model "
                "or build, or a truncated copy",
                what, name ? " " : "", name ? name : "", static_cast<unsigned long long>(desc.weights_bytes),
                static_cast<unsigned long long>(size));
  const uint64_t got = aotc::rt::weights_checksum(data, size);
  if (got != desc.weights_checksum)
    return fail(
        AOTC_ERR_INVALID_ARGUMENT,
        "%s%s%s: checksum mismatch: expected 0x%016llx, got 0x%016llx: the weights of another model or "
        "build, or corrupted",
        what, name ? " " : "", name ? name : "", static_cast<unsigned long long>(desc.weights_checksum),
        static_cast<unsigned long long>(got));
  return AOTC_OK;
}

// Maps a weights file read-only and checks it; on success the model owns the mapping.
aotc_status map_weights_file(const aotc::rt::ModelDesc& desc, const char* path, aotc_model* model) {
  char name[600];
  std::snprintf(name, sizeof name, "'%s'", path);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(AOTC_ERR_SYSTEM, "cannot open weights file %s: %s", name, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    return fail(AOTC_ERR_SYSTEM, "cannot stat weights file %s: %s", name, std::strerror(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(AOTC_ERR_INVALID_ARGUMENT, "weights file %s is not a regular file", name);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size != desc.weights_bytes) {
    ::close(fd);
    return check_weights(desc, nullptr, size, "weights file", name);
  }
  if (size == 0) {  // nothing to map (a model without weights)
    ::close(fd);
    model->weights = kNoWeights;
    return check_weights(desc, kNoWeights, 0, "weights file", name);
  }
  void* mapping = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int error = errno;
  ::close(fd);  // the mapping keeps the file
  if (mapping == MAP_FAILED)
    return fail(AOTC_ERR_SYSTEM, "cannot map weights file %s (%llu bytes): %s", name,
                static_cast<unsigned long long>(size), std::strerror(error));
  if (aotc_status s =
          check_weights(desc, static_cast<const unsigned char*>(mapping), size, "weights file", name)) {
    ::munmap(mapping, static_cast<size_t>(size));
    return s;
  }
  model->weights = static_cast<const unsigned char*>(mapping);
  model->mapping = mapping;
  model->mapping_bytes = static_cast<size_t>(size);
  return AOTC_OK;
}

// Binds the model's weights as the options say (options may be NULL).
aotc_status bind_weights(const aotc::rt::ModelDesc& desc, const aotc_model_options* options,
                         aotc_model* model) {
  const char* path = options ? options->weights_path : nullptr;
  const void* data = options ? options->weights_data : nullptr;
  const uint64_t size = options ? options->weights_size : 0;
  if (options && !all_zero(options->reserved, sizeof options->reserved / sizeof options->reserved[0]))
    return fail(AOTC_ERR_INVALID_ARGUMENT, "aotc_model_options: the reserved fields must be zero");
  if (!desc.weights_external) {
    if (path || data || size)
      return fail(AOTC_ERR_INVALID_ARGUMENT,
                  "this model's weights are embedded in the library: weights_path and weights_data must be "
                  "NULL");
    model->weights = desc.weights ? desc.weights : kNoWeights;
    return AOTC_OK;
  }
  if (!path && !data) {
    if (size)
      return fail(AOTC_ERR_INVALID_ARGUMENT, "weights_data is NULL but weights_size is %llu",
                  static_cast<unsigned long long>(size));
    return fail(
        AOTC_ERR_INVALID_ARGUMENT,
        "this model's weights (%llu bytes) are not in the library but in a separate file (MODEL.weights "
        "beside MODEL.so, from aotc --weights file): create the model with aotc_model_create_v2 and "
        "aotc_model_options.weights_path (or weights_data for weights already in memory)",
        static_cast<unsigned long long>(desc.weights_bytes));
  }
  if (path && (data || size))
    return fail(AOTC_ERR_INVALID_ARGUMENT,
                "give the weights as weights_path or as weights_data + weights_size, not both");
  if (path) return map_weights_file(desc, path, model);
  if (reinterpret_cast<uintptr_t>(data) % aotc::rt::kWeightsAlignment != 0)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "weights_data (%p) is not %llu-byte aligned", data,
                static_cast<unsigned long long>(aotc::rt::kWeightsAlignment));
  if (aotc_status s =
          check_weights(desc, static_cast<const unsigned char*>(data), size, "weights_data", nullptr))
    return s;
  model->weights = static_cast<const unsigned char*>(data);
  return AOTC_OK;
}

aotc_status create_model(const aotc_model_options* options, aotc_model** out_model) {
  if (!out_model) return fail(AOTC_ERR_NULL_POINTER, "out_model is NULL");
  *out_model = nullptr;
  const aotc::rt::ModelDesc* desc = aotc_internal_model_desc();
  if (!desc || desc->abi_version != AOTC_ABI_VERSION)
    return fail(AOTC_ERR_ABI_MISMATCH, "model code was generated for ABI %u, runtime is ABI %u",
                desc ? desc->abi_version : 0u, AOTC_ABI_VERSION);
  auto* model = new (std::nothrow) aotc_model();
  auto* in_bytes = static_cast<uint64_t*>(std::calloc(desc->num_inputs + 1, sizeof(uint64_t)));
  auto* out_bytes = static_cast<uint64_t*>(std::calloc(desc->num_outputs + 1, sizeof(uint64_t)));
  if (!model || !in_bytes || !out_bytes) {
    delete model;
    std::free(in_bytes);
    std::free(out_bytes);
    return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory creating the model");
  }
  if (aotc_status s = bind_weights(*desc, options, model)) {
    delete model;
    std::free(in_bytes);
    std::free(out_bytes);
    return s;
  }
  if (desc->device) {
    // The weights go to the device once; the host copy is not needed afterwards.
    if (aotc_status s = desc->device->model_create(*desc, model->weights, &model->device_state)) {
      if (model->mapping) ::munmap(model->mapping, model->mapping_bytes);
      delete model;
      std::free(in_bytes);
      std::free(out_bytes);
      return s;
    }
  }
  for (size_t i = 0; i < desc->num_inputs; ++i) in_bytes[i] = dense_bytes(desc->inputs[i]);
  for (size_t i = 0; i < desc->num_outputs; ++i) out_bytes[i] = dense_bytes(desc->outputs[i]);
  if (desc->dynamic) {
    const size_t tensors = desc->num_inputs + desc->num_outputs;
    model->info_dims = static_cast<int64_t*>(std::calloc(tensors * AOTC_MAX_RANK + 1, sizeof(int64_t)));
    if (!model->info_dims || desc->dynamic->num_dims > aotc::rt::kMaxNamedDims) {
      if (model->device_state) desc->device->model_destroy(model->device_state);
      if (model->mapping) ::munmap(model->mapping, model->mapping_bytes);
      std::free(model->info_dims);
      delete model;
      std::free(in_bytes);
      std::free(out_bytes);
      return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory creating the model");
    }
    for (size_t t = 0; t < tensors; ++t) {
      const bool is_input = t < desc->num_inputs;
      const aotc::rt::TensorDesc& td = is_input ? desc->inputs[t] : desc->outputs[t - desc->num_inputs];
      for (int32_t d = 0; d < td.rank; ++d) {
        const bool dynamic = is_input ? desc->dynamic->input_dims[t][d] >= 0
                                      : desc->dynamic->output_dim_names[t - desc->num_inputs][d] != nullptr;
        model->info_dims[t * AOTC_MAX_RANK + d] = dynamic ? -1 : td.dims[d];
      }
    }
  }
  model->magic = kModelMagic;
  model->desc = desc;
  model->input_bytes = in_bytes;
  model->output_bytes = out_bytes;
  *out_model = model;
  return AOTC_OK;
}

aotc_status fill_info(const aotc::rt::TensorDesc& t, uint64_t bytes, aotc_tensor_info* out) {
  std::memset(out, 0, sizeof *out);
  out->name = t.name;
  out->dtype = t.dtype;
  out->rank = t.rank;
  out->dims = t.dims;
  out->size_bytes = bytes;
  return AOTC_OK;
}

void format_dims(char* buffer, size_t size, int32_t rank, const int64_t* dims) {
  size_t used = static_cast<size_t>(std::snprintf(buffer, size, "["));
  for (int32_t d = 0; d < rank && used < size; ++d) {
    used += static_cast<size_t>(
        std::snprintf(buffer + used, size - used, d ? ", %lld" : "%lld", static_cast<long long>(dims[d])));
  }
  if (used < size) std::snprintf(buffer + used, size - used, "]");
}

// Checks one caller tensor against the model's description of it.
aotc_status check_tensor(const char* role, size_t index, const aotc::rt::TensorDesc& want,
                         uint64_t want_bytes, const aotc_tensor& got) {
  if (got.dtype != want.dtype)
    return fail(AOTC_ERR_WRONG_DTYPE, "%s %zu ('%s'): expected dtype %s, got %s", role, index, want.name,
                aotc_dtype_name(want.dtype), aotc_dtype_name(got.dtype));
  bool same_shape = got.rank == want.rank && (got.rank == 0 || got.dims != nullptr);
  for (int32_t d = 0; same_shape && d < want.rank; ++d) same_shape = got.dims[d] == want.dims[d];
  if (!same_shape) {
    char expected[256], actual[256];
    format_dims(expected, sizeof expected, want.rank, want.dims);
    if (got.rank > 0 && got.dims == nullptr)
      return fail(AOTC_ERR_NULL_POINTER, "%s %zu ('%s'): dims is NULL for rank %d", role, index, want.name,
                  got.rank);
    if (got.rank < 0 || got.rank > AOTC_MAX_RANK)
      return fail(AOTC_ERR_WRONG_SHAPE, "%s %zu ('%s'): expected shape %s, got rank %d", role, index,
                  want.name, expected, got.rank);
    format_dims(actual, sizeof actual, got.rank, got.dims);
    return fail(AOTC_ERR_WRONG_SHAPE, "%s %zu ('%s'): expected shape %s, got %s", role, index, want.name,
                expected, actual);
  }
  if (want_bytes > 0 && got.data == nullptr)
    return fail(AOTC_ERR_NULL_POINTER, "%s %zu ('%s'): data is NULL", role, index, want.name);
  if (got.size_bytes < want_bytes)
    return fail(AOTC_ERR_BUFFER_TOO_SMALL, "%s %zu ('%s'): buffer holds %llu bytes, needs %llu", role, index,
                want.name, static_cast<unsigned long long>(got.size_bytes),
                static_cast<unsigned long long>(want_bytes));
  return AOTC_OK;
}

// The shape a model's tensor has, its dynamic dims by name: "[B, S, 768]".
void format_named_dims(char* buffer, size_t size, const aotc::rt::TensorDesc& t, const int32_t* symbols,
                       const char* const* names, const aotc::rt::DynamicDesc& dyn) {
  size_t used = static_cast<size_t>(std::snprintf(buffer, size, "["));
  for (int32_t d = 0; d < t.rank && used < size; ++d) {
    const char* name = symbols ? (symbols[d] >= 0 ? dyn.dims[symbols[d]].name : nullptr) : names[d];
    if (name)
      used += static_cast<size_t>(std::snprintf(buffer + used, size - used, d ? ", %s" : "%s", name));
    else
      used += static_cast<size_t>(std::snprintf(buffer + used, size - used, d ? ", %lld" : "%lld",
                                                static_cast<long long>(t.dims[d])));
  }
  if (used < size) std::snprintf(buffer + used, size - used, "]");
}

// A model with dynamic dims: the size of each named dim from the inputs' shapes, every
// fixed dim and every range checked, a name used twice the same size; then every
// output's dims (out_dims). Only rank and dims of the inputs are read.
aotc_status resolve_dims(const aotc::rt::ModelDesc& desc, const aotc_tensor* inputs, int64_t* dims,
                         int64_t (*out_dims)[AOTC_MAX_RANK]) {
  const aotc::rt::DynamicDesc& dyn = *desc.dynamic;
  bool seen[aotc::rt::kMaxNamedDims] = {};
  size_t seen_in[aotc::rt::kMaxNamedDims] = {};
  for (size_t i = 0; i < desc.num_inputs; ++i) {
    const aotc::rt::TensorDesc& want = desc.inputs[i];
    const aotc_tensor& got = inputs[i];
    char expected[256] = "";  // the shape with names, written only for a message
    auto named = [&]() {
      format_named_dims(expected, sizeof expected, want, dyn.input_dims[i], nullptr, dyn);
      return expected;
    };
    if (got.rank > 0 && got.dims == nullptr)
      return fail(AOTC_ERR_NULL_POINTER, "input %zu ('%s'): dims is NULL for rank %d", i, want.name,
                  got.rank);
    if (got.rank != want.rank)
      return fail(AOTC_ERR_WRONG_SHAPE, "input %zu ('%s'): expected shape %s, got rank %d", i, want.name,
                  named(), got.rank);
    for (int32_t d = 0; d < want.rank; ++d) {
      const int64_t size = got.dims[d];
      const int32_t symbol = dyn.input_dims[i][d];
      if (symbol < 0) {
        if (size != want.dims[d])
          return fail(AOTC_ERR_WRONG_SHAPE, "input %zu ('%s'): expected shape %s, got %lld in dim %d", i,
                      want.name, named(), static_cast<long long>(size), d);
        continue;
      }
      const aotc::rt::DimDesc& dim = dyn.dims[symbol];
      if (seen[symbol]) {
        if (size != dims[symbol])
          return fail(AOTC_ERR_WRONG_SHAPE,
                      "input %zu ('%s'): dim %d is %s = %lld, but input %zu ('%s') has %s = %lld: a dim "
                      "name means one size",
                      i, want.name, d, dim.name, static_cast<long long>(size), seen_in[symbol],
                      desc.inputs[seen_in[symbol]].name, dim.name, static_cast<long long>(dims[symbol]));
        continue;
      }
      if (size < dim.min || size > dim.max)
        return fail(AOTC_ERR_WRONG_SHAPE,
                    "input %zu ('%s'): %s = %lld is outside its range %lld..%lld (shape %s)", i, want.name,
                    dim.name, static_cast<long long>(size), static_cast<long long>(dim.min),
                    static_cast<long long>(dim.max), named());
      if (dim.multiple_of > 1 && size % dim.multiple_of != 0)
        return fail(AOTC_ERR_WRONG_SHAPE,
                    "input %zu ('%s'): %s = %lld is not a multiple of %lld, which %s needs", i, want.name,
                    dim.name, static_cast<long long>(size), static_cast<long long>(dim.multiple_of),
                    dim.multiple_why);
      dims[symbol] = size;
      seen[symbol] = true;
      seen_in[symbol] = i;
    }
  }
  for (size_t k = 0; k < dyn.num_dims; ++k)
    if (!seen[k]) return fail(AOTC_ERR_INTERNAL, "dim %s is in no input", dyn.dims[k].name);
  dyn.output_dims(dims, out_dims);
  return AOTC_OK;
}

// A context of a model with dynamic dims runs only up to its limits (dim_limits): the
// first input dim above one is named.
aotc_status check_limits(const aotc::rt::ModelDesc& desc, const int64_t* limits, const int64_t* dims) {
  const aotc::rt::DynamicDesc& dyn = *desc.dynamic;
  for (size_t k = 0; k < dyn.num_dims; ++k) {
    if (dims[k] <= limits[k]) continue;
    for (size_t i = 0; i < desc.num_inputs; ++i)
      for (int32_t d = 0; d < desc.inputs[i].rank; ++d)
        if (dyn.input_dims[i][d] == static_cast<int32_t>(k))
          return fail(AOTC_ERR_WRONG_SHAPE,
                      "input %zu ('%s'): %s = %lld is above %lld, the largest this context was created for "
                      "(aotc_context_options.dim_limits; the model takes up to %lld)",
                      i, desc.inputs[i].name, dyn.dims[k].name, static_cast<long long>(dims[k]),
                      static_cast<long long>(limits[k]), static_cast<long long>(dyn.dims[k].max));
  }
  return AOTC_OK;
}

// A model with dynamic dims: an output buffer has the info's rank, its fixed dims and
// room for the output at this run's shape (dims, from resolve_dims).
aotc_status check_dynamic_output(const aotc::rt::ModelDesc& desc, size_t index, const int64_t* dims,
                                 const aotc_tensor& got) {
  const aotc::rt::TensorDesc& want = desc.outputs[index];
  const char* const* names = desc.dynamic->output_dim_names[index];
  char expected[256] = "";  // the shape with names, written only for a message
  auto named = [&]() {
    format_named_dims(expected, sizeof expected, want, nullptr, names, *desc.dynamic);
    return expected;
  };
  if (got.dtype != want.dtype)
    return fail(AOTC_ERR_WRONG_DTYPE, "output %zu ('%s'): expected dtype %s, got %s", index, want.name,
                aotc_dtype_name(want.dtype), aotc_dtype_name(got.dtype));
  if (got.rank > 0 && got.dims == nullptr)
    return fail(AOTC_ERR_NULL_POINTER, "output %zu ('%s'): dims is NULL for rank %d", index, want.name,
                got.rank);
  if (got.rank != want.rank)
    return fail(AOTC_ERR_WRONG_SHAPE, "output %zu ('%s'): expected shape %s, got rank %d", index, want.name,
                named(), got.rank);
  uint64_t bytes = aotc_dtype_size(want.dtype);
  for (int32_t d = 0; d < want.rank; ++d) {
    if (!names[d] && got.dims[d] != want.dims[d])
      return fail(AOTC_ERR_WRONG_SHAPE, "output %zu ('%s'): expected shape %s, got %lld in dim %d", index,
                  want.name, named(), static_cast<long long>(got.dims[d]), d);
    bytes *= static_cast<uint64_t>(dims[d]);
  }
  if (bytes > 0 && got.data == nullptr)
    return fail(AOTC_ERR_NULL_POINTER, "output %zu ('%s'): data is NULL", index, want.name);
  if (got.size_bytes < bytes)
    return fail(AOTC_ERR_BUFFER_TOO_SMALL,
                "output %zu ('%s'): buffer holds %llu bytes, needs %llu for this run's shape", index,
                want.name, static_cast<unsigned long long>(got.size_bytes),
                static_cast<unsigned long long>(bytes));
  return AOTC_OK;
}

}  // namespace

extern "C" {

AOTC_API uint32_t aotc_abi_version(void) { return AOTC_ABI_VERSION; }

AOTC_API uint32_t aotc_abi_minor_version(void) { return AOTC_ABI_MINOR_VERSION; }

AOTC_API const char* aotc_runtime_version(void) { return AOTC_RUNTIME_VERSION; }

AOTC_API const char* aotc_compiler_version(void) {
  const aotc::rt::ModelDesc* desc = aotc_internal_model_desc();
  return desc && desc->aotc_version ? desc->aotc_version : "";
}

AOTC_API size_t aotc_dtype_size(aotc_dtype dtype) {
  switch (dtype) {
    case AOTC_DTYPE_FLOAT32:
      return 4;
    case AOTC_DTYPE_FLOAT16:
      return 2;
    case AOTC_DTYPE_BFLOAT16:
      return 2;
    case AOTC_DTYPE_INT64:
      return 8;
    case AOTC_DTYPE_INT32:
      return 4;
    case AOTC_DTYPE_BOOL:
      return 1;
  }
  return 0;
}

AOTC_API const char* aotc_dtype_name(aotc_dtype dtype) {
  switch (dtype) {
    case AOTC_DTYPE_FLOAT32:
      return "float32";
    case AOTC_DTYPE_FLOAT16:
      return "float16";
    case AOTC_DTYPE_BFLOAT16:
      return "bfloat16";
    case AOTC_DTYPE_INT64:
      return "int64";
    case AOTC_DTYPE_INT32:
      return "int32";
    case AOTC_DTYPE_BOOL:
      return "bool";
  }
  return "unknown";
}

AOTC_API aotc_status aotc_model_create(aotc_model** out_model) { return create_model(nullptr, out_model); }

AOTC_API aotc_status aotc_model_create_v2(const aotc_model_options* options, aotc_model** out_model) {
  return create_model(options, out_model);
}

AOTC_API aotc_status aotc_model_weights_info(aotc_weights_info* out_info) {
  if (!out_info) return fail(AOTC_ERR_NULL_POINTER, "out_info is NULL");
  const aotc::rt::ModelDesc* desc = aotc_internal_model_desc();
  if (!desc || desc->abi_version != AOTC_ABI_VERSION)
    return fail(AOTC_ERR_ABI_MISMATCH, "model code was generated for ABI %u, runtime is ABI %u",
                desc ? desc->abi_version : 0u, AOTC_ABI_VERSION);
  std::memset(out_info, 0, sizeof *out_info);
  out_info->location = desc->weights_external ? AOTC_WEIGHTS_EXTERNAL : AOTC_WEIGHTS_EMBEDDED;
  out_info->alignment = static_cast<uint32_t>(aotc::rt::kWeightsAlignment);
  out_info->size_bytes = desc->weights_bytes;
  out_info->checksum = desc->weights_checksum;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_destroy(aotc_model* model) {
  if (!model) return AOTC_OK;  // like free(NULL)
  if (aotc_status s = check_model(model)) return s;
  if (const int64_t live = model->live_contexts.load())
    return fail(AOTC_ERR_INVALID_ARGUMENT, "model still has %lld live context(s): destroy them first",
                static_cast<long long>(live));
  model->magic = 0;
  if (model->device_state) model->desc->device->model_destroy(model->device_state);
  if (model->mapping) ::munmap(model->mapping, model->mapping_bytes);
  std::free(model->input_bytes);
  std::free(model->output_bytes);
  std::free(model->info_dims);
  delete model;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_num_inputs(const aotc_model* model, size_t* out_count) {
  if (aotc_status s = check_model(model)) return s;
  if (!out_count) return fail(AOTC_ERR_NULL_POINTER, "out_count is NULL");
  *out_count = model->desc->num_inputs;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_num_outputs(const aotc_model* model, size_t* out_count) {
  if (aotc_status s = check_model(model)) return s;
  if (!out_count) return fail(AOTC_ERR_NULL_POINTER, "out_count is NULL");
  *out_count = model->desc->num_outputs;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_input_info(const aotc_model* model, size_t index,
                                           aotc_tensor_info* out_info) {
  if (aotc_status s = check_model(model)) return s;
  if (!out_info) return fail(AOTC_ERR_NULL_POINTER, "out_info is NULL");
  if (index >= model->desc->num_inputs)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "input index %zu out of range: the model has %zu inputs", index,
                model->desc->num_inputs);
  aotc_status s = fill_info(model->desc->inputs[index], model->input_bytes[index], out_info);
  if (model->info_dims) out_info->dims = model->info_dims + index * AOTC_MAX_RANK;
  return s;
}

AOTC_API aotc_status aotc_model_output_info(const aotc_model* model, size_t index,
                                            aotc_tensor_info* out_info) {
  if (aotc_status s = check_model(model)) return s;
  if (!out_info) return fail(AOTC_ERR_NULL_POINTER, "out_info is NULL");
  if (index >= model->desc->num_outputs)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "output index %zu out of range: the model has %zu outputs", index,
                model->desc->num_outputs);
  aotc_status s = fill_info(model->desc->outputs[index], model->output_bytes[index], out_info);
  if (model->info_dims) out_info->dims = model->info_dims + (model->desc->num_inputs + index) * AOTC_MAX_RANK;
  return s;
}

AOTC_API aotc_status aotc_model_arena_size(const aotc_model* model, uint64_t* out_bytes) {
  if (aotc_status s = check_model(model)) return s;
  if (!out_bytes) return fail(AOTC_ERR_NULL_POINTER, "out_bytes is NULL");
  *out_bytes = model->desc->arena_bytes;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_arena_requirements(const aotc_model* model, int32_t num_threads,
                                                   uint64_t* out_bytes, uint64_t* out_alignment) {
  if (aotc_status s = check_model(model)) return s;
  if (!out_bytes) return fail(AOTC_ERR_NULL_POINTER, "out_bytes is NULL");
  if (aotc_status s = check_threads(num_threads)) return s;
  *out_bytes = context_arena_bytes(*model->desc, model->desc->arena_bytes, num_threads ? num_threads : 1);
  if (out_alignment) *out_alignment = kArenaAlignment;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_arena_requirements_v2(const aotc_model* model,
                                                      const aotc_context_options* options,
                                                      uint64_t* out_bytes, uint64_t* out_alignment) {
  if (aotc_status s = check_model(model)) return s;
  if (!out_bytes) return fail(AOTC_ERR_NULL_POINTER, "out_bytes is NULL");
  const int32_t threads = options ? options->num_threads : 1;
  if (aotc_status s = check_threads(threads)) return s;
  const aotc::rt::ModelDesc& desc = *model->desc;
  int64_t limits[aotc::rt::kMaxNamedDims] = {};
  if (aotc_status s = resolve_limits(desc, options, limits)) return s;
  const size_t count = desc.dynamic ? desc.dynamic->num_arena_offsets : 0;
  auto* offsets = static_cast<int64_t*>(std::calloc(count + 1, sizeof(int64_t)));
  if (!offsets) return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory");
  uint64_t activations = 0;
  const aotc_status s = context_activation_bytes(desc, limits, offsets, &activations);
  std::free(offsets);
  if (s != AOTC_OK) return s;
  *out_bytes = context_arena_bytes(desc, activations, threads ? threads : 1);
  if (out_alignment) *out_alignment = kArenaAlignment;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_context_create(aotc_model* model, const aotc_context_options* options,
                                         aotc_context** out_context) {
  if (!out_context) return fail(AOTC_ERR_NULL_POINTER, "out_context is NULL");
  *out_context = nullptr;
  if (aotc_status s = check_model(model)) return s;
  int threads = options ? options->num_threads : 1;
  if (aotc_status s = check_threads(threads)) return s;
  if (threads == 0) threads = 1;
  const aotc::rt::ModelDesc* desc = model->desc;
  int64_t limits[aotc::rt::kMaxNamedDims] = {};
  if (aotc_status s = resolve_limits(*desc, options, limits)) return s;
  const size_t num_offsets = desc->dynamic ? desc->dynamic->num_arena_offsets : 0;
  auto* arena_offsets = static_cast<int64_t*>(std::calloc(num_offsets + 1, sizeof(int64_t)));
  if (!arena_offsets) return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory creating a context");
  uint64_t activations = 0;
  if (aotc_status s = context_activation_bytes(*desc, limits, arena_offsets, &activations)) {
    std::free(arena_offsets);
    return s;
  }
  // Freed on every failure below; the context owns it once created.
  struct FreeOffsets {
    int64_t** offsets;
    ~FreeOffsets() { std::free(*offsets); }
  } free_offsets{&arena_offsets};
  // A device model's arena is device memory that its hooks allocate: none on the host.
  const size_t arena_bytes =
      desc->device ? 0 : static_cast<size_t>(context_arena_bytes(*desc, activations, threads));
  unsigned char* caller_arena = nullptr;
  if (options && desc->device && options->arena)
    return fail(AOTC_ERR_INVALID_ARGUMENT,
                "this model runs on the GPU and allocates its arena in device memory: arena must be NULL");
  if (options && !desc->device && options->cuda_stream)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "cuda_stream is for CUDA models; this model runs on the CPU");
  if (options) {
    bool reserved_zero = true;
    for (const int32_t r : options->reserved_i) reserved_zero = reserved_zero && r == 0;
    if (!reserved_zero)
      return fail(AOTC_ERR_INVALID_ARGUMENT, "aotc_context_options: the reserved fields must be zero");
    // Any count is valid for every model: CPU models and CUDA ones without named dims ignore it.
    if (options->cuda_graph_cache < 0)
      return fail(AOTC_ERR_INVALID_ARGUMENT,
                  "aotc_context_options: cuda_graph_cache is %d; it is a number of CUDA graphs to keep "
                  "(0: the default)",
                  options->cuda_graph_cache);
    caller_arena = static_cast<unsigned char*>(options->arena);
    if (!caller_arena && options->arena_size)
      return fail(AOTC_ERR_INVALID_ARGUMENT, "arena is NULL but arena_size is %llu",
                  static_cast<unsigned long long>(options->arena_size));
    if (caller_arena && reinterpret_cast<uintptr_t>(caller_arena) % kArenaAlignment != 0)
      return fail(AOTC_ERR_INVALID_ARGUMENT, "arena (%p) is not %zu-byte aligned", options->arena,
                  kArenaAlignment);
    if (caller_arena && options->arena_size < arena_bytes)
      return fail(
          AOTC_ERR_BUFFER_TOO_SMALL,
          "arena holds %llu bytes, a context of %d thread(s) needs %zu (aotc_model_arena_requirements%s)",
          static_cast<unsigned long long>(options->arena_size), threads, arena_bytes,
          options->num_dim_limits ? "_v2 with these options" : "");
  }
  auto* ctx = new (std::nothrow) aotc_context();
  if (!ctx) return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory creating a context");
  ctx->owns_arena = caller_arena == nullptr;
  if (caller_arena)
    ctx->arena = caller_arena;
  else
    ctx->arena =
        arena_bytes ? static_cast<unsigned char*>(std::aligned_alloc(kArenaAlignment, arena_bytes)) : nullptr;
  ctx->input_ptrs = static_cast<const void**>(std::calloc(desc->num_inputs + 1, sizeof(void*)));
  ctx->output_ptrs = static_cast<void**>(std::calloc(desc->num_outputs + 1, sizeof(void*)));
  // The last run's output dims, then the ones of the run in progress.
  ctx->output_dims = static_cast<int64_t(*)[AOTC_MAX_RANK]>(
      std::calloc(2 * desc->num_outputs + 1, sizeof(int64_t[AOTC_MAX_RANK])));
  for (size_t i = 0; ctx->output_dims && i < desc->num_outputs; ++i)
    for (int32_t d = 0; d < desc->outputs[i].rank; ++d) ctx->output_dims[i][d] = desc->outputs[i].dims[d];
  // A model with dynamic dims: the largest shape is the context's.
  if (desc->dynamic && ctx->output_dims) desc->dynamic->output_dims(limits, ctx->output_dims);
  try {
    ctx->pool = new aotc::rt::ThreadPool(threads);
  } catch (const std::bad_alloc&) {
    ctx->pool = nullptr;
  } catch (...) {
    ctx->pool = nullptr;
  }
  if ((arena_bytes && !ctx->arena) || !ctx->input_ptrs || !ctx->output_ptrs || !ctx->output_dims ||
      !ctx->pool) {
    const bool no_pool = ctx->pool == nullptr;
    delete ctx->pool;
    if (ctx->owns_arena) std::free(ctx->arena);
    std::free(ctx->input_ptrs);
    std::free(ctx->output_ptrs);
    std::free(ctx->output_dims);
    delete ctx;
    if (no_pool) return fail(AOTC_ERR_SYSTEM, "could not start %d worker threads", threads - 1);
    return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory allocating a %zu-byte arena", arena_bytes);
  }
  if (desc->device) {
    const aotc::rt::ContextPlan plan{activations, desc->dynamic ? arena_offsets : nullptr,
                                     desc->dynamic ? limits : nullptr,
                                     desc->dynamic ? ctx->output_dims : nullptr};
    if (aotc_status s =
            desc->device->context_create(*desc, model->device_state, options ? options->cuda_stream : nullptr,
                                         options ? options->cuda_graph_cache : 0, plan, &ctx->device_state)) {
      delete ctx->pool;
      if (ctx->owns_arena) std::free(ctx->arena);
      std::free(ctx->input_ptrs);
      std::free(ctx->output_ptrs);
      std::free(ctx->output_dims);
      delete ctx;
      return s;
    }
  }
  // Each thread's kernel scratch follows the activations.
  const size_t scratch_bytes = static_cast<size_t>(round_up(desc->thread_scratch_bytes, kArenaAlignment));
  if (scratch_bytes && !desc->device)
    ctx->pool->set_thread_scratch(ctx->arena + round_up(activations, kArenaAlignment), scratch_bytes);
  std::memcpy(ctx->limits, limits, sizeof limits);
  ctx->arena_offsets = arena_offsets;
  arena_offsets = nullptr;  // the context's now
  ctx->magic = kContextMagic;
  ctx->model = model;
  ++model->live_contexts;
  *out_context = ctx;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_context_destroy(aotc_context* context) {
  if (!context) return AOTC_OK;
  if (context->magic != kContextMagic)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "context is not a live aotc_context (destroyed or garbage)");
  if (context->busy.load())
    return fail(AOTC_ERR_INVALID_ARGUMENT, "context is running on another thread; destroy it after the run");
  context->magic = 0;
  if (context->device_state) context->model->desc->device->context_destroy(context->device_state);
  --context->model->live_contexts;
  delete context->pool;
  if (context->owns_arena) std::free(context->arena);
  std::free(context->input_ptrs);
  std::free(context->output_ptrs);
  std::free(context->output_dims);
  std::free(context->arena_offsets);
  delete context;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_run(const aotc_model* model, aotc_context* context, const aotc_tensor* inputs,
                              size_t num_inputs, aotc_tensor* outputs, size_t num_outputs) {
  if (aotc_status s = check_model(model)) return s;
  if (!context) return fail(AOTC_ERR_NULL_POINTER, "context is NULL");
  if (context->magic != kContextMagic)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "context is not a live aotc_context (destroyed or garbage)");
  if (context->model != model) return fail(AOTC_ERR_WRONG_MODEL, "context was created for another model");
  if (context->busy.exchange(true, std::memory_order_acquire))
    return fail(AOTC_ERR_INVALID_ARGUMENT,
                "context is already running on another thread: use one context per thread");
  struct Release {
    aotc_context* context;
    ~Release() { context->busy.store(false, std::memory_order_release); }
  } release{context};
  const aotc::rt::ModelDesc* desc = model->desc;
  if (num_inputs != desc->num_inputs)
    return fail(AOTC_ERR_WRONG_COUNT, "expected %zu inputs, got %zu", desc->num_inputs, num_inputs);
  if (num_outputs != desc->num_outputs)
    return fail(AOTC_ERR_WRONG_COUNT, "expected %zu outputs, got %zu", desc->num_outputs, num_outputs);
  if (num_inputs && !inputs) return fail(AOTC_ERR_NULL_POINTER, "inputs is NULL");
  if (num_outputs && !outputs) return fail(AOTC_ERR_NULL_POINTER, "outputs is NULL");
  int64_t(*const out_dims)[AOTC_MAX_RANK] = context->output_dims + num_outputs;  // this run's
  if (desc->dynamic) {
    if (aotc_status s = resolve_dims(*desc, inputs, context->dims, out_dims)) return s;
    if (aotc_status s = check_limits(*desc, context->limits, context->dims)) return s;
    for (size_t i = 0; i < num_inputs; ++i) {
      aotc::rt::TensorDesc actual = desc->inputs[i];
      for (int32_t d = 0; d < actual.rank; ++d) actual.dims[d] = inputs[i].dims[d];
      if (aotc_status s = check_tensor("input", i, actual, dense_bytes(actual), inputs[i])) return s;
      context->input_ptrs[i] = inputs[i].data;
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      if (aotc_status s = check_dynamic_output(*desc, i, out_dims[i], outputs[i])) return s;
      context->output_ptrs[i] = outputs[i].data;
    }
  } else {
    for (size_t i = 0; i < num_inputs; ++i) {
      if (aotc_status s = check_tensor("input", i, desc->inputs[i], model->input_bytes[i], inputs[i]))
        return s;
      context->input_ptrs[i] = inputs[i].data;
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      if (aotc_status s = check_tensor("output", i, desc->outputs[i], model->output_bytes[i], outputs[i]))
        return s;
      context->output_ptrs[i] = outputs[i].data;
    }
  }
  for (size_t i = 0; i < num_inputs + num_outputs; ++i) {
    const bool is_input = i < num_inputs;
    const aotc_tensor& t = is_input ? inputs[i] : outputs[i - num_inputs];
    const size_t index = is_input ? i : i - num_inputs;
    if (t.memory != AOTC_MEMORY_HOST && t.memory != AOTC_MEMORY_DEVICE)
      return fail(AOTC_ERR_INVALID_ARGUMENT, "%s %zu: memory is %llu, not an aotc_memory_kind",
                  is_input ? "input" : "output", index, static_cast<unsigned long long>(t.memory));
    if (t.memory == AOTC_MEMORY_DEVICE && !desc->device)
      return fail(
          AOTC_ERR_INVALID_ARGUMENT,
          "%s %zu: memory is AOTC_MEMORY_DEVICE, but this model runs on the CPU and reads host memory",
          is_input ? "input" : "output", index);
  }
  if (desc->device) {
    // The device copies only this run's bytes of each input and output (out_dims).
    try {
      if (aotc_status s =
              desc->device->run(context->device_state, inputs, outputs,
                                desc->dynamic ? context->dims : nullptr, desc->dynamic ? out_dims : nullptr))
        return s;
    } catch (...) {
      return fail(AOTC_ERR_INTERNAL, "unexpected exception while running the model");
    }
  } else {
    aotc::rt::RunArgs args{context->input_ptrs,
                           context->output_ptrs,
                           context->arena,
                           model->weights,
                           context->pool,
                           desc->dynamic ? context->dims : nullptr,
                           desc->dynamic ? context->arena_offsets : nullptr};
    try {
      desc->run(args);
    } catch (...) {
      return fail(AOTC_ERR_INTERNAL, "unexpected exception while running the model");
    }
  }
  // A successful run, on either side: aotc_context_output_dims reports its shapes.
  if (desc->dynamic) std::memcpy(context->output_dims, out_dims, num_outputs * sizeof *out_dims);
  return AOTC_OK;
}

namespace {

aotc_status dim_range(const aotc_model* model, bool is_input, size_t index, int32_t dim,
                      aotc_dim_range* out) {
  if (aotc_status s = check_model(model)) return s;
  if (!out) return fail(AOTC_ERR_NULL_POINTER, "out_range is NULL");
  const aotc::rt::ModelDesc& desc = *model->desc;
  const size_t count = is_input ? desc.num_inputs : desc.num_outputs;
  const char* role = is_input ? "input" : "output";
  if (index >= count)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "%s index %zu out of range: the model has %zu %ss", role, index,
                count, role);
  const aotc::rt::TensorDesc& t = is_input ? desc.inputs[index] : desc.outputs[index];
  if (dim < 0 || dim >= t.rank)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "%s %zu ('%s') has rank %d: no dim %d", role, index, t.name,
                t.rank, dim);
  std::memset(out, 0, sizeof *out);
  out->min = out->max = t.dims[dim];
  out->multiple_of = 1;
  if (!desc.dynamic) return AOTC_OK;
  const aotc::rt::DynamicDesc& dyn = *desc.dynamic;
  if (is_input) {
    const int32_t symbol = dyn.input_dims[index][dim];
    if (symbol < 0) return AOTC_OK;
    const aotc::rt::DimDesc& named = dyn.dims[symbol];
    out->name = named.name;
    out->min = named.min;
    out->max = named.max;
    out->multiple_of = named.multiple_of;
    return AOTC_OK;
  }
  out->name = dyn.output_dim_names[index][dim];
  if (!out->name) return AOTC_OK;
  // An output's size grows with the named dims: its extremes are at theirs.
  int64_t sizes[aotc::rt::kMaxNamedDims];
  int64_t(*dims)[AOTC_MAX_RANK] = static_cast<int64_t(*)[AOTC_MAX_RANK]>(
      std::calloc(desc.num_outputs + 1, sizeof(int64_t[AOTC_MAX_RANK])));
  if (!dims) return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory");
  for (size_t k = 0; k < dyn.num_dims; ++k)
    sizes[k] =
        (dyn.dims[k].min + dyn.dims[k].multiple_of - 1) / dyn.dims[k].multiple_of * dyn.dims[k].multiple_of;
  dyn.output_dims(sizes, dims);
  out->min = dims[index][dim];
  for (size_t k = 0; k < dyn.num_dims; ++k)
    sizes[k] = dyn.dims[k].max / dyn.dims[k].multiple_of * dyn.dims[k].multiple_of;
  dyn.output_dims(sizes, dims);
  out->max = dims[index][dim];
  std::free(dims);
  return AOTC_OK;
}

}  // namespace

AOTC_API aotc_status aotc_model_input_dim_range(const aotc_model* model, size_t index, int32_t dim,
                                                aotc_dim_range* out_range) {
  return dim_range(model, true, index, dim, out_range);
}

AOTC_API aotc_status aotc_model_output_dim_range(const aotc_model* model, size_t index, int32_t dim,
                                                 aotc_dim_range* out_range) {
  return dim_range(model, false, index, dim, out_range);
}

AOTC_API aotc_status aotc_model_output_dims(const aotc_model* model, const aotc_tensor* inputs,
                                            size_t num_inputs, size_t index, int64_t* out_dims) {
  if (aotc_status s = check_model(model)) return s;
  const aotc::rt::ModelDesc& desc = *model->desc;
  if (index >= desc.num_outputs)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "output index %zu out of range: the model has %zu outputs", index,
                desc.num_outputs);
  if (!out_dims && desc.outputs[index].rank > 0) return fail(AOTC_ERR_NULL_POINTER, "out_dims is NULL");
  if (num_inputs != desc.num_inputs)
    return fail(AOTC_ERR_WRONG_COUNT, "expected %zu inputs, got %zu", desc.num_inputs, num_inputs);
  if (num_inputs && !inputs) return fail(AOTC_ERR_NULL_POINTER, "inputs is NULL");
  const aotc::rt::TensorDesc& out = desc.outputs[index];
  if (!desc.dynamic) {
    for (size_t i = 0; i < num_inputs; ++i) {
      aotc_tensor shape_only = inputs[i];  // only rank and dims are read
      shape_only.data = nullptr;
      shape_only.size_bytes = 0;
      shape_only.dtype = desc.inputs[i].dtype;
      if (aotc_status s = check_tensor("input", i, desc.inputs[i], 0, shape_only)) return s;
    }
    for (int32_t d = 0; d < out.rank; ++d) out_dims[d] = out.dims[d];
    return AOTC_OK;
  }
  int64_t sizes[aotc::rt::kMaxNamedDims];
  int64_t(*dims)[AOTC_MAX_RANK] = static_cast<int64_t(*)[AOTC_MAX_RANK]>(
      std::calloc(desc.num_outputs + 1, sizeof(int64_t[AOTC_MAX_RANK])));
  if (!dims) return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory");
  aotc_status s = resolve_dims(desc, inputs, sizes, dims);
  if (s == AOTC_OK)
    for (int32_t d = 0; d < out.rank; ++d) out_dims[d] = dims[index][d];
  std::free(dims);
  return s;
}

AOTC_API aotc_status aotc_context_output_dims(const aotc_context* context, size_t index, int64_t* out_dims) {
  if (!context) return fail(AOTC_ERR_NULL_POINTER, "context is NULL");
  if (context->magic != kContextMagic)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "context is not a live aotc_context (destroyed or garbage)");
  const aotc::rt::ModelDesc& desc = *context->model->desc;
  if (index >= desc.num_outputs)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "output index %zu out of range: the model has %zu outputs", index,
                desc.num_outputs);
  if (!out_dims && desc.outputs[index].rank > 0) return fail(AOTC_ERR_NULL_POINTER, "out_dims is NULL");
  for (int32_t d = 0; d < desc.outputs[index].rank; ++d) out_dims[d] = context->output_dims[index][d];
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_device(aotc_device_type* out_device) {
  if (!out_device) return fail(AOTC_ERR_NULL_POINTER, "out_device is NULL");
  const aotc::rt::ModelDesc* desc = aotc_internal_model_desc();
  *out_device = desc && desc->device ? desc->device->device : AOTC_DEVICE_CPU;
  return AOTC_OK;
}

namespace {
aotc_status check_cuda_context(const aotc_context* context) {
  if (!context) return fail(AOTC_ERR_NULL_POINTER, "context is NULL");
  if (context->magic != kContextMagic)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "context is not a live aotc_context (destroyed or garbage)");
  const aotc::rt::DeviceHooks* device = context->model->desc->device;
  if (!device || device->device != AOTC_DEVICE_CUDA)
    return fail(AOTC_ERR_INVALID_ARGUMENT, "this model runs on the CPU: it has no CUDA stream");
  return AOTC_OK;
}
}  // namespace

AOTC_API aotc_status aotc_context_set_cuda_stream(aotc_context* context, void* cuda_stream) {
  if (aotc_status s = check_cuda_context(context)) return s;
  if (context->busy.exchange(true, std::memory_order_acquire))
    return fail(AOTC_ERR_INVALID_ARGUMENT,
                "context is running on another thread: set its stream between runs");
  const aotc_status s = context->model->desc->device->set_stream(context->device_state, cuda_stream);
  context->busy.store(false, std::memory_order_release);
  return s;
}

AOTC_API aotc_status aotc_context_cuda_stream(const aotc_context* context, void** out_cuda_stream) {
  if (aotc_status s = check_cuda_context(context)) return s;
  if (!out_cuda_stream) return fail(AOTC_ERR_NULL_POINTER, "out_cuda_stream is NULL");
  *out_cuda_stream = context->model->desc->device->stream(context->device_state);
  return AOTC_OK;
}

}  // extern "C"

#if defined(__GLIBCXX__)
// Model .so files link libstdc++ statically; its emergency exception pool would leak on
// every dlclose of a model. Free it when the library is unloaded.
namespace __gnu_cxx {
void __freeres() noexcept;
}
namespace {
__attribute__((destructor)) void free_libstdcxx_emergency_pool() { __gnu_cxx::__freeres(); }
}  // namespace
#endif
