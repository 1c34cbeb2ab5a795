// install_paths.cpp - see install_paths.h.
#include "install_paths.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "aotc_config.h"

namespace aotc::codegen {
namespace fs = std::filesystem;
namespace {

// dir minus its trailing components equal to suffix ("/usr/lib/x86_64-linux-gnu" minus
// "lib/x86_64-linux-gnu" is "/usr"); empty when dir does not end with them.
fs::path strip_suffix(fs::path dir, const fs::path& suffix) {
  std::vector<fs::path> parts(suffix.begin(), suffix.end());
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (dir.filename() != *it) return fs::path();
    dir = dir.parent_path();
  }
  return dir;
}

// PREFIX when the binary holding this code lies in PREFIX/BINDIR (the aotc command) or
// PREFIX/LIBDIR (the TorchScript backend library) and PREFIX/LIBDIR/libaotc_runtime.a
// exists: an installed aotc. Empty otherwise (the build tree).
const fs::path& install_prefix() {
  static const fs::path prefix = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&strip_suffix), &info) == 0 || info.dli_fname == nullptr)
      return fs::path();
    std::error_code ec;
    const fs::path dir = fs::canonical(info.dli_fname, ec).parent_path();
    if (ec) return fs::path();
    for (const char* where : {AOTC_INSTALL_BINDIR, AOTC_INSTALL_LIBDIR}) {
      const fs::path candidate = strip_suffix(dir, where);
      if (!candidate.empty() &&
          fs::is_regular_file(candidate / AOTC_INSTALL_LIBDIR / "libaotc_runtime.a", ec))
        return candidate;
    }
    return fs::path();
  }();
  return prefix;
}

std::string choose(const char* env, const fs::path& installed, const char* in_build_tree) {
  if (const char* value = std::getenv(env); value && *value) return value;
  if (!install_prefix().empty()) return (install_prefix() / installed).string();
  return in_build_tree;
}

}  // namespace

std::string host_runtime_lib() {
  return choose("AOTC_RUNTIME_LIB", fs::path(AOTC_INSTALL_LIBDIR) / "libaotc_runtime.a", AOTC_RUNTIME_LIB);
}

std::string runtime_include_dir() {
  return choose("AOTC_RUNTIME_INCLUDE", AOTC_INSTALL_INCLUDEDIR, AOTC_RUNTIME_INCLUDE);
}

std::string cuda_runtime_lib() {
  if (std::string(AOTC_CUDA_RUNTIME_LIB).empty() && !std::getenv("AOTC_CUDA_RUNTIME_LIB")) return "";
  return choose("AOTC_CUDA_RUNTIME_LIB", fs::path(AOTC_INSTALL_LIBDIR) / "libaotc_runtime_cuda.a",
                AOTC_CUDA_RUNTIME_LIB);
}

}  // namespace aotc::codegen
