// model_desc.h - the contract between generated model code and the runtime library.
// Internal: not part of the C ABI. Generated code defines aotc_internal_model_desc();
// the runtime's ABI functions (runtime/src/abi.cpp) read it.
#pragma once

#include <aotc/aotc.h>
#include <cstddef>
#include <cstdint>

namespace aotc::rt {

class ThreadPool;

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
};

struct ModelDesc {
  uint32_t abi_version;  // AOTC_ABI_VERSION the model code was generated for
  const TensorDesc* inputs;
  size_t num_inputs;
  const TensorDesc* outputs;
  size_t num_outputs;
  uint64_t arena_bytes;
  const unsigned char* weights;
  uint64_t weights_bytes;
  void (*run)(const RunArgs& args);
};

}  // namespace aotc::rt

// Defined by the generated model code, hidden inside the model .so.
extern "C" const aotc::rt::ModelDesc* aotc_internal_model_desc(void);
