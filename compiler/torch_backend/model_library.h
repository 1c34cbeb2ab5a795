// model_library.h - a model library held in memory, run on torch tensors through the C ABI.
// The TorchScript backend's compile() loads the bytes preprocess stored; execute() runs it.
#pragma once

#include <ATen/core/Tensor.h>
#include <aotc/aotc.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace aotc::torch_backend {

struct TensorInfo {
  std::string name;
  aotc_dtype dtype;
  std::vector<int64_t> dims;
};

class ModelLibrary {
 public:
  // Loads the library from bytes (an anonymous memory file, so nothing is left on disk),
  // checks its ABI and creates the model. label names it in every message. Each context
  // runs with num_threads threads. Throws c10::Error with the reason.
  ModelLibrary(const uint8_t* bytes, size_t size, std::string label, int num_threads);
  ~ModelLibrary();
  ModelLibrary(const ModelLibrary&) = delete;
  ModelLibrary& operator=(const ModelLibrary&) = delete;

  // Runs once. Inputs are checked against the model (count, dtype, device here; shapes by
  // aotc_run itself) and made contiguous; outputs are new tensors on the inputs' device.
  // Safe to call from several threads at once: each call takes a context of its own.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs);

  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }

  struct Api;  // the ABI's functions, looked up in the library

 private:
  aotc_context* take_context();
  void give_back(aotc_context* context);
  void check(aotc_status status, const char* call) const;

  std::string label_;
  int num_threads_;
  void* handle_ = nullptr;
  int fd_ = -1;  // the memory file the library was loaded from, open while it is loaded
  std::unique_ptr<Api> api_;
  aotc_model* model_ = nullptr;
  bool cuda_ = false;
  std::vector<TensorInfo> inputs_, outputs_;
  std::mutex contexts_mutex_;
  std::vector<aotc_context*> idle_contexts_;  // contexts no run holds now
  std::vector<aotc_context*> all_contexts_;
};

}  // namespace aotc::torch_backend
