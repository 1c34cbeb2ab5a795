// install_paths.cpp - see install_paths.h.
#include "install_paths.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
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

// Where the binary holding this code (the aotc command or the TorchScript backend library)
// lies: in the build tree (aotc-build-tree.txt beside it), in an install prefix, or neither.
struct Location {
  fs::path binary_dir;                            // empty when dladdr cannot tell
  std::map<std::string, std::string> build_tree;  // KEY=PATH lines of aotc-build-tree.txt
  bool in_build_tree = false;
  fs::path prefix;  // PREFIX of an install (PREFIX/LIBDIR/libaotc_runtime.a exists), else empty
};

std::map<std::string, std::string> read_key_values(const fs::path& file) {
  std::map<std::string, std::string> values;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return values;
}

const Location& location() {
  static const Location where = [] {
    Location loc;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&strip_suffix), &info) == 0 || info.dli_fname == nullptr) return loc;
    std::error_code ec;
    loc.binary_dir = fs::canonical(info.dli_fname, ec).parent_path();
    if (ec) {
      loc.binary_dir.clear();
      return loc;
    }
    const fs::path build_tree_file = loc.binary_dir / AOTC_BUILD_TREE_FILE;
    if (fs::is_regular_file(build_tree_file, ec)) {
      loc.build_tree = read_key_values(build_tree_file);
      loc.in_build_tree = true;
      return loc;
    }
    for (const char* where : {AOTC_INSTALL_BINDIR, AOTC_INSTALL_LIBDIR}) {
      const fs::path candidate = strip_suffix(loc.binary_dir, where);
      if (!candidate.empty() &&
          fs::is_regular_file(candidate / AOTC_INSTALL_LIBDIR / "libaotc_runtime.a", ec)) {
        loc.prefix = candidate;
        break;
      }
    }
    return loc;
  }();
  return where;
}

std::string from_env(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? std::string(value) : std::string();
}

std::string build_tree_value(const char* key) {
  const auto& values = location().build_tree;
  const auto it = values.find(key);
  return it == values.end() ? std::string() : it->second;
}

// An environment variable, else the build tree's path (key of aotc-build-tree.txt), else
// the path in the install prefix; empty when aotc is neither in a build tree nor installed.
std::string choose(const char* env, const char* key, const fs::path& installed) {
  if (std::string value = from_env(env); !value.empty()) return value;
  const Location& loc = location();
  if (loc.in_build_tree) return build_tree_value(key);
  if (!loc.prefix.empty()) return (loc.prefix / installed).string();
  return "";
}

bool is_executable(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

// name's full path on PATH; empty when it is not there.
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path || name.empty()) return "";
  const std::string dirs(path);
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && is_executable(fs::path(dir) / name)) return (fs::path(dir) / name).string();
    start = end + 1;
  }
  return "";
}

// A compiler: the environment variable, else the build tree's (what meson found), else the
// one configured at build time (compiled in only when outside the source and build trees)
// if it is still there, else its name on PATH. Empty when none is found.
std::string compiler(const char* env, const char* key, const char* configured) {
  if (std::string value = from_env(env); !value.empty()) return value;
  if (location().in_build_tree) {
    if (std::string value = build_tree_value(key); !value.empty()) return value;
  }
  const std::string conf(configured);
  if (conf.empty()) return "";
  if (fs::path(conf).is_absolute() && is_executable(conf)) return conf;
  return find_on_path(fs::path(conf).filename().string());
}

std::string triple_env_name(const std::string& triple) {
  std::string env = "AOTC_RUNTIME_LIB_";
  for (char c : triple)
    env += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return env;
}

}  // namespace

std::string host_runtime_lib() {
  return choose("AOTC_RUNTIME_LIB", "RUNTIME_LIB", fs::path(AOTC_INSTALL_LIBDIR) / "libaotc_runtime.a");
}

std::string runtime_include_dir() {
  return choose("AOTC_RUNTIME_INCLUDE", "RUNTIME_INCLUDE", AOTC_INSTALL_INCLUDEDIR);
}

std::string cuda_runtime_lib() {
  if (std::string value = from_env("AOTC_CUDA_RUNTIME_LIB"); !value.empty()) return value;
  if (!AOTC_HAVE_CUDA) return "";
  return choose("AOTC_CUDA_RUNTIME_LIB", "CUDA_RUNTIME_LIB",
                fs::path(AOTC_INSTALL_LIBDIR) / "libaotc_runtime_cuda.a");
}

std::string runtime_lookup_note(const char* env_var) {
  const Location& loc = location();
  const std::string env(env_var);
  if (std::getenv(env_var) && *std::getenv(env_var)) return "(named by " + env + ")";
  if (loc.in_build_tree)
    return "(the build tree's, named by " + (loc.binary_dir / AOTC_BUILD_TREE_FILE).string() +
           "; build aotc first, or set " + env + ")";
  if (!loc.prefix.empty())
    return "(in the aotc install at " + loc.prefix.string() + "; reinstall aotc, or set " + env + ")";
  return "(aotc in " +
         (loc.binary_dir.empty() ? std::string("an unknown directory") : loc.binary_dir.string()) +
         " is neither installed, with PREFIX/" + AOTC_INSTALL_LIBDIR + "/libaotc_runtime.a beside PREFIX/" +
         AOTC_INSTALL_BINDIR + ", nor in a build tree, with " + AOTC_BUILD_TREE_FILE + " beside it; set " +
         env + ")";
}

CrossRuntime cross_runtime_lib(const std::string& triple) {
  CrossRuntime runtime;
  runtime.env = triple_env_name(triple);
  if (std::string value = from_env(runtime.env.c_str()); !value.empty()) {
    runtime.path = value;
    runtime.from_env = true;
    return runtime;
  }
  const Location& loc = location();
  const std::string build_dir = "build-" + triple;
  if (loc.in_build_tree) {
    // build-<triple>/ beside the host build directory (scripts/setup.sh configures it).
    runtime.path =
        (fs::path(build_tree_value("TARGET_BUILDS_DIR")) / build_dir / AOTC_RUNTIME_LIB_IN_BUILD).string();
    runtime.how_to_get = "run scripts/setup.sh (it builds " + build_dir +
                         "/ beside the aotc build directory), or set " + runtime.env +
                         " to the library built for " + triple;
  } else if (!loc.prefix.empty()) {
    // An install keeps the runtime built for another target in LIBDIR/<triple>/.
    runtime.path = (loc.prefix / AOTC_INSTALL_LIBDIR / triple / "libaotc_runtime.a").string();
    // A cross build's meson install puts its runtime there (runtime/meson.build).
    runtime.how_to_get = "this aotc install has none; build it from the aotc sources with this install's " +
                         std::string("prefix and libdir (meson setup ") + build_dir + " --cross-file cross/" +
                         triple + ".ini -Dbuild_compiler=false --prefix " + loc.prefix.string() +
                         " --libdir " + AOTC_INSTALL_LIBDIR + " && meson install -C " + build_dir +
                         "), or set " + runtime.env + " to the library built for " + triple;
  } else {
    runtime.how_to_get = "aotc is neither installed nor in a build tree; set " + runtime.env +
                         " to the library built for " + triple;
  }
  return runtime;
}

std::string cxx_program() { return compiler("AOTC_CXX", "CXX", AOTC_CXX); }

std::string nvcc_program() {
  if (std::string value = from_env("AOTC_NVCC"); !value.empty()) return value;
  if (!AOTC_HAVE_CUDA) return "";
  return compiler("AOTC_NVCC", "NVCC", AOTC_NVCC);
}

std::string cuda_lib_dir() {
  if (std::string value = from_env("AOTC_CUDA_LIB_DIR"); !value.empty()) return value;
  if (location().in_build_tree) {
    if (std::string value = build_tree_value("CUDA_LIB_DIR"); !value.empty()) return value;
  }
  std::error_code ec;
  if (std::string(AOTC_CUDA_LIB_DIR).empty() || !fs::is_directory(AOTC_CUDA_LIB_DIR, ec)) {
    // Beside the nvcc in use: CUDA/bin/nvcc, CUDA/lib64.
    const std::string nvcc = nvcc_program();
    if (!nvcc.empty()) return (fs::path(nvcc).parent_path().parent_path() / "lib64").string();
  }
  return AOTC_CUDA_LIB_DIR;
}

std::string ninja_program() {
  if (std::string value = from_env("AOTC_NINJA"); !value.empty()) return value;
  if (std::string on_path = find_on_path("ninja"); !on_path.empty()) return on_path;
  const Location& loc = location();
  if (loc.in_build_tree) {
    if (std::string value = build_tree_value("NINJA"); !value.empty()) return value;
  }
  const std::string conf(AOTC_NINJA);
  if (fs::path(conf).is_absolute() && is_executable(conf)) return conf;
  // The Python package: the ninja of its environment (pip install ninja), in the scripts
  // directory of the environment that holds the package, which may not be on PATH.
  if (!loc.prefix.empty() && !std::string(AOTC_INSTALL_TOOLSDIR).empty()) {
    const fs::path beside = loc.prefix / AOTC_INSTALL_TOOLSDIR / "ninja";
    if (is_executable(beside)) return beside.lexically_normal().string();
  }
  if (std::string other = find_on_path("ninja-build"); !other.empty()) return other;
  return "";
}

}  // namespace aotc::codegen
