// model_library.cpp - see model_library.h.
#include "model_library.h"

#include <ATen/ops/empty.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace aotc::torch_backend {

struct ModelLibrary::Api {
  uint32_t (*abi_version)();
  const char* (*last_error)();
  const char* (*status_name)(aotc_status);
  aotc_status (*model_create)(aotc_model**);
  aotc_status (*model_destroy)(aotc_model*);
  aotc_status (*model_num_inputs)(const aotc_model*, size_t*);
  aotc_status (*model_num_outputs)(const aotc_model*, size_t*);
  aotc_status (*model_input_info)(const aotc_model*, size_t, aotc_tensor_info*);
  aotc_status (*model_output_info)(const aotc_model*, size_t, aotc_tensor_info*);
  aotc_status (*context_create)(aotc_model*, const aotc_context_options*, aotc_context**);
  aotc_status (*context_destroy)(aotc_context*);
  aotc_status (*run)(const aotc_model*, aotc_context*, const aotc_tensor*, size_t, aotc_tensor*, size_t);
  // Minor version 2; absent (nullptr) in older libraries, which are CPU-only.
  aotc_status (*model_device)(aotc_device_type*);
  aotc_status (*context_set_cuda_stream)(aotc_context*, void*);
};

namespace {

// A file holding the library's bytes, for dlopen: an anonymous memory file, named
// /proc/self/fd/N. glibc takes a name it has loaded already for that library, so the
// descriptor stays open while the library is loaded (no other library gets its number)
// and a name some library still holds is never used; then, and where memfd_create is
// missing, a private temporary file, removed right after dlopen.
struct LibraryFile {
  int fd = -1;
  std::string path;
  bool temporary = false;
};

void write_all(int fd, const uint8_t* bytes, size_t size, const std::string& label) {
  size_t written = 0;
  while (written < size) {
    const ssize_t n = ::write(fd, bytes + written, size - written);
    if (n < 0 && errno == EINTR) continue;
    TORCH_CHECK(n > 0, "aotc: ", label, ": cannot write the model library: ", std::strerror(errno));
    written += static_cast<size_t>(n);
  }
}

LibraryFile create_library_file(const std::string& label) {
  LibraryFile file;
  file.fd = memfd_create("aotc-model", MFD_CLOEXEC);
  if (file.fd >= 0) {
    file.path = "/proc/self/fd/" + std::to_string(file.fd);
    if (void* stale = ::dlopen(file.path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
      ::dlclose(stale);
      ::close(file.fd);
      file.fd = -1;
    } else {
      return file;
    }
  }
  file.path = (std::filesystem::temp_directory_path() / "aotc-model-XXXXXX").string();
  file.fd = mkstemp(file.path.data());
  TORCH_CHECK(file.fd >= 0, "aotc: ", label,
              ": cannot create a file for the model library: ", std::strerror(errno));
  file.temporary = true;
  return file;
}

// Loads the bytes; returns the dlopen handle and sets *fd to the descriptor to close after
// dlclose (-1 when none stays open).
void* open_from_bytes(const uint8_t* bytes, size_t size, const std::string& label, int* fd) {
  LibraryFile file = create_library_file(label);
  void* handle = nullptr;
  const char* why = nullptr;
  try {
    write_all(file.fd, bytes, size, label);
    handle = ::dlopen(file.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) why = ::dlerror();
  } catch (...) {
    ::close(file.fd);
    if (file.temporary) std::remove(file.path.c_str());
    throw;
  }
  if (file.temporary) {
    std::remove(file.path.c_str());
    ::close(file.fd);
    file.fd = -1;
  }
  if (!handle && file.fd >= 0) ::close(file.fd);
  TORCH_CHECK(handle, "aotc: ", label,
              ": cannot load the model library: ", why ? why : "unknown dlopen error");
  *fd = file.fd;
  return handle;
}

template <class Fn>
void resolve(void* handle, const char* name, Fn& fn, const std::string& label, bool required = true) {
  void* symbol = ::dlsym(handle, name);
  TORCH_CHECK(symbol || !required, "aotc: ", label, ": not an aotc model library (no ", name, ")");
  static_assert(sizeof fn == sizeof symbol);
  std::memcpy(&fn, &symbol, sizeof fn);  // POSIX guarantees the conversion works
}

c10::ScalarType scalar_type_of(aotc_dtype dtype) {
  switch (dtype) {
    case AOTC_DTYPE_FLOAT32:
      return c10::kFloat;
    case AOTC_DTYPE_FLOAT16:
      return c10::kHalf;
    case AOTC_DTYPE_BFLOAT16:
      return c10::kBFloat16;
    case AOTC_DTYPE_INT64:
      return c10::kLong;
    case AOTC_DTYPE_INT32:
      return c10::kInt;
    case AOTC_DTYPE_BOOL:
      return c10::kBool;
  }
  TORCH_CHECK(false, "aotc: unknown dtype code ", static_cast<int>(dtype));
}

std::string dims_text(c10::IntArrayRef dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

std::vector<TensorInfo> read_infos(const ModelLibrary::Api& api, const aotc_model* model, bool outputs,
                                   const std::function<void(aotc_status, const char*)>& check) {
  size_t count = 0;
  check(outputs ? api.model_num_outputs(model, &count) : api.model_num_inputs(model, &count), "num");
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < count; ++i) {
    aotc_tensor_info info{};
    check(outputs ? api.model_output_info(model, i, &info) : api.model_input_info(model, i, &info), "info");
    infos.push_back({info.name, info.dtype, std::vector<int64_t>(info.dims, info.dims + info.rank)});
  }
  return infos;
}

}  // namespace

ModelLibrary::ModelLibrary(const uint8_t* bytes, size_t size, std::string label, int num_threads)
    : label_(std::move(label)),
      num_threads_(num_threads < 1 ? 1 : num_threads),
      api_(std::make_unique<Api>()) {
  handle_ = open_from_bytes(bytes, size, label_, &fd_);
  try {
    Api& a = *api_;
    resolve(handle_, "aotc_abi_version", a.abi_version, label_);
    TORCH_CHECK(a.abi_version() == AOTC_ABI_VERSION, "aotc: ", label_, ": the model library has ABI version ",
                a.abi_version(), ", this backend supports ", AOTC_ABI_VERSION);
    resolve(handle_, "aotc_last_error", a.last_error, label_);
    resolve(handle_, "aotc_status_name", a.status_name, label_);
    resolve(handle_, "aotc_model_create", a.model_create, label_);
    resolve(handle_, "aotc_model_destroy", a.model_destroy, label_);
    resolve(handle_, "aotc_model_num_inputs", a.model_num_inputs, label_);
    resolve(handle_, "aotc_model_num_outputs", a.model_num_outputs, label_);
    resolve(handle_, "aotc_model_input_info", a.model_input_info, label_);
    resolve(handle_, "aotc_model_output_info", a.model_output_info, label_);
    resolve(handle_, "aotc_context_create", a.context_create, label_);
    resolve(handle_, "aotc_context_destroy", a.context_destroy, label_);
    resolve(handle_, "aotc_run", a.run, label_);
    resolve(handle_, "aotc_model_device", a.model_device, label_, false);
    resolve(handle_, "aotc_context_set_cuda_stream", a.context_set_cuda_stream, label_, false);
    aotc_device_type device = AOTC_DEVICE_CPU;
    if (a.model_device) check(a.model_device(&device), "aotc_model_device");
    cuda_ = device == AOTC_DEVICE_CUDA;
    check(a.model_create(&model_), "aotc_model_create");
    const auto checker = [this](aotc_status status, const char* call) { check(status, call); };
    inputs_ = read_infos(a, model_, false, checker);
    outputs_ = read_infos(a, model_, true, checker);
  } catch (...) {
    if (model_) api_->model_destroy(model_);
    ::dlclose(handle_);
    if (fd_ >= 0) ::close(fd_);
    throw;
  }
}

ModelLibrary::~ModelLibrary() {
  // Contexts first (their worker threads run the library's code), then the model.
  for (aotc_context* context : all_contexts_) api_->context_destroy(context);
  if (model_) api_->model_destroy(model_);
  ::dlclose(handle_);
  if (fd_ >= 0) ::close(fd_);  // after dlclose: the name stays this library's until then
}

void ModelLibrary::check(aotc_status status, const char* call) const {
  if (status == AOTC_OK) return;
  TORCH_CHECK(false, "aotc: ", label_, ": ", call, " failed with ", api_->status_name(status), ": ",
              api_->last_error());
}

aotc_context* ModelLibrary::take_context() {
  {
    std::lock_guard<std::mutex> lock(contexts_mutex_);
    if (!idle_contexts_.empty()) {
      aotc_context* context = idle_contexts_.back();
      idle_contexts_.pop_back();
      return context;
    }
  }
  aotc_context_options options{};
  options.num_threads = num_threads_;
  aotc_context* context = nullptr;
  check(api_->context_create(model_, &options, &context), "aotc_context_create");
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  all_contexts_.push_back(context);
  return context;
}

void ModelLibrary::give_back(aotc_context* context) {
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  idle_contexts_.push_back(context);
}

std::vector<at::Tensor> ModelLibrary::run(const std::vector<at::Tensor>& given) {
  TORCH_CHECK(given.size() == inputs_.size(), "aotc: ", label_, ": expected ", inputs_.size(),
              " input tensor(s), got ", given.size());
  std::vector<at::Tensor> inputs;
  inputs.reserve(given.size());
  std::optional<c10::Device> device;
  for (size_t i = 0; i < given.size(); ++i) {
    const at::Tensor& t = given[i];
    const TensorInfo& info = inputs_[i];
    const c10::ScalarType want = scalar_type_of(info.dtype);
    TORCH_CHECK(t.defined(), "aotc: ", label_, ": input '", info.name, "' is undefined");
    TORCH_CHECK(t.scalar_type() == want, "aotc: ", label_, ": input '", info.name, "': expected ",
                c10::toString(want), " ", dims_text(info.dims), ", got ", c10::toString(t.scalar_type()), " ",
                dims_text(t.sizes()));
    TORCH_CHECK(t.sizes().vec() == info.dims, "aotc: ", label_, ": input '", info.name, "': expected shape ",
                dims_text(info.dims), ", got ", dims_text(t.sizes()));
    TORCH_CHECK(t.is_cuda() == cuda_, "aotc: ", label_, ": input '", info.name, "' is on ", t.device().str(),
                ", but the model library runs on ",
                cuda_ ? "CUDA: give CUDA tensors" : "the CPU: give CPU tensors");
    if (device) TORCH_CHECK(*device == t.device(), "aotc: ", label_, ": inputs on different devices");
    device = t.device();
    inputs.push_back(t.contiguous());
  }
  const c10::Device out_device = device ? *device : c10::Device(c10::kCPU);
  std::vector<at::Tensor> outputs;
  for (const TensorInfo& info : outputs_)
    outputs.push_back(
        at::empty(info.dims, at::TensorOptions().dtype(scalar_type_of(info.dtype)).device(out_device)));

  const uint64_t memory = cuda_ ? AOTC_MEMORY_DEVICE : AOTC_MEMORY_HOST;
  const auto describe = [memory](const at::Tensor& t, aotc_dtype dtype) {
    aotc_tensor desc{};
    desc.data = t.data_ptr();
    desc.dtype = dtype;
    desc.rank = static_cast<int32_t>(t.dim());
    desc.dims = t.sizes().data();
    desc.size_bytes = static_cast<uint64_t>(t.nbytes());
    desc.memory = memory;
    return desc;
  };
  std::vector<aotc_tensor> in_descs, out_descs;
  for (size_t i = 0; i < inputs.size(); ++i) in_descs.push_back(describe(inputs[i], inputs_[i].dtype));
  for (size_t i = 0; i < outputs.size(); ++i) out_descs.push_back(describe(outputs[i], outputs_[i].dtype));

  aotc_context* context = take_context();
  struct Return {
    ModelLibrary* self;
    aotc_context* context;
    ~Return() { self->give_back(context); }
  } give_back_later{this, context};
  if (cuda_) {
    // Torch's current stream on the inputs' device: the run is ordered after the work that
    // produced the inputs and before what reads the outputs, with no synchronisation.
    TORCH_CHECK(api_->context_set_cuda_stream, "aotc: ", label_, ": the CUDA library has no stream function");
    // Torch's default stream is CUDA's legacy default stream, handle 0, which aotc takes to
    // mean the context's own stream: it is passed as cudaStreamLegacy ((void*)1) instead.
    const c10::Stream stream = c10::impl::getDeviceGuardImpl(c10::kCUDA)->getStream(out_device);
    void* handle = stream.native_handle();
    check(api_->context_set_cuda_stream(context, handle ? handle : reinterpret_cast<void*>(1)),
          "aotc_context_set_cuda_stream");
  }
  check(api_->run(model_, context, in_descs.data(), in_descs.size(), out_descs.data(), out_descs.size()),
        "aotc_run");
  return outputs;
}

}  // namespace aotc::torch_backend
