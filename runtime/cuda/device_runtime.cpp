// device_runtime.cpp - the CUDA half of the C ABI (DeviceHooks, aotc/rt/model_desc.h):
//   - model create: the weights go to the GPU once (cudaMalloc + one copy);
//   - context create: a device arena (activations, kernel scratch, one staging buffer per
//     input and output, cuBLAS's workspace), a stream, a cuBLAS handle; a tuning run, not
//     captured, in which each GEMM shape times cuBLASLt's candidate algorithms and keeps the
//     fastest (AOTC_CUDA_AUTOTUNE=0 skips it: cuBLASLt's first heuristic choice); then the
//     whole run captured once as a CUDA graph over those fixed buffers;
//   - run: copy the inputs into the staging buffers, replay the graph, copy the outputs
//     out, all on the context's stream; nothing is allocated. The copies make the caller's
//     buffers free to change from run to run while the graph stays the same.
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

uint64_t dense_bytes(const TensorDesc& t) {
  uint64_t count = 1;
  for (int32_t d = 0; d < t.rank; ++d) count *= static_cast<uint64_t>(t.dims[d]);
  return count * aotc_dtype_size(t.dtype);
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
  std::vector<uint64_t> input_bytes, output_bytes;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

void destroy_context_state(ContextState* s) {
  DeviceScope scope(s->model->device);
  if (s->exec) cudaGraphExecDestroy(s->exec);
  if (s->graph) cudaGraphDestroy(s->graph);
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

// The tuning run: the model once on the context's own stream, not captured, over zeroed
// buffers (every index a gather reads is then valid), so that each GEMM shape can time its
// candidate algorithms; the capture then finds them chosen.
aotc_status tune_gemms(ContextState* s, unsigned char* arena) {
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
  const CudaRunArgs args{exec_of(s, true), arena, s->model->weights, s->inputs.data(), s->outputs.data()};
  s->cuda->run(args);
  const cudaError_t synced = cudaStreamSynchronize(s->own_stream);
  gemm_tuning_set_flush(s->tuning, nullptr, 0);
  if (flush) cudaFree(flush);
  if (synced != cudaSuccess) return cuda_fail("the GEMM tuning run", synced);
  if (first_error()[0]) return fail(AOTC_ERR_SYSTEM, "CUDA: the GEMM tuning run failed: %s", first_error());
  // The weights' fp16 splits that no product chose (gemm_f16x2 slower there than another
  // kernel) give their device memory back.
  const int64_t freed = gemm_tuning_free_unused_splits(s->tuning);
  if (std::getenv("AOTC_CUDA_TRACE")) {
    int64_t shapes = 0, candidates = 0;
    gemm_tuning_counts(s->tuning, &shapes, &candidates);
    std::fprintf(
        stderr, "aotc: GEMM tuning: %lld shapes, %lld candidates timed, %lld unused weight splits freed\n",
        static_cast<long long>(shapes), static_cast<long long>(candidates), static_cast<long long>(freed));
  }
  return AOTC_OK;
}

// Captures the model's run on the context's own stream into a graph and instantiates it.
aotc_status capture(ContextState* s, unsigned char* arena) {
  forget_error();
  if (cudaError_t e = cudaStreamBeginCapture(s->own_stream, cudaStreamCaptureModeThreadLocal))
    return cuda_fail("starting the graph capture", e);
  const Exec exec = exec_of(s, false);
  const CudaRunArgs args{exec, arena, s->model->weights, s->inputs.data(), s->outputs.data()};
  s->cuda->run(args);
  const cudaError_t end = cudaStreamEndCapture(s->own_stream, &s->graph);
  if (first_error()[0])
    return fail(AOTC_ERR_SYSTEM, "CUDA: capturing the model's run failed: %s", first_error());
  if (end != cudaSuccess) return cuda_fail("capturing the model's run", end);
  if (cudaError_t e = cudaGraphInstantiate(&s->exec, s->graph, 0))
    return cuda_fail("instantiating the graph", e);
  // The first replay loads the kernels' modules; do it now rather than in the first run.
  if (cudaError_t e = cudaGraphUpload(s->exec, s->own_stream)) return cuda_fail("uploading the graph", e);
  if (cudaError_t e = cudaStreamSynchronize(s->own_stream)) return cuda_fail("uploading the graph", e);
  return AOTC_OK;
}

aotc_status context_create(const ModelDesc& desc, void* model_state, void* stream, void** state) {
  auto* model = static_cast<ModelState*>(model_state);
  DeviceScope scope(model->device);
  auto* s = new (std::nothrow) ContextState();
  if (!s) return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory creating a context");
  s->desc = &desc;
  s->cuda = static_cast<const CudaModelDesc*>(desc.device_desc);
  s->model = model;
  try {
    for (size_t i = 0; i < desc.num_inputs; ++i) s->input_bytes.push_back(dense_bytes(desc.inputs[i]));
    for (size_t i = 0; i < desc.num_outputs; ++i) s->output_bytes.push_back(dense_bytes(desc.outputs[i]));
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
  size_t total = align_up(desc.arena_bytes);
  for (uint64_t b : s->input_bytes) total += align_up(b);
  for (uint64_t b : s->output_bytes) total += align_up(b);
  s->workspace_offset = total;
  const size_t workspace_offset = total;
  total += kBlasWorkspaceBytes;
  if (cudaError_t e = cudaMalloc(&s->memory, total)) {
    destroy_context_state(s);
    return cuda_fail("allocating the context's device memory", e);
  }
  size_t offset = align_up(desc.arena_bytes);
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
    s->tuning = gemm_tuning_create();
    if (!s->tuning) {
      destroy_context_state(s);
      return fail(AOTC_ERR_OUT_OF_MEMORY, "out of memory creating a context");
    }
    if (aotc_status st = tune_gemms(s, s->memory)) {
      destroy_context_state(s);
      return st;
    }
  }
  if (aotc_status st = capture(s, s->memory)) {
    destroy_context_state(s);
    return st;
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

aotc_status run(void* state, const aotc_tensor* inputs, const aotc_tensor* outputs) {
  auto* s = static_cast<ContextState*>(state);
  DeviceScope scope(s->model->device);
  bool host = false;
  for (size_t i = 0; i < s->desc->num_inputs; ++i) {
    if (!s->input_bytes[i]) continue;
    const bool from_host = inputs[i].memory == AOTC_MEMORY_HOST;
    host = host || from_host;
    if (cudaError_t e =
            cudaMemcpyAsync(s->inputs[i], inputs[i].data, s->input_bytes[i],
                            from_host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice, s->stream))
      return cuda_fail("copying an input to the GPU", e);
  }
  if (cudaError_t e = cudaGraphLaunch(s->exec, s->stream)) return cuda_fail("launching the model's graph", e);
  for (size_t i = 0; i < s->desc->num_outputs; ++i) {
    if (!s->output_bytes[i]) continue;
    const bool to_host = outputs[i].memory == AOTC_MEMORY_HOST;
    host = host || to_host;
    if (cudaError_t e =
            cudaMemcpyAsync(outputs[i].data, s->outputs[i], s->output_bytes[i],
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
