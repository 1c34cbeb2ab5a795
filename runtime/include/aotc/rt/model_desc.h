// model_desc.h - the contract between generated model code and the runtime library.
// Internal: not part of the C ABI. Generated code defines aotc_internal_model_desc();
// the runtime's ABI functions (runtime/src/abi.cpp) read it.
#pragma once

#include <aotc/aotc.h>
#include <cstddef>
#include <cstdint>

namespace aotc::rt {

class ThreadPool;
struct ModelDesc;

// What the C ABI decided for a new context: the activation bytes its arena holds and, for
// a model with dynamic dims, the arena's offsets (RunArgs::arena_offsets), the largest
// size of each named dim it runs at (aotc_context_options.dim_limits) and every output's
// dims at those (nullptr without dynamic dims).
struct ContextPlan {
  uint64_t activation_bytes;
  const int64_t* arena_offsets;
  const int64_t* limits;
  const int64_t (*largest_output_dims)[AOTC_MAX_RANK];
};

// The device half of the runtime for models that do not run on the CPU (aotc --target
// cuda: runtime/cuda/). The C ABI (runtime/src/abi.cpp) validates every call as for a
// CPU model, then hands over through these hooks, so the CPU runtime needs no CUDA.
// Each hook reports failures with rt::fail (a status and the thread's last error).
struct DeviceHooks {
  aotc_device_type device;
  // Uploads the weights (host bytes, weights_bytes of them) once; *state is the model's.
  aotc_status (*model_create)(const ModelDesc& desc, const unsigned char* weights, void** state);
  void (*model_destroy)(void* state);
  // stream: the caller's (aotc_context_options.cuda_stream) or nullptr for the context's own.
  // graph_cache: aotc_context_options.cuda_graph_cache, checked not negative (0: the default);
  // how many graphs a model with dynamic dims keeps, one per shape.
  aotc_status (*context_create)(const ModelDesc& desc, void* model_state, void* stream, int32_t graph_cache,
                                const ContextPlan& plan, void** state);
  void (*context_destroy)(void* state);
  aotc_status (*set_stream)(void* state, void* stream);
  void* (*stream)(const void* state);
  // Inputs and outputs are validated (dtype, shape, size, memory kind) before this. A model
  // with dynamic dims: dims are this run's sizes of the named dims (DynamicDesc::dims order)
  // and out_dims every output's dims at them, both checked (inputs' dims are their actual
  // shapes); nullptr for a model without dynamic dims.
  aotc_status (*run)(void* state, const aotc_tensor* inputs, const aotc_tensor* outputs, const int64_t* dims,
                     const int64_t (*out_dims)[AOTC_MAX_RANK]);
};

struct TensorDesc {
  const char* name;
  aotc_dtype dtype;
  int32_t rank;
  int64_t dims[AOTC_MAX_RANK];
};

// Everything one run needs; pointers are already validated by the runtime.
struct RunArgs {
  const void* const* inputs;     // one per model input, dense row-major
  void* const* outputs;          // one per model output, dense row-major
  unsigned char* arena;          // arena_bytes, 64-byte aligned
  const unsigned char* weights;  // weights_bytes, 64-byte aligned
  ThreadPool* pool;
  // A model with dynamic dims: the size of each named dim in this run (DynamicDesc::dims
  // order), checked against its range; nullptr for a model without them.
  const int64_t* dims = nullptr;
  // A model with dynamic dims: the context's arena offsets (place_arena), every bucket's
  // table one after the other; nullptr for a model without them.
  const int64_t* arena_offsets = nullptr;
};

// At most this many named dims per model (aotc refuses more).
constexpr size_t kMaxNamedDims = 8;

// A named dim of a model compiled with aotc --dim NAME=MIN..MAX.
struct DimDesc {
  const char* name;
  int64_t min;
  int64_t max;
  int64_t multiple_of;       // 1, or the step an op needs (a view splitting the dim evenly)
  const char* multiple_why;  // the op that needs it, for the error message ("" when 1)
};

// One buffer of a bucket's arena (ArenaPlan): alive from op `first` to op `last`
// inclusive, `size` bytes at the bucket's largest sizes.
struct ArenaBuffer {
  int32_t first;
  int32_t last;
  int64_t size;
};

// The arena of one bucket of a model with dynamic dims (the sizes one generated run
// function serves), which each context places for its own largest sizes
// (aotc_context_options.dim_limits; runtime/src/place_arena.cpp). The generated code reads
// buffer k's offset from the context's table (RunArgs::arena_offsets), this bucket's part.
struct ArenaPlan {
  const int64_t* min_dims;  // the bucket's smallest and largest size of each named dim
  const int64_t* max_dims;
  const ArenaBuffer* buffers;  // in the order of their offsets in aotc's plan at max_dims
  size_t num_buffers;
  // Each buffer's bytes at these sizes of the named dims (a buffer's size at the largest
  // sizes a context allows holds it at every smaller one).
  void (*sizes)(const int64_t* dims, int64_t* sizes);
};

// What a model with dynamic dims adds to its ModelDesc. TensorDesc dims of inputs and
// outputs hold the largest shape (what arena and buffers are sized for).
struct DynamicDesc {
  const DimDesc* dims;
  size_t num_dims;
  // Per input, per dim: the index of its named dim, or -1 for a fixed size.
  const int32_t (*input_dims)[AOTC_MAX_RANK];
  // Per output, per dim: its size in the named dims ("B*S"), or nullptr for a fixed size.
  const char* const (*output_dim_names)[AOTC_MAX_RANK];
  // Fills out[output][dim] with every output's dims for the given dim sizes.
  void (*output_dims)(const int64_t* dims, int64_t (*out)[AOTC_MAX_RANK]);
  // The buckets' arenas; their offsets, num_arena_offsets in all, are the context's.
  const ArenaPlan* arena_plans;
  size_t num_arena_plans;
  size_t num_arena_offsets;
};

struct ModelDesc {
  uint32_t abi_version;  // AOTC_ABI_VERSION the model code was generated for
  const TensorDesc* inputs;
  size_t num_inputs;
  const TensorDesc* outputs;
  size_t num_outputs;
  uint64_t arena_bytes;
  const unsigned char* weights;  // nullptr when weights_external
  uint64_t weights_bytes;
  void (*run)(const RunArgs& args);
  // Kernel scratch each thread of a context's pool owns (ThreadPool::thread_scratch),
  // after the arena: the context holds arena_bytes + threads * thread_scratch_bytes.
  uint64_t thread_scratch_bytes;
  // The weights are not in the library but in a file written beside it (aotc --weights
  // file), or a caller's buffer: aotc_model_create_v2 maps or takes them and checks them
  // against weights_bytes and weights_checksum.
  bool weights_external;
  uint64_t weights_checksum;  // weights_checksum() of the weights_bytes bytes
  // Models for a device (aotc --target cuda): its hooks and what they read of the model
  // (runtime/cuda: a CudaModelDesc). nullptr: a CPU model, which runs through run().
  // With a device, arena_bytes is the device arena of each context.
  const DeviceHooks* device = nullptr;
  const void* device_desc = nullptr;
  // The version of the aotc that generated the model code (aotc --version without the
  // "aotc "), reported by aotc_compiler_version; nullptr in hand-written model code.
  const char* aotc_version = nullptr;
  // Models compiled with named dims (aotc --dim); nullptr: every shape is fixed.
  const DynamicDesc* dynamic = nullptr;
};

// Alignment of the weights blob (and of a caller's weights buffer) and of the arena.
constexpr uint64_t kWeightsAlignment = 64;

// The checksum aotc records for a model's weights, reported by aotc_model_weights_info:
// FNV-1a 64 over the bytes taken as little-endian 64-bit words (the last one padded
// with zero bytes), i.e. h = 0xcbf29ce484222325; for each word w: h = (h ^ w) * 0x100000001b3.
// Word-wise so that checking a large file at create costs little next to reading it.
inline uint64_t weights_checksum(const unsigned char* data, uint64_t size) {
  uint64_t h = 0xcbf29ce484222325ULL;
  uint64_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w = 0;
    for (int b = 0; b < 8; ++b) w |= static_cast<uint64_t>(data[i + b]) << (8 * b);
    h = (h ^ w) * 0x100000001b3ULL;
  }
  if (i < size) {
    uint64_t w = 0;
    for (int b = 0; i + b < size; ++b) w |= static_cast<uint64_t>(data[i + b]) << (8 * b);
    h = (h ^ w) * 0x100000001b3ULL;
  }
  return h;
}

}  // namespace aotc::rt

// Defined by the generated model code, hidden inside the model .so.
extern "C" const aotc::rt::ModelDesc* aotc_internal_model_desc(void);
