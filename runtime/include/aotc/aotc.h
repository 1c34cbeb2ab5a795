/*
 * aotc.h - the C ABI of every model shared library built by aotc.
 *
 * A model .so exports exactly the functions declared here (and nothing else).
 * Rules that keep this ABI trustworthy:
 *   - C only; every function returns an aotc_status; no exception ever crosses it.
 *   - aotc_last_error() gives a thread-local message for the last failing call.
 *   - Structs have reserved fields that must be zero; any incompatible change gets a
 *     new function with a _v2 suffix and AOTC_ABI_VERSION is bumped.
 *   - Additions that leave every existing function and struct layout as it was (new
 *     functions; reserved fields given a name and a meaning for non-zero values) raise
 *     AOTC_ABI_MINOR_VERSION only, so programs built for an older minor version keep
 *     working. A library without aotc_abi_minor_version is minor version 0.
 *   - A model (weights, immutable) can be shared by many threads; each thread runs
 *     through its own context (activation arena, scratch, thread pool).
 *   - Inputs are validated on every run: count, dtype, rank, dims, null pointers, sizes.
 *   - A run allocates no memory: the weights are bound at model creation, the arena and
 *     threads at context creation (either may be memory the caller provides). The one
 *     exception: a CUDA model with dynamic dims captures a CUDA graph in its first run at
 *     each new shape (aotc_context_options.cuda_graph_cache).
 */
#ifndef AOTC_AOTC_H
#define AOTC_AOTC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define AOTC_API __declspec(dllexport)
#else
#define AOTC_API __attribute__((visibility("default")))
#endif

/* Version of this header's ABI; compare with aotc_abi_version() from a loaded model. */
#define AOTC_ABI_VERSION 1u
/* Compatible additions to version 1 (compare with aotc_abi_minor_version()):
 *   1: external weights (aotc_model_weights_info, aotc_model_create_v2), caller-provided
 *      arenas (aotc_context_options.arena, aotc_model_arena_requirements).
 *   2: CUDA models (aotc --target cuda): aotc_model_device, tensors in device memory
 *      (aotc_tensor.memory), a CUDA stream per context (aotc_context_options.cuda_stream,
 *      aotc_context_set_cuda_stream, aotc_context_cuda_stream).
 *   3: versions: aotc_runtime_version, aotc_compiler_version.
 *   4: dynamic shapes (aotc --dim): aotc_model_input_dim_range,
 *      aotc_model_output_dim_range, aotc_model_output_dims, aotc_context_output_dims.
 *   5: CUDA models with dynamic dims: a CUDA graph per distinct shape, kept in a cache
 *      per context whose size is aotc_context_options.cuda_graph_cache.
 *   6: a context of a model with dynamic dims for smaller sizes than the model's largest,
 *      with a smaller arena: aotc_context_options.dim_limits,
 *      aotc_model_arena_requirements_v2. */
#define AOTC_ABI_MINOR_VERSION 6u
#define AOTC_MAX_RANK 8
/* Alignment of a caller's weights buffer and of a caller's arena, in bytes. */
#define AOTC_MEMORY_ALIGNMENT 64u

/* In C++ an enum without a fixed type may not hold values outside its enumerators, and
 * a C caller can pass any int: give the enums a fixed 32-bit type there (same ABI). */
#ifdef __cplusplus
#define AOTC_ENUM_BASE : int32_t
#else
#define AOTC_ENUM_BASE
#endif

typedef enum aotc_status AOTC_ENUM_BASE {
  AOTC_OK = 0,
  /* The caller passed something wrong: fix the call. */
  AOTC_ERR_NULL_POINTER = 1,
  AOTC_ERR_INVALID_ARGUMENT = 2,
  AOTC_ERR_WRONG_COUNT = 3,
  AOTC_ERR_WRONG_DTYPE = 4,
  AOTC_ERR_WRONG_SHAPE = 5,
  AOTC_ERR_BUFFER_TOO_SMALL = 6,
  AOTC_ERR_WRONG_MODEL = 7,
  AOTC_ERR_ABI_MISMATCH = 8,
  /* The system could not give what was needed. */
  AOTC_ERR_OUT_OF_MEMORY = 20,
  AOTC_ERR_SYSTEM = 21,
  /* A bug in aotc: please report it with the message. */
  AOTC_ERR_INTERNAL = 30
} aotc_status;

typedef enum aotc_dtype AOTC_ENUM_BASE {
  AOTC_DTYPE_FLOAT32 = 1,
  AOTC_DTYPE_FLOAT16 = 2,
  AOTC_DTYPE_BFLOAT16 = 3,
  AOTC_DTYPE_INT64 = 4,
  AOTC_DTYPE_INT32 = 5,
  AOTC_DTYPE_BOOL = 6
} aotc_dtype;

typedef struct aotc_model aotc_model;
typedef struct aotc_context aotc_context;

/* Minor version 2: what a model library runs on (aotc_model_device). */
typedef enum aotc_device_type AOTC_ENUM_BASE {
  AOTC_DEVICE_CPU = 0, /* aotc's default target: the host's CPU */
  AOTC_DEVICE_CUDA = 1 /* aotc --target cuda: an NVIDIA GPU through the CUDA runtime */
} aotc_device_type;

/* Minor version 2: where the bytes of a caller's tensor live (aotc_tensor.memory). */
typedef enum aotc_memory_kind AOTC_ENUM_BASE {
  /* Host memory, the old meaning of a zero field. A CUDA model copies such inputs to the
   * GPU and such outputs back, and aotc_run returns once they are in place. */
  AOTC_MEMORY_HOST = 0,
  /* CUDA device memory (cudaMalloc) of the device current when the context was created;
   * CUDA models only. If every input and output is in device memory, aotc_run only
   * enqueues the work on the context's stream and returns: synchronise that stream
   * (aotc_context_cuda_stream) before reading the outputs, and keep the inputs unchanged
   * until then. */
  AOTC_MEMORY_DEVICE = 1
} aotc_memory_kind;

/* Description of one input or output. Pointers stay valid while the model lives. */
typedef struct aotc_tensor_info {
  const char* name;
  aotc_dtype dtype;
  int32_t rank;
  const int64_t* dims; /* rank entries */
  uint64_t size_bytes; /* bytes of a dense row-major buffer of this tensor */
  uint64_t reserved[4];
} aotc_tensor_info;

/* A caller-owned dense row-major tensor passed to aotc_run. */
typedef struct aotc_tensor {
  void* data;
  aotc_dtype dtype;
  int32_t rank;
  const int64_t* dims; /* rank entries */
  uint64_t size_bytes; /* bytes available at data */
  /* Minor version 2: an aotc_memory_kind, where data points (0: host memory, as before).
   * (memory took the place of the first of four zero reserved words.) */
  uint64_t memory;
  uint64_t reserved[3]; /* must be zero */
} aotc_tensor;

/* Minor version 6: the largest size of a named dim that a context runs at
 * (aotc_context_options.dim_limits). */
typedef struct aotc_dim_limit {
  const char* name;     /* a named dim of the model, as aotc_dim_range.name gives it ("S") */
  int64_t max;          /* at least the dim's smallest valid size, at most its largest */
  uint64_t reserved[2]; /* must be zero */
} aotc_dim_limit;

typedef struct aotc_context_options {
  /* Threads a run may use, the calling thread included; 0 means 1. */
  int32_t num_threads;
  /* Minor version 5: a CUDA model with named dims (aotc --dim) captures a CUDA graph per
   * distinct shape on its first run at that shape and keeps the most recently used ones
   * (a shape that repeats replays its graph; one evicted is captured again); this is how
   * many it keeps. 0: the default, 8. Negative fails with AOTC_ERR_INVALID_ARGUMENT.
   * Other models ignore it (a CUDA model without named dims has one graph, captured at
   * aotc_context_create). (cuda_graph_cache took the place of the first of three zero
   * reserved words.) */
  int32_t cuda_graph_cache;
  /* Minor version 6: how many entries dim_limits has (0: none). */
  int32_t num_dim_limits;
  int32_t reserved_i[1]; /* must be zero */
  /* Minor version 1: memory the context uses as its arena (activations and each
   * thread's kernel scratch) instead of allocating one. It must hold at least the
   * bytes aotc_model_arena_requirements gives for num_threads, be aligned to
   * AOTC_MEMORY_ALIGNMENT, and stay valid and unused by anything else until
   * aotc_context_destroy (which does not free it). NULL with arena_size 0: the context
   * allocates its own arena. A smaller or misaligned arena, or NULL with a size, fails.
   * (arena and arena_size took the place of the first two of four zero reserved words:
   * the struct's size and layout are those of version 1 on the 64-bit targets.) */
  void* arena;
  uint64_t arena_size;
  /* Minor version 2, CUDA models only: the cudaStream_t the context's runs go on. NULL:
   * the context's own non-blocking stream (created and destroyed with it); for CUDA's
   * legacy default stream pass cudaStreamLegacy ((void*)1), not NULL. A CUDA model's
   * arena is device memory the context allocates: arena must be NULL there. (cuda_stream
   * took the place of the third zero reserved word.) */
  void* cuda_stream;
  /* Minor version 6, models with dynamic dims: the context runs at sizes of these dims up
   * to the given maxima only (a run above one fails with AOTC_ERR_WRONG_SHAPE), and its
   * arena (on a CUDA model also its device buffers) is placed for them: smaller than the
   * model's (aotc_model_arena_requirements_v2 says how large). A dim not named keeps the
   * model's largest size. An unknown or repeated name, a maximum outside the dim's range,
   * or limits for a model without named dims fail with AOTC_ERR_INVALID_ARGUMENT.
   * (num_dim_limits took the place of the second of three zero reserved int32s, dim_limits
   * of the last zero reserved word.) */
  const aotc_dim_limit* dim_limits;
} aotc_context_options;

/* Where a model's weights live (aotc_weights_info.location). */
typedef enum aotc_weights_location AOTC_ENUM_BASE {
  /* Inside the model library (aotc --weights embed, the default): aotc_model_create. */
  AOTC_WEIGHTS_EMBEDDED = 0,
  /* In a separate file written beside the library (aotc --weights file: MODEL.weights
   * for MODEL.so): aotc_model_create_v2 with the file or the bytes in memory. */
  AOTC_WEIGHTS_EXTERNAL = 1
} aotc_weights_location;

/* What a model needs as weights, known before creating it (aotc_model_weights_info). */
typedef struct aotc_weights_info {
  aotc_weights_location location;
  uint32_t alignment;  /* a caller's weights buffer must be aligned to this (64) */
  uint64_t size_bytes; /* exact size of the weights file or buffer */
  /* FNV-1a 64 of the weights as little-endian 64-bit words, the last one zero-padded:
   * h = 0xcbf29ce484222325, then for each word w: h = (h ^ w) * 0x100000001b3. */
  uint64_t checksum;
  uint64_t reserved[4];
} aotc_weights_info;

/* Options of aotc_model_create_v2; zero-initialise, then set what you need. For a model
 * with external weights, give exactly one of weights_path and weights_data. Their size
 * and checksum are checked against the model's (aotc_weights_info) at create. */
typedef struct aotc_model_options {
  /* The weights file, mapped read-only (never copied) until aotc_model_destroy. Do not
   * truncate or rewrite it in place meanwhile; replacing it by rename (as aotc does)
   * leaves the mapped file intact. */
  const char* weights_path;
  /* Or the weights already in memory (flash, shared memory, a file the caller mapped):
   * weights_size bytes, aligned to AOTC_MEMORY_ALIGNMENT, used in place (never copied
   * or written); they must stay valid and unchanged until aotc_model_destroy. */
  const void* weights_data;
  uint64_t weights_size;
  uint64_t reserved[5]; /* must be zero */
} aotc_model_options;

/* The ABI version the library was built with (AOTC_ABI_VERSION of its header). */
AOTC_API uint32_t aotc_abi_version(void);

/* Minor version 1: the compatible additions the library has (AOTC_ABI_MINOR_VERSION of
 * its header). Absent from libraries of minor version 0. */
AOTC_API uint32_t aotc_abi_minor_version(void);

/* Minor version 3: the version of the aotc runtime linked into this library, its semantic
 * version, e.g. "0.1.0". Never NULL; a static string. Absent from libraries of minor
 * version 2 and older (built before aotc recorded versions). */
AOTC_API const char* aotc_runtime_version(void);

/* Minor version 3: the version of the aotc compiler that generated this library's model
 * code, as aotc --version prints it without the "aotc ": the semantic version, then git
 * describe where aotc was built from a git checkout, e.g. "0.1.0 (git v0.1.0-12-gabc1234)"
 * or "0.1.0". Never NULL; a static string; "" for model code that aotc did not generate. */
AOTC_API const char* aotc_compiler_version(void);

/* Message of the last failed call on this thread ("" when none). Never NULL. */
AOTC_API const char* aotc_last_error(void);

/* Name of a status code, e.g. "AOTC_ERR_WRONG_SHAPE". Never NULL. */
AOTC_API const char* aotc_status_name(aotc_status status);

/* Size in bytes of one element of dtype, 0 for an unknown dtype. */
AOTC_API size_t aotc_dtype_size(aotc_dtype dtype);

/* Name of a dtype, e.g. "float32"; "unknown" for an unknown dtype. */
AOTC_API const char* aotc_dtype_name(aotc_dtype dtype);

/* Creates the model: binds the weights embedded in this library. A model whose weights
 * are external fails (AOTC_ERR_INVALID_ARGUMENT): use aotc_model_create_v2. */
AOTC_API aotc_status aotc_model_create(aotc_model** out_model);

/* Minor version 1: where this library's weights live, their size, checksum and the
 * alignment a buffer of them needs; callable before any model exists. */
AOTC_API aotc_status aotc_model_weights_info(aotc_weights_info* out_info);

/* Minor version 1: creates the model with options (NULL: like aotc_model_create).
 * External weights come from options->weights_path (mapped read-only, unmapped at
 * aotc_model_destroy) or options->weights_data (used in place). Fails with a message
 * naming the file or buffer when it is missing or unreadable (AOTC_ERR_SYSTEM), or its
 * size or checksum is not the model's, a buffer is misaligned, both or neither are
 * given, weights are given to a model that embeds its own, or a reserved field is not
 * zero (AOTC_ERR_INVALID_ARGUMENT). */
AOTC_API aotc_status aotc_model_create_v2(const aotc_model_options* options, aotc_model** out_model);
/* Fails (AOTC_ERR_INVALID_ARGUMENT) while contexts of the model are alive. NULL is a no-op. */
AOTC_API aotc_status aotc_model_destroy(aotc_model* model);

AOTC_API aotc_status aotc_model_num_inputs(const aotc_model* model, size_t* out_count);
AOTC_API aotc_status aotc_model_num_outputs(const aotc_model* model, size_t* out_count);
AOTC_API aotc_status aotc_model_input_info(const aotc_model* model, size_t index, aotc_tensor_info* out_info);
AOTC_API aotc_status aotc_model_output_info(const aotc_model* model, size_t index,
                                            aotc_tensor_info* out_info);
/* Bytes of activation memory each context holds for a run. Each thread of a context
 * also holds kernel scratch: aotc_model_arena_requirements gives the whole. */
AOTC_API aotc_status aotc_model_arena_size(const aotc_model* model, uint64_t* out_bytes);
/* Minor version 1: the memory a context with num_threads threads (0 means 1) holds for
 * a run, activations and kernel scratch together, and its alignment: what a caller's
 * arena (aotc_context_options.arena) must provide. out_alignment may be NULL. */
AOTC_API aotc_status aotc_model_arena_requirements(const aotc_model* model, int32_t num_threads,
                                                   uint64_t* out_bytes, uint64_t* out_alignment);

/* Minor version 6: as aotc_model_arena_requirements, for a context created with these
 * options (num_threads and dim_limits are read; NULL: the defaults); fails as
 * aotc_context_create would for invalid ones. */
AOTC_API aotc_status aotc_model_arena_requirements_v2(const aotc_model* model,
                                                      const aotc_context_options* options,
                                                      uint64_t* out_bytes, uint64_t* out_alignment);

/* A context owns the activation arena and worker threads of one runner thread: it runs
 * one aotc_run at a time (a second concurrent call on it fails with
 * AOTC_ERR_INVALID_ARGUMENT). options may be NULL for defaults. The arena is allocated
 * here, or is the caller's (options->arena); the run itself allocates nothing. */
AOTC_API aotc_status aotc_context_create(aotc_model* model, const aotc_context_options* options,
                                         aotc_context** out_context);
AOTC_API aotc_status aotc_context_destroy(aotc_context* context);

/* Minor version 2: the device this library's model runs on; callable before any model
 * exists. A CUDA model's aotc_model_create uploads the weights to the current CUDA
 * device once (it fails with AOTC_ERR_SYSTEM and CUDA's message where there is none). */
AOTC_API aotc_status aotc_model_device(aotc_device_type* out_device);

/* Minor version 2, CUDA models only (AOTC_ERR_INVALID_ARGUMENT otherwise): the stream a
 * context's runs go on, and replacing it (NULL: back to the context's own stream). The
 * caller keeps a stream it gives alive until it replaces it or destroys the context. */
AOTC_API aotc_status aotc_context_set_cuda_stream(aotc_context* context, void* cuda_stream);
AOTC_API aotc_status aotc_context_cuda_stream(const aotc_context* context, void** out_cuda_stream);

/* Minor version 4: dynamic shapes. A model compiled with named dims (aotc --input
 * ids:BxS:int64 --dim B=1..32 --dim S=1..512) runs at any size of them in range.
 * aotc_model_input_info and aotc_model_output_info report -1 for such a dim, and
 * size_bytes for the largest shape. */
typedef struct aotc_dim_range {
  const char* name;    /* an input's dim: its name ("S"); an output's: its size in the named
                          dims ("S", "B*S"); NULL for a dim of fixed size */
  int64_t min;         /* smallest valid size (min == max for a fixed dim) */
  int64_t max;         /* largest valid size */
  int64_t multiple_of; /* a valid size is a multiple of this (1: any) */
  uint64_t reserved[4];
} aotc_dim_range;
/* The range of dim `dim` of input or output `index`; for any model (a fixed dim reports
 * its size as min and max). */
AOTC_API aotc_status aotc_model_input_dim_range(const aotc_model* model, size_t index, int32_t dim,
                                                aotc_dim_range* out_range);
AOTC_API aotc_status aotc_model_output_dim_range(const aotc_model* model, size_t index, int32_t dim,
                                                 aotc_dim_range* out_range);
/* The dims output `index` has when the model runs on inputs of these shapes (only rank
 * and dims of each input are read; data may be NULL): out_dims gets the output's rank
 * entries. Fails as aotc_run would for shapes out of range or inconsistent. */
AOTC_API aotc_status aotc_model_output_dims(const aotc_model* model, const aotc_tensor* inputs,
                                            size_t num_inputs, size_t index, int64_t* out_dims);
/* The dims output `index` had in the context's last successful aotc_run (its rank
 * entries); before any run, the largest shape the context runs at (dim_limits). */
AOTC_API aotc_status aotc_context_output_dims(const aotc_context* context, size_t index, int64_t* out_dims);

/* Runs the model once. inputs and outputs are in the order reported by *_info; every
 * one must match its info's dtype and dims exactly. Outputs are written in place.
 * Minor version 4, models with dynamic dims: an input may have any size in its dim's
 * range (a dim name used twice must have the same size in both places); an output's
 * buffer needs the rank of its info and room for the output at the inputs' shapes
 * (aotc_model_output_dims; the largest always fits), is written densely in that shape,
 * and its dims are read only where they are fixed. aotc_context_output_dims says the
 * shape written.
 * A CUDA model runs as one CUDA graph captured at aotc_context_create and replayed on
 * the context's stream; one with dynamic dims captures a graph for each new shape in
 * the first run at that shape, a slower run (aotc_context_options.cuda_graph_cache); see
 * aotc_memory_kind for when the call returns. */
AOTC_API aotc_status aotc_run(const aotc_model* model, aotc_context* context, const aotc_tensor* inputs,
                              size_t num_inputs, aotc_tensor* outputs, size_t num_outputs);

#ifdef __cplusplus
}
#endif

#endif /* AOTC_AOTC_H */
