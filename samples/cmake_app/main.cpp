// The CMake sample's program: runs the model that aotc_add_model compiled and linked in
// (no dlopen) through the C ABI of aotc/aotc.h, and prints every output.
//
//   cmake_app [INPUT.f32]
//
// INPUT.f32: raw float32 values for the model's one float32 input (make_model.py writes
// one); without it the input is 0.1 * (i % 7) - 0.3 for element i. Prints one line per
// output, "NAME DTYPE [DIMS]: v0 v1 ...", and exits 1 with aotc_last_error() on any error.
#include <aotc/aotc.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

int fail(const char* what, aotc_status status) {
  std::fprintf(stderr, "cmake_app: %s failed: %s: %s\n", what, aotc_status_name(status), aotc_last_error());
  return 1;
}

std::string dims_text(const aotc_tensor_info& info) {
  std::string text = "[";
  for (int32_t d = 0; d < info.rank; ++d) text += (d ? ", " : "") + std::to_string(info.dims[d]);
  return text + "]";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2) {
    std::fprintf(stderr, "usage: %s [INPUT.f32]\n", argv[0]);
    return 2;
  }
  if (aotc_abi_version() != AOTC_ABI_VERSION) {
    std::fprintf(stderr, "cmake_app: the model has ABI version %u, this program was built for %u\n",
                 aotc_abi_version(), AOTC_ABI_VERSION);
    return 1;
  }
  aotc_model* model = nullptr;
  if (aotc_status s = aotc_model_create(&model); s != AOTC_OK) return fail("aotc_model_create", s);
  size_t num_inputs = 0, num_outputs = 0;
  if (aotc_status s = aotc_model_num_inputs(model, &num_inputs); s != AOTC_OK)
    return fail("aotc_model_num_inputs", s);
  if (aotc_status s = aotc_model_num_outputs(model, &num_outputs); s != AOTC_OK)
    return fail("aotc_model_num_outputs", s);
  if (num_inputs != 1) {
    std::fprintf(stderr, "cmake_app: the model has %zu inputs; this sample feeds one\n", num_inputs);
    return 1;
  }
  aotc_tensor_info in_info{};
  if (aotc_status s = aotc_model_input_info(model, 0, &in_info); s != AOTC_OK)
    return fail("aotc_model_input_info", s);
  if (in_info.dtype != AOTC_DTYPE_FLOAT32) {
    std::fprintf(stderr, "cmake_app: input %s is %s; this sample feeds float32\n", in_info.name,
                 aotc_dtype_name(in_info.dtype));
    return 1;
  }
  std::vector<float> x(in_info.size_bytes / sizeof(float));
  if (argc == 2) {
    std::ifstream file(argv[1], std::ios::binary | std::ios::ate);
    if (!file) {
      std::fprintf(stderr, "cmake_app: cannot open %s\n", argv[1]);
      return 1;
    }
    const std::streamoff size = file.tellg();
    if (size != static_cast<std::streamoff>(in_info.size_bytes)) {
      std::fprintf(stderr, "cmake_app: %s has %lld bytes; input %s %s needs %llu\n", argv[1],
                   static_cast<long long>(size), in_info.name, dims_text(in_info).c_str(),
                   static_cast<unsigned long long>(in_info.size_bytes));
      return 1;
    }
    file.seekg(0);
    file.read(reinterpret_cast<char*>(x.data()), size);
  } else {
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  }
  aotc_tensor input{};
  input.data = x.data();
  input.dtype = in_info.dtype;
  input.rank = in_info.rank;
  input.dims = in_info.dims;
  input.size_bytes = in_info.size_bytes;

  std::vector<aotc_tensor_info> out_info(num_outputs);
  std::vector<std::vector<unsigned char>> out_data(num_outputs);
  std::vector<aotc_tensor> outputs(num_outputs);
  for (size_t i = 0; i < num_outputs; ++i) {
    if (aotc_status s = aotc_model_output_info(model, i, &out_info[i]); s != AOTC_OK)
      return fail("aotc_model_output_info", s);
    out_data[i].resize(out_info[i].size_bytes);
    outputs[i].data = out_data[i].data();
    outputs[i].dtype = out_info[i].dtype;
    outputs[i].rank = out_info[i].rank;
    outputs[i].dims = out_info[i].dims;
    outputs[i].size_bytes = out_info[i].size_bytes;
  }

  aotc_context_options options{};
  options.num_threads = 1;
  aotc_context* context = nullptr;
  if (aotc_status s = aotc_context_create(model, &options, &context); s != AOTC_OK)
    return fail("aotc_context_create", s);
  if (aotc_status s = aotc_run(model, context, &input, 1, outputs.data(), outputs.size()); s != AOTC_OK)
    return fail("aotc_run", s);

  for (size_t i = 0; i < num_outputs; ++i) {
    std::printf("%s %s %s:", out_info[i].name, aotc_dtype_name(out_info[i].dtype),
                dims_text(out_info[i]).c_str());
    if (out_info[i].dtype == AOTC_DTYPE_FLOAT32) {
      const float* v = reinterpret_cast<const float*>(out_data[i].data());
      for (size_t j = 0; j < out_info[i].size_bytes / sizeof(float); ++j) std::printf(" %.9g", v[j]);
    } else {
      std::printf(" (%llu bytes, not float32: not printed)",
                  static_cast<unsigned long long>(out_info[i].size_bytes));
    }
    std::printf("\n");
  }
  if (aotc_status s = aotc_context_destroy(context); s != AOTC_OK) return fail("aotc_context_destroy", s);
  if (aotc_status s = aotc_model_destroy(model); s != AOTC_OK) return fail("aotc_model_destroy", s);
  return 0;
}
