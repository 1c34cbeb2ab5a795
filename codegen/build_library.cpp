// build_library.cpp - writes the generated sources and build.ninja, runs ninja, and
// publishes the .so atomically: built in a work directory, copied to a temporary file
// beside the output, fsync'd, then renamed over the output path.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "../compiler/ir/error.h"
#include "aotc_config.h"
#include "codegen.h"
#include "cuda/cuda_target.h"
#include "install_paths.h"
#include "template_text.h"
#include "templates_embedded.h"

namespace aotc::codegen {
namespace fs = std::filesystem;
namespace {

void write_file(const fs::path& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw CompileError("cannot write " + path.string());
}

void write_text(const fs::path& path, const std::string& text) { write_file(path, text.data(), text.size()); }

// Single-quoted for /bin/sh.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a command, returning its exit status and combined output.
int run_command(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw CompileError("cannot run: " + command);
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// Writes bytes to a new temporary file beside final_path (fsync'd, with mode) and returns
// its path.
std::string write_temp_beside(const fs::path& final_path, const void* data, size_t size, mode_t mode) {
  const fs::path dir = final_path.has_parent_path() ? final_path.parent_path() : fs::path(".");
  std::string temp = (dir / ("." + final_path.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = mkstemp(temp.data());
  if (fd < 0) throw CompileError("cannot create a file in " + dir.string() + ": " + std::strerror(errno));
  size_t written = 0;
  while (written < size) {
    const ssize_t n = ::write(fd, static_cast<const char*>(data) + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  const bool ok = written == size && ::fchmod(fd, mode) == 0 && ::fsync(fd) == 0;
  const std::string reason = std::strerror(errno);
  ::close(fd);
  if (!ok) {
    std::remove(temp.c_str());
    throw CompileError("cannot write " + final_path.string() + ": " + reason);
  }
  return temp;
}

// A file removed when this goes out of scope, unless path was cleared.
struct TempFile {
  std::string path;
  ~TempFile() {
    if (!path.empty()) std::remove(path.c_str());
  }
};

void check_output(const fs::path& output) {
  const fs::path dir = output.has_parent_path() ? output.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw CompileError("output directory " + dir.string() + " does not exist");
  if (fs::is_directory(output, ec)) throw CompileError("output path " + output.string() + " is a directory");
}

// Publishes the built .so at output and, with external weights, the weights beside it.
// Both are written to temporary files first; then the weights file is renamed into
// place, then the .so. If the .so cannot be renamed, the previous weights file (kept as
// a hard link) is put back, or the new one removed: a failed publish never leaves a new
// file of one kind next to an old one of the other. (Only a crash between the two
// renames could; aotc_model_create_v2 then refuses the pair by its checksum.)
void publish(const fs::path& built, const fs::path& output, const std::vector<uint8_t>* weights) {
  check_output(output);
  const fs::path weights_output = weights ? fs::path(weights_path_for(output.string())) : fs::path();
  if (weights) check_output(weights_output);
  std::ifstream in(built, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in) throw CompileError("cannot read the built library " + built.string());
  TempFile so_temp{write_temp_beside(output, bytes.data(), bytes.size(), 0755)};
  if (weights) {
    TempFile weights_temp{write_temp_beside(weights_output, weights->data(), weights->size(), 0644)};
    TempFile backup;
    std::error_code ec;
    if (fs::exists(weights_output, ec)) {
      // A free name beside it, then a second link to the previous weights file.
      std::string name = weights_output.string() + ".old.XXXXXX";
      const int fd = mkstemp(name.data());
      if (fd >= 0) {
        ::close(fd);
        std::remove(name.c_str());
        if (::link(weights_output.c_str(), name.c_str()) == 0) backup.path = name;
      }
    }
    if (std::rename(weights_temp.path.c_str(), weights_output.c_str()) != 0)
      throw CompileError("cannot write " + weights_output.string() + ": " + std::strerror(errno));
    weights_temp.path.clear();
    if (std::rename(so_temp.path.c_str(), output.c_str()) != 0) {
      const std::string reason = std::strerror(errno);
      if (backup.path.empty() || std::rename(backup.path.c_str(), weights_output.c_str()) != 0)
        std::remove(weights_output.c_str());
      else
        backup.path.clear();
      throw CompileError("cannot write " + output.string() + ": " + reason);
    }
    so_temp.path.clear();
    return;  // the backup link goes with `backup`
  }
  if (std::rename(so_temp.path.c_str(), output.c_str()) != 0)
    throw CompileError("cannot write " + output.string() + ": " + std::strerror(errno));
  so_temp.path.clear();
}

}  // namespace

std::string weights_path_for(const std::string& so_path) {
  const fs::path path(so_path);
  const std::string name = path.filename().string();
  if (name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0)
    return (path.parent_path() / (name.substr(0, name.size() - 3) + ".weights")).string();
  return so_path + ".weights";
}

std::string ninja_shell_arg(const std::string& s) {
  std::string out;
  for (char c : shell_quote(s)) out += c == '$' ? std::string("$$") : std::string(1, c);
  return out;
}

std::string ninja_path(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '$' || c == ' ' || c == ':') out += '$';
    out += c;
  }
  return out;
}

Target resolve_target(const std::string& triple) {
  // The CPU targets besides the host, and their clang flags; each needs the runtime built
  // for it (cross/<triple>.ini). The aarch64 flags match runtime_cpu_args in meson.build.
  static const std::pair<const char*, const char*> kCrossTargets[] = {
      {"aarch64-linux-gnu", "--target=aarch64-linux-gnu -march=armv8-a"},  // ARMv8-A, NEON
  };
  std::error_code ec;
  if (triple.empty() || triple == AOTC_HOST_TRIPLE) {
    Target host{AOTC_HOST_TRIPLE, AOTC_TARGET_FLAGS, host_runtime_lib()};
    if (host.runtime_lib.empty())
      throw CompileError("cannot find the aotc runtime library " + runtime_lookup_note("AOTC_RUNTIME_LIB"));
    if (!fs::is_regular_file(host.runtime_lib, ec))
      throw CompileError("the aotc runtime library " + host.runtime_lib + " does not exist " +
                         runtime_lookup_note("AOTC_RUNTIME_LIB"));
    return host;
  }
  Target target;
  std::string known = std::string(AOTC_HOST_TRIPLE) + " (the host)";
  for (const auto& [name, flags] : kCrossTargets) {
    known += std::string(", ") + name;
    if (triple == name) target = {name, flags, ""};
  }
  if (target.triple.empty())
    throw CompileError("unknown target triple '" + triple + "' (known: " + known + ")");

  // AOTC_RUNTIME_LIB_<TRIPLE>, else build-<triple>/ beside the host build directory, else
  // LIBDIR/<triple>/ of an install (install_paths.h).
  const CrossRuntime runtime = cross_runtime_lib(triple);
  target.runtime_lib = runtime.path;
  if (!runtime.path.empty() && fs::is_regular_file(runtime.path, ec)) return target;
  if (runtime.from_env)
    throw CompileError("no aotc runtime for " + triple + ": " + runtime.env + " names " + runtime.path +
                       ", which does not exist");
  if (runtime.path.empty()) throw CompileError("no aotc runtime for " + triple + ": " + runtime.how_to_get);
  throw CompileError("no aotc runtime for " + triple + ": " + runtime.path + " does not exist; " +
                     runtime.how_to_get);
}

void build_shared_library(const Sources& sources, const BuildOptions& options) {
  if (options.no_build && options.emit_source_dir.empty())
    throw CompileError("internal: --no-build without --emit-source would keep nothing");
  fs::path work;
  bool temporary = false;
  if (!options.emit_source_dir.empty()) {
    work = options.emit_source_dir;
    std::error_code ec;
    fs::create_directories(work, ec);
    if (ec) throw CompileError("cannot create " + work.string() + ": " + ec.message());
  } else {
    std::string pattern = (fs::temp_directory_path() / "aotc-build-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw CompileError(std::string("cannot create a temporary directory: ") + std::strerror(errno));
    work = pattern;
    temporary = true;
  }
  struct Cleanup {
    fs::path dir;
    bool active;
    ~Cleanup() {
      std::error_code ec;
      if (active) fs::remove_all(dir, ec);
    }
  } cleanup{work, temporary && std::getenv("AOTC_KEEP_BUILD") == nullptr};

  const Target target = resolve_target(options.target_triple);
  const std::string& runtime_lib = target.runtime_lib;
  const std::string runtime_include = runtime_include_dir();
  if (runtime_include.empty())
    throw CompileError("cannot find the aotc runtime headers " + runtime_lookup_note("AOTC_RUNTIME_INCLUDE"));
  const std::string cxx = cxx_program();
  if (cxx.empty())
    throw CompileError(
        "cannot find clang++, which builds the model library: install clang (and lld), put it on "
        "PATH, or set AOTC_CXX");
  const std::string ninja_exe = options.no_build ? std::string() : ninja_program();
  if (ninja_exe.empty() && !options.no_build)
    throw CompileError(
        "cannot find ninja, which runs the model build: install it (pip install ninja, or apt "
        "install ninja-build), put it on PATH, or set AOTC_NINJA");
  write_text(work / (sources.cuda ? "model.cu" : "model.cpp"), sources.model_cpp);
  write_text(work / "weights.S", sources.weights_s);
  if ((options.weights == WeightsMode::File) != sources.weights_external)
    throw CompileError("internal: the sources and the build options disagree on where the weights go");
  // External weights are published beside the .so; the library's own blob stays empty.
  write_file(work / "weights.bin", sources.weights_bin.data(),
             sources.weights_external ? 0 : sources.weights_bin.size());
  write_text(work / "exports.map", sources.exports_map);
  std::string ninja;
  if (sources.cuda) {
    try {
      ninja = cuda::cuda_build_ninja(sources, cxx, runtime_lib, runtime_include);
    } catch (const CompileError& e) {
      // --no-build asks for the sources, which need no CUDA toolchain (a machine without
      // nvcc can still diff model.cu); only the build.ninja that would run nvcc is missing.
      if (!options.no_build) throw;
      std::fprintf(stderr, "aotc: note: --no-build: no build.ninja written: %s\n", e.what());
    }
  } else {
    ninja = fill_template(templates::build_ninja_in, {{"AOTC_VERSION", AOTC_VERSION_STRING},
                                                      {"CXX", ninja_shell_arg(cxx)},
                                                      {"TARGET_FLAGS", target.flags},
                                                      {"RUNTIME_INCLUDE", ninja_shell_arg(runtime_include)},
                                                      {"RUNTIME_LIB", ninja_path(runtime_lib)}});
  }
  if (ninja.empty()) {
    std::error_code ec;
    fs::remove(work / "build.ninja", ec);  // not one of an earlier compile beside new sources
  } else {
    write_text(work / "build.ninja", ninja);
  }
  if (options.no_build) return;

  std::string output;
  const std::string command = shell_quote(ninja_exe) + " -C " + shell_quote(work.string());
  if (options.verbose) std::fprintf(stderr, "aotc: %s\n", command.c_str());
  const int status = run_command(command, output);
  if (options.verbose) std::fprintf(stderr, "%s", output.c_str());
  if (status != 0) {
    if (output.size() > 4000) output = "..." + output.substr(output.size() - 4000);
    throw CompileError(
        "building the model library failed (this is a bug in aotc; sources kept with "
        "--emit-source DIR):\n" +
        output);
  }
  publish(work / "model.so", options.output_path, sources.weights_external ? &sources.weights_bin : nullptr);
}

}  // namespace aotc::codegen
