// model_cuda.h - the contract between generated CUDA model code (aotc --target cuda,
// templates/model.cu.in) and the CUDA half of the runtime (runtime/cuda/). Internal: not
// part of the C ABI. The generated ModelDesc points at cuda_device_hooks() and at its
// CudaModelDesc; runtime/src/abi.cpp validates every call, then hands over to the hooks.
#pragma once

#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/precision.h>
#include <aotc/rt/model_desc.h>

#include <cstdint>

namespace aotc::rt::cuda {

// Everything the generated run function enqueues its kernels with. Every pointer is device
// memory owned by the context (arena, staging buffers) or the model (weights), fixed for
// the context's life: the run is captured once as a CUDA graph and replayed.
struct CudaRunArgs {
  Exec exec;  // stream, cuBLAS handles and their workspace (no allocation in a run)
  unsigned char* arena;
  const unsigned char* weights;
  const void* const* inputs;  // one device buffer per model input
  void* const* outputs;       // one device buffer per model output
  // A model with named dims (aotc --dim): the sizes this run is captured for
  // (DynamicDesc::dims order); nullptr for a model without them.
  const int64_t* dims = nullptr;
  // A model with named dims: the context's arena offsets (RunArgs::arena_offsets).
  const int64_t* arena_offsets = nullptr;
};

// The named dims' sizes as a kernel argument: the kernels aotc generates for a model with
// named dims compute their extents from them (every generated kernel takes one; a model
// without named dims passes zeros).
struct KernelDims {
  int64_t size[kMaxNamedDims];
};

struct CudaModelDesc {
  void (*run)(const CudaRunArgs& args);  // enqueues the whole model on args.stream
  Precision precision;
  int32_t arch;  // the compute capability the code was built for (--cuda-arch sm_90: 90)
};

// The hooks of runtime/src/abi.cpp for CUDA models (runtime/cuda/device_runtime.cpp).
const DeviceHooks* cuda_device_hooks();

}  // namespace aotc::rt::cuda
