// device_runtime.cpp - the CUDA half of the C ABI (DeviceHooks, aotc/rt/model_desc.h):
//   - model create: the weights go to the GPU once (cudaMalloc + one copy);
//   - context create: a device arena (activations, kernel scratch, one staging buffer per
//     input and output, cuBLAS's workspace), a stream, a cuBLAS handle; a tuning run, not
//     captured, in which each GEMM shape times cuBLASLt's candidate algorithms and keeps the
//     fastest, or takes what an earlier context of the library chose on the same device
//     (gemm_tuning.cpp; AOTC_CUDA_AUTOTUNE=0 skips tuning: cuBLASLt's first heuristic choice); then the
//     whole run captured once as a CUDA graph over those fixed buffers;
//   - run: copy the inputs into the staging buffers, replay the graph, copy the outputs
//     out, all on the context's stream; nothing is allocated. The copies make the caller's
//     buffers free to change from run to run while the graph stays the same. Host memory
//     is copied as it is: pinned memory (cudaHostAlloc, torch's pin_memory()) goes straight
//     to the DMA engine, and pageable memory through the driver's staging, which copying
//     it into pinned buffers of the context first did not beat (bench/results_gpu.md).
// A model with named dims (aotc --dim; ModelDesc::dynamic) sizes arena and staging for its
// largest shape (the context's: aotc_context_options.dim_limits) at context create and captures nothing
// there: a graph bakes in its kernels' sizes, so each distinct shape gets its own, made (tuning run, then
// capture) in the first run at that shape and kept in a small per-context cache of the most recently used
// ones (aotc_context_options.cuda_graph_cache, evicting the least recently used). A shape that repeats
// replays its graph and allocates nothing. Its runs copy only the bytes of the inputs' and outputs' actual
// shapes, read and written densely at the start of their staging buffers.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/model_cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "../src/status.h"
#include "gemm_tuning.h"

namespace aotc::rt::cuda {
namespace {

// cuBLAS's workspace per context, given to it so that it never allocates inside the
// capture (32 MiB is what NVIDIA's documentation suggests for Hopper).
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;
constexpr size_t kAlignment = 256;  // every device buffer of the arena starts here

size_t align_up(size_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

aotc_status cuda_fail(const char* what, cudaError_t e) {
  return fail(AOTC_ERR_SYSTEM, "CUDA: %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

uint64_t dense_bytes(aotc_dtype dtype, int32_t rank, const int64_t* dims) {
  uint64_t count = 1;
  for (int32_t d = 0; d < rank; ++d) count *= static_cast<uint64_t>(dims[d]);
  return count * aotc_dtype_size(dtype);
}

uint64_t dense_bytes(const TensorDesc& t) { return dense_bytes(t.dtype, t.rank, t.dims); }

// A buffer marked as host memory that is device memory: the caller's mistake, which a copy
// of the wrong kind would report only as CUDA's "invalid argument".
aotc_status refuse_device_as_host(const char* what, size_t index, const void* data) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, data) != cudaSuccess) {
    cudaGetLastError();  // not an error of the run
    return AOTC_OK;
  }
  if (a.type != cudaMemoryTypeDevice) return AOTC_OK;
  return fail(
      AOTC_ERR_INVALID_ARGUMENT,
      "%s %zu is marked as host memory (aotc_tensor.memory = AOTC_MEMORY_HOST) but points to CUDA device "
      "memory: set memory to AOTC_MEMORY_DEVICE",
      what, index);
}

// " for B=3, S=17": a shape of a model with named dims, for messages; "" without dims.
void format_shape(const ModelDesc& desc, const int64_t* dims, char* buffer, size_t size) {
  buffer[0] = '\0';
  if (!dims) return;
  size_t used = 0;
  for (size_t k = 0; k < desc.dynamic->num_dims && used < size; ++k) {
    const int n = std::snprintf(buffer + used, size - used, "%s%s=%lld", k ? ", " : " for ",
                                desc.dynamic->dims[k].name, static_cast<long long>(dims[k]));
    if (n < 0) break;
    used += static_cast<size_t>(n);
  }
}

// Makes `device` current for a scope and puts the caller's device back after it.
struct DeviceScope {
  int previous = -1;
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous) == cudaSuccess && previous != device) cudaSetDevice(device);
  }
  ~DeviceScope() {
    int now = -1;
    if (previous >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous) cudaSetDevice(previous);
  }
};

struct ModelState {
  int device = 0;
  unsigned char* weights = nullptr;  // device copy of the weights blob
};

// A graph of a model with named dims and the shape (dim sizes) it was captured for.
struct CachedGraph {
  int64_t dims[kMaxNamedDims];
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  uint64_t last_used;
};

// How many graphs a context of a model with named dims keeps when the caller says 0.
constexpr int32_t kDefaultGraphCache = 8;

struct ContextState {
  const ModelDesc* desc = nullptr;
  const CudaModelDesc* cuda = nullptr;
  ModelState* model = nullptr;
  cudaStream_t own_stream = nullptr;  // created here; the capture happens on it
  cudaStream_t stream = nullptr;      // where runs go: own_stream or the caller's
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  GemmTuning* tuning = nullptr;  // the GEMM algorithms chosen in the tuning run
  size_t workspace_offset = 0;
  unsigned char* memory = nullptr;  // one cudaMalloc: arena, staging, cuBLAS workspace
  std::vector<void*> inputs, outputs;
  std::vector<uint64_t> input_bytes, output_bytes;  // at the largest shape
  std::vector<int64_t> arena_offsets;               // a model with named dims: the context's
  // A model without named dims: its one graph, captured at create.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  // A model with named dims: a graph per shape, at most graph_cache of them.
  std::vector<CachedGraph> graphs;
  size_t graph_cache = 0;
  uint64_t clock = 0;  // counts runs; a graph's last_used is the clock of its last run
};

void destroy_graph(cudaGraph_t graph, cudaGraphExec_t exec) {
  // A replay still in flight is not cut short: CUDA frees the exec when it completes.
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
}

void destroy_context_state(ContextState* s) {
  DeviceScope scope(s->model->device);
  destroy_graph(s->graph, s->exec);
  for (const CachedGraph& g : s->graphs) destroy_graph(g.graph, g.exec);
  gemm_tuning_destroy(s->tuning);
  if (s->lt) cublasLtDestroy(s->lt);
  if (s->blas) cublasDestroy(s->blas);
  if (s->memory) cudaFree(s->memory);
  if (s->own_stream) cudaStreamDestroy(s->own_stream);
  delete s;
}

aotc_status model_create(const ModelDesc& desc, const unsigned char* weights, void** state) {
  const auto* cuda = static_cast<const CudaModelDesc*>(desc.device_desc);
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device)) return cuda_fail("no usable GPU", e);
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, device)) return cuda_fail("cudaGetDeviceProperties", e);
  const int arch = prop.major * 10 + prop.minor;
  if (arch < cuda->arch)
    return fail(
        AOTC_ERR_SYSTEM,
        "this model was compiled for sm_%d (aotc --cuda-arch), but GPU %d (%s) is sm_%d: recompile it "
        "with --cuda-arch sm_%d",
        cuda->arch, device, prop.name, arch, arch);
  auto* s = new (std::nothrow) ModelState();
  if (!s) return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory creating the model");
  s->device = device;
  if (desc.weights_bytes) {
    if (cudaError_t e = cudaMalloc(&s->weights, desc.weights_bytes)) {
      delete s;
      return cuda_fail("allocating the weights on the GPU", e);
    }
    if (cudaError_t e = cudaMemcpy(s->weights, weights, desc.weights_bytes, cudaMemcpyHostToDevice)) {
      cudaFree(s->weights);
      delete s;
      return cuda_fail("copying the weights to the GPU", e);
    }
  }
  *state = s;
  return AOTC_OK;
}

void model_destroy(void* state) {
  auto* s = static_cast<ModelState*>(state);
  DeviceScope scope(s->device);
  if (s->weights) cudaFree(s->weights);
  delete s;
}

// The context's Exec: its stream, handles, workspace and GEMM algorithms.
Exec exec_of(const ContextState* s, bool tune) {
  Exec exec{s->own_stream,       s->blas,           s->lt, s->memory + s->workspace_offset,
            kBlasWorkspaceBytes, s->cuda->precision};
  exec.tuning = s->tuning;
  exec.tune = tune;
  return exec;
}

const int64_t* offsets_of(const ContextState* s) {
  return s->arena_offsets.empty() ? nullptr : s->arena_offsets.data();
}

// The tuning run: the model once on the context's own stream, not captured, over zeroed
// buffers (every index a gather reads is then valid), so that each GEMM shape can time its
// candidate algorithms; the capture then finds them chosen. dims: the shape of a model with
// named dims (shapes tuned before are not timed again), nullptr for one without; shape is
// format_shape's for messages.
aotc_status tune_gemms(ContextState* s, unsigned char* arena, const int64_t* dims, const char* shape) {
  forget_error();
  if (cudaError_t e = cudaMemsetAsync(s->memory, 0, s->workspace_offset, s->own_stream))
    return cuda_fail("clearing the context's memory", e);
  // Twice the L2 cache to overwrite before each timed launch (gemm_tuning.h); without it
  // (no memory to spare) the candidates are timed warm.
  int l2_bytes = 0;
  void* flush = nullptr;
  const size_t flush_bytes =
      cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, s->model->device) == cudaSuccess &&
              l2_bytes > 0
          ? 2 * static_cast<size_t>(l2_bytes)
          : 0;
  cudaGetLastError();  // a failed attribute query must not be blamed on the first kernel
  if (flush_bytes && cudaMalloc(&flush, flush_bytes) != cudaSuccess) {
    cudaGetLastError();
    flush = nullptr;
  }
  gemm_tuning_set_flush(s->tuning, flush, flush_bytes);
  const CudaRunArgs args{exec_of(s, true),  arena, s->model->weights, s->inputs.data(),
                         s->outputs.data(), dims,  offsets_of(s)};
  s->cuda->run(args);
  const cudaError_t synced = cudaStreamSynchronize(s->own_stream);
  gemm_tuning_set_flush(s->tuning, nullptr, 0);
  if (flush) cudaFree(flush);
  if (synced != cudaSuccess)
    return fail(AOTC_ERR_SYSTEM, "CUDA: the GEMM tuning run%s: %s (%s)", shape, cudaGetErrorString(synced),
                cudaGetErrorName(synced));
  if (first_error()[0])
    return fail(AOTC_ERR_SYSTEM, "CUDA: the GEMM tuning run%s failed: %s", shape, first_error());
  // The weights' fp16 splits that no product chose (gemm_f16x2 slower there than another
  // kernel) give their device memory back.
  const int64_t freed = gemm_tuning_free_unused_splits(s->tuning);
  if (std::getenv("AOTC_CUDA_TRACE")) {
    int64_t shapes = 0, candidates = 0;
    gemm_tuning_counts(s->tuning, &shapes, &candidates);
    std::fprintf(stderr,
                 "aotc: GEMM tuning%s: %lld shapes, %lld candidates timed, %lld unused weight splits freed\n",
                 shape, static_cast<long long>(shapes), static_cast<long long>(candidates),
                 static_cast<long long>(freed));
  }
  return AOTC_OK;
}

// Captures the model's run (for dims, nullptr without named dims) on the context's own
// stream into a graph and instantiates it. On failure nothing is left to destroy and the
// context stays usable (no capture left open, CUDA's last error cleared).
aotc_status capture(ContextState* s, unsigned char* arena, const int64_t* dims, const char* shape,
                    cudaGraph_t* out_graph, cudaGraphExec_t* out_exec) {
  forget_error();
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  const char* what = "starting the graph capture";
  cudaError_t e = cudaStreamBeginCapture(s->own_stream, cudaStreamCaptureModeThreadLocal);
  if (e == cudaSuccess) {
    const CudaRunArgs args{exec_of(s, false), arena, s->model->weights, s->inputs.data(),
                           s->outputs.data(), dims,  offsets_of(s)};
    s->cuda->run(args);
    what = "capturing the model's run";
    e = cudaStreamEndCapture(s->own_stream, &graph);
    if (first_error()[0]) {
      destroy_graph(graph, nullptr);
      cudaGetLastError();
      return fail(AOTC_ERR_SYSTEM, "CUDA: capturing the model's run%s failed: %s", shape, first_error());
    }
  }
  if (e == cudaSuccess) {
    what = "instantiating the graph";
    e = cudaGraphInstantiate(&exec, graph, 0);
  }
  // The first replay loads the kernels' modules; do it now rather than in the first run.
  if (e == cudaSuccess) {
    what = "uploading the graph";
    e = cudaGraphUpload(exec, s->own_stream);
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(s->own_stream);
  if (e != cudaSuccess) {
    destroy_graph(graph, exec);
    cudaGetLastError();
    return fail(AOTC_ERR_SYSTEM, "CUDA: %s%s: %s (%s)", what, shape, cudaGetErrorString(e),
                cudaGetErrorName(e));
  }
  *out_graph = graph;
  *out_exec = exec;
  return AOTC_OK;
}

// The graph for this run's dims (a model with named dims): the cached one, or one made now
// (tuning run and capture for these dims), evicting the least recently used graph when the
// cache is full. Called before the run's inputs are copied: the tuning run clears arena and
// staging. A hit allocates nothing.
aotc_status graph_for(ContextState* s, const int64_t* dims, cudaGraphExec_t* out_exec) {
  const size_t num_dims = s->desc->dynamic->num_dims;
  const uint64_t now = ++s->clock;
  for (CachedGraph& g : s->graphs) {
    if (std::memcmp(g.dims, dims, num_dims * sizeof(int64_t)) != 0) continue;
    g.last_used = now;
    *out_exec = g.exec;
    return AOTC_OK;
  }
  char shape[256];
  format_shape(*s->desc, dims, shape, sizeof shape);
  // The tuning run writes arena and staging on the own stream: a replay still running on
  // the caller's stream may be reading them. (On the own stream it is queued behind it.)
  if (s->stream != s->own_stream) {
    if (cudaError_t e = cudaStreamSynchronize(s->stream))
      return fail(AOTC_ERR_SYSTEM, "CUDA: waiting for the context's stream before capturing%s: %s (%s)",
                  shape, cudaGetErrorString(e), cudaGetErrorName(e));
  }
  // Room for the new entry first, so that a capture is never left without a place.
  if (s->graphs.size() < s->graph_cache) {
    try {
      s->graphs.reserve(s->graphs.size() + 1);
    } catch (...) {
      return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory capturing the model's run%s", shape);
    }
  }
  if (s->tuning) {
    if (aotc_status st = tune_gemms(s, s->memory, dims, shape)) return st;
  }
  CachedGraph entry{};
  std::memcpy(entry.dims, dims, num_dims * sizeof(int64_t));
  entry.last_used = now;
  if (aotc_status st = capture(s, s->memory, dims, shape, &entry.graph, &entry.exec)) return st;
  const bool trace = std::getenv("AOTC_CUDA_TRACE") != nullptr;
  if (s->graphs.size() < s->graph_cache) {
    s->graphs.push_back(entry);  // no allocation: reserved above
  } else {
    CachedGraph* oldest = &s->graphs[0];
    for (CachedGraph& g : s->graphs)
      if (g.last_used < oldest->last_used) oldest = &g;
    if (trace) {
      char old_shape[256];
      format_shape(*s->desc, oldest->dims, old_shape, sizeof old_shape);
      std::fprintf(stderr, "aotc: CUDA graph%s evicted (least recently used of %zu kept)\n", old_shape,
                   s->graphs.size());
    }
    destroy_graph(oldest->graph, oldest->exec);
    *oldest = entry;
  }
  if (trace)
    std::fprintf(stderr, "aotc: CUDA graph captured%s (%zu of %zu kept)\n", shape, s->graphs.size(),
                 s->graph_cache);
  *out_exec = entry.exec;
  return AOTC_OK;
}

aotc_status context_create(const ModelDesc& desc, void* model_state, void* stream, int32_t graph_cache,
                           const ContextPlan& plan, void** state) {
  auto* model = static_cast<ModelState*>(model_state);
  DeviceScope scope(model->device);
  auto* s = new (std::nothrow) ContextState();
  if (!s) return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory creating a context");
  s->desc = &desc;
  s->cuda = static_cast<const CudaModelDesc*>(desc.device_desc);
  s->model = model;
  s->graph_cache = static_cast<size_t>(graph_cache > 0 ? graph_cache : kDefaultGraphCache);
  try {
    // Staging for the context's largest shape.
    for (size_t i = 0; i < desc.num_inputs; ++i) {
      TensorDesc largest = desc.inputs[i];
      for (int32_t d = 0; plan.limits && d < largest.rank; ++d)
        if (desc.dynamic->input_dims[i][d] >= 0)
          largest.dims[d] = plan.limits[desc.dynamic->input_dims[i][d]];
      s->input_bytes.push_back(dense_bytes(largest));
    }
    for (size_t i = 0; i < desc.num_outputs; ++i)
      s->output_bytes.push_back(
          plan.largest_output_dims
              ? dense_bytes(desc.outputs[i].dtype, desc.outputs[i].rank, plan.largest_output_dims[i])
              : dense_bytes(desc.outputs[i]));
    if (plan.arena_offsets && desc.dynamic)
      s->arena_offsets.assign(plan.arena_offsets, plan.arena_offsets + desc.dynamic->num_arena_offsets);
    s->inputs.assign(desc.num_inputs + 1, nullptr);
    s->outputs.assign(desc.num_outputs + 1, nullptr);
  } catch (...) {
    delete s;
    return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory creating a context");
  }
  if (cudaError_t e = cudaStreamCreateWithFlags(&s->own_stream, cudaStreamNonBlocking)) {
    destroy_context_state(s);
    return cuda_fail("creating a stream", e);
  }
  s->stream = stream ? static_cast<cudaStream_t>(stream) : s->own_stream;
  // One allocation: arena, then staging buffers, then cuBLAS's workspace.
  size_t total = align_up(plan.activation_bytes);
  for (uint64_t b : s->input_bytes) total += align_up(b);
  for (uint64_t b : s->output_bytes) total += align_up(b);
  s->workspace_offset = total;
  const size_t workspace_offset = total;
  total += kBlasWorkspaceBytes;
  if (cudaError_t e = cudaMalloc(&s->memory, total)) {
    destroy_context_state(s);
    return cuda_fail("allocating the context's device memory", e);
  }
  size_t offset = align_up(plan.activation_bytes);
  for (size_t i = 0; i < desc.num_inputs; ++i) {
    s->inputs[i] = s->memory + offset;
    offset += align_up(s->input_bytes[i]);
  }
  for (size_t i = 0; i < desc.num_outputs; ++i) {
    s->outputs[i] = s->memory + offset;
    offset += align_up(s->output_bytes[i]);
  }
  cublasStatus_t b = cublasCreate(&s->blas);
  if (b == CUBLAS_STATUS_SUCCESS) b = cublasSetStream(s->blas, s->own_stream);
  if (b == CUBLAS_STATUS_SUCCESS)
    b = cublasSetWorkspace(s->blas, s->memory + workspace_offset, kBlasWorkspaceBytes);
  // Exact float32 unless the model was compiled with --precision tf32.
  if (b == CUBLAS_STATUS_SUCCESS) b = cublasLtCreate(&s->lt);
  if (b == CUBLAS_STATUS_SUCCESS)
    b = cublasSetMathMode(
        s->blas, s->cuda->precision == Precision::Tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  if (b != CUBLAS_STATUS_SUCCESS) {
    destroy_context_state(s);
    return fail(AOTC_ERR_SYSTEM, "cuBLAS: creating the context's handle: %s", cublasGetStatusString(b));
  }
  const char* autotune = std::getenv("AOTC_CUDA_AUTOTUNE");
  if (!(autotune && std::strcmp(autotune, "0") == 0)) {
    s->tuning = gemm_tuning_create(s->model->device);
    if (!s->tuning) {
      destroy_context_state(s);
      return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory creating a context");
    }
  }
  // A model with named dims tunes and captures per shape, in its runs (graph_for).
  if (!desc.dynamic) {
    aotc_status st = s->tuning ? tune_gemms(s, s->memory, nullptr, "") : AOTC_OK;
    if (st == AOTC_OK) st = capture(s, s->memory, nullptr, "", &s->graph, &s->exec);
    if (st != AOTC_OK) {
      destroy_context_state(s);
      return st;
    }
  }
  *state = s;
  return AOTC_OK;
}

void context_destroy(void* state) { destroy_context_state(static_cast<ContextState*>(state)); }

aotc_status set_stream(void* state, void* stream) {
  auto* s = static_cast<ContextState*>(state);
  s->stream = stream ? static_cast<cudaStream_t>(stream) : s->own_stream;
  return AOTC_OK;
}

void* get_stream(const void* state) { return static_cast<const ContextState*>(state)->stream; }

aotc_status run(void* state, const aotc_tensor* inputs, const aotc_tensor* outputs, const int64_t* dims,
                const int64_t (*out_dims)[AOTC_MAX_RANK]) {
  auto* s = static_cast<ContextState*>(state);
  DeviceScope scope(s->model->device);
  cudaGraphExec_t exec = s->exec;
  // Before the input copies: a new shape's tuning run clears the staging buffers.
  if (dims) {
    if (aotc_status st = graph_for(s, dims, &exec)) return st;
  }
  bool host = false;
  for (size_t i = 0; i < s->desc->num_inputs; ++i) {
    // With named dims, only the bytes of this run's shape (the graph reads them densely).
    const uint64_t bytes =
        dims ? dense_bytes(s->desc->inputs[i].dtype, s->desc->inputs[i].rank, inputs[i].dims)
             : s->input_bytes[i];
    if (!bytes) continue;
    const bool from_host = inputs[i].memory == AOTC_MEMORY_HOST;
    host = host || from_host;
    if (from_host) {
      if (aotc_status st = refuse_device_as_host("input", i, inputs[i].data)) return st;
    }
    if (cudaError_t e =
            cudaMemcpyAsync(s->inputs[i], inputs[i].data, bytes,
                            from_host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice, s->stream))
      return cuda_fail("copying an input to the GPU", e);
  }
  if (cudaError_t e = cudaGraphLaunch(exec, s->stream)) return cuda_fail("launching the model's graph", e);
  for (size_t i = 0; i < s->desc->num_outputs; ++i) {
    const uint64_t bytes = out_dims
                               ? dense_bytes(s->desc->outputs[i].dtype, s->desc->outputs[i].rank, out_dims[i])
                               : s->output_bytes[i];
    if (!bytes) continue;
    const bool to_host = outputs[i].memory == AOTC_MEMORY_HOST;
    host = host || to_host;
    if (to_host) {
      if (aotc_status st = refuse_device_as_host("output", i, outputs[i].data)) return st;
    }
    if (cudaError_t e =
            cudaMemcpyAsync(outputs[i].data, s->outputs[i], bytes,
                            to_host ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice, s->stream))
      return cuda_fail("copying an output from the GPU", e);
  }
  // Host buffers are the caller's as soon as the call returns: wait for them.
  if (host) {
    if (cudaError_t e = cudaStreamSynchronize(s->stream)) return cuda_fail("running the model", e);
  }
  return AOTC_OK;
}

const DeviceHooks kHooks = {AOTC_DEVICE_CUDA, &model_create, &model_destroy, &context_create,
                            &context_destroy, &set_stream,   &get_stream,    &run};

}  // namespace

const DeviceHooks* cuda_device_hooks() { return &kHooks; }

}  // namespace aotc::rt::cuda
