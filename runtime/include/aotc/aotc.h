/*
 * aotc.h - the C ABI of every model shared library built by aotc.
 *
 * A model .so exports exactly the functions declared here (and nothing else).
 * Rules that keep this ABI trustworthy:
 *   - C only; every function returns an aotc_status; no exception ever crosses it.
 *   - aotc_last_error() gives a thread-local message for the last failing call.
 *   - Structs have reserved fields that must be zero; any incompatible change gets a
 *     new function with a _v2 suffix and AOTC_ABI_VERSION is bumped.
 *   - A model (weights, immutable) can be shared by many threads; each thread runs
 *     through its own context (activation arena, scratch, thread pool).
 *   - Inputs are validated on every run: count, dtype, rank, dims, null pointers, sizes.
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
#define AOTC_MAX_RANK 8

typedef enum aotc_status {
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

typedef enum aotc_dtype {
  AOTC_DTYPE_FLOAT32 = 1,
  AOTC_DTYPE_FLOAT16 = 2,
  AOTC_DTYPE_BFLOAT16 = 3,
  AOTC_DTYPE_INT64 = 4,
  AOTC_DTYPE_INT32 = 5,
  AOTC_DTYPE_BOOL = 6
} aotc_dtype;

typedef struct aotc_model aotc_model;
typedef struct aotc_context aotc_context;

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
  uint64_t reserved[4];
} aotc_tensor;

typedef struct aotc_context_options {
  /* Threads a run may use, the calling thread included; 0 means 1. */
  int32_t num_threads;
  int32_t reserved_i[3];
  uint64_t reserved[4];
} aotc_context_options;

/* The ABI version the library was built with (AOTC_ABI_VERSION of its header). */
AOTC_API uint32_t aotc_abi_version(void);

/* Message of the last failed call on this thread ("" when none). Never NULL. */
AOTC_API const char* aotc_last_error(void);

/* Name of a status code, e.g. "AOTC_ERR_WRONG_SHAPE". Never NULL. */
AOTC_API const char* aotc_status_name(aotc_status status);

/* Size in bytes of one element of dtype, 0 for an unknown dtype. */
AOTC_API size_t aotc_dtype_size(aotc_dtype dtype);

/* Name of a dtype, e.g. "float32"; "unknown" for an unknown dtype. */
AOTC_API const char* aotc_dtype_name(aotc_dtype dtype);

/* Creates the model: binds the weights embedded in this library. */
AOTC_API aotc_status aotc_model_create(aotc_model** out_model);
/* Fails (AOTC_ERR_INVALID_ARGUMENT) while contexts of the model are alive. NULL is a no-op. */
AOTC_API aotc_status aotc_model_destroy(aotc_model* model);

AOTC_API aotc_status aotc_model_num_inputs(const aotc_model* model, size_t* out_count);
AOTC_API aotc_status aotc_model_num_outputs(const aotc_model* model, size_t* out_count);
AOTC_API aotc_status aotc_model_input_info(const aotc_model* model, size_t index, aotc_tensor_info* out_info);
AOTC_API aotc_status aotc_model_output_info(const aotc_model* model, size_t index,
                                            aotc_tensor_info* out_info);
/* Bytes of activation memory each context holds for a run. */
AOTC_API aotc_status aotc_model_arena_size(const aotc_model* model, uint64_t* out_bytes);

/* A context owns the activation arena and worker threads of one runner thread: it runs
 * one aotc_run at a time (a second concurrent call on it fails with
 * AOTC_ERR_INVALID_ARGUMENT). options may be NULL for defaults. */
AOTC_API aotc_status aotc_context_create(aotc_model* model, const aotc_context_options* options,
                                         aotc_context** out_context);
AOTC_API aotc_status aotc_context_destroy(aotc_context* context);

/* Runs the model once. inputs and outputs are in the order reported by *_info; every
 * one must match its info's dtype and dims exactly. Outputs are written in place. */
AOTC_API aotc_status aotc_run(const aotc_model* model, aotc_context* context, const aotc_tensor* inputs,
                              size_t num_inputs, aotc_tensor* outputs, size_t num_outputs);

#ifdef __cplusplus
}
#endif

#endif /* AOTC_AOTC_H */
