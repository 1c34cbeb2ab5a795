// install_paths.h - where a model build finds the aotc runtime it links and the headers
// the generated code includes. In order: an environment variable (AOTC_RUNTIME_LIB,
// AOTC_RUNTIME_INCLUDE, AOTC_CUDA_RUNTIME_LIB), then an install prefix around the binary
// that holds this code (PREFIX/BINDIR/aotc, or PREFIX/LIBDIR/libaotc_torch_backend.so loaded by
// torch), then the build tree aotc was built in. An install can so be moved anywhere.
#pragma once

#include <string>

namespace aotc::codegen {

// libaotc_runtime.a for the host.
std::string host_runtime_lib();
// The directory that holds aotc/aotc.h and aotc/rt/.
std::string runtime_include_dir();
// libaotc_runtime_cuda.a; empty when aotc was built without CUDA.
std::string cuda_runtime_lib();

}  // namespace aotc::codegen
