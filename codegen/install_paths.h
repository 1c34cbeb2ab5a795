// install_paths.h - where a model build finds the aotc runtime it links, the headers the
// generated code includes, and the tools it runs. No path of the source or build tree is
// compiled into aotc, so an install can be moved anywhere:
//  - an environment variable first (AOTC_RUNTIME_LIB, AOTC_RUNTIME_INCLUDE,
//    AOTC_CUDA_RUNTIME_LIB, AOTC_RUNTIME_LIB_<TRIPLE>, AOTC_CXX, AOTC_NINJA, AOTC_NVCC,
//    AOTC_CUDA_LIB_DIR);
//  - in the build tree, the file aotc-build-tree.txt that meson writes beside the binary
//    holding this code (build/compiler/aotc, build/compiler/libaotc_torch_backend.so;
//    compiler/meson.build): KEY=PATH lines naming the build tree's runtime, headers, cross
//    build directories and the tools meson found. It is never installed;
//  - else an install prefix around that binary (PREFIX/BINDIR/aotc, or
//    PREFIX/LIBDIR/libaotc_torch_backend.so loaded by torch) with
//    PREFIX/LIBDIR/libaotc_runtime.a, PREFIX/INCLUDEDIR/aotc/aotc.h.
// Tools (clang++, nvcc, the CUDA library directory) that meson found outside the source and
// build trees are compiled in; ninja is looked up on PATH first.
#pragma once

#include <string>

namespace aotc::codegen {

// libaotc_runtime.a for the host.
std::string host_runtime_lib();
// The directory that holds aotc/aotc.h and aotc/rt/.
std::string runtime_include_dir();
// libaotc_runtime_cuda.a; empty when aotc was built without CUDA.
std::string cuda_runtime_lib();

// Where a missing runtime library was looked for and how to get one: a clause for the error
// message about host_runtime_lib() or cuda_runtime_lib() not existing.
std::string runtime_lookup_note(const char* env_var);

// The runtime library built for a cross target (e.g. aarch64-linux-gnu): AOTC_RUNTIME_LIB_<T>,
// else build-<T>/ beside the build tree's directory, else PREFIX/LIBDIR/<T>/ of an install.
struct CrossRuntime {
  std::string path;  // where it should be (it may not exist)
  std::string env;   // the environment variable that overrides it
  bool from_env = false;
  std::string how_to_get;  // for the error message when path does not exist
};
CrossRuntime cross_runtime_lib(const std::string& triple);

// The tools a model build runs.
std::string cxx_program();    // clang++
std::string ninja_program();  // ninja
std::string nvcc_program();   // nvcc; empty when aotc was built without CUDA and none is named
std::string cuda_lib_dir();   // cuBLAS and the static CUDA runtime

}  // namespace aotc::codegen
