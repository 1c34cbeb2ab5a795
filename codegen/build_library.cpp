// build_library.cpp - writes the generated sources and build.ninja, runs ninja, and
// publishes the .so atomically: built in a work directory, copied to a temporary file
// beside the output, fsync'd, then renamed over the output path.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "../compiler/ir/error.h"
#include "aotc_config.h"
#include "codegen.h"
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

// For ninja variables that end up in a shell command: single-quoted, with '$' escaped
// for ninja.
std::string shell_arg(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else if (c == '$')
      out += "$$";
    else
      out += c;
  }
  return out + "'";
}

// Ninja paths in build statements: escape '$', ' ' and ':'.
std::string ninja_path(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '$' || c == ' ' || c == ':') out += '$';
    out += c;
  }
  return out;
}

std::string getenv_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
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

void publish(const fs::path& built, const fs::path& output) {
  const fs::path dir = output.has_parent_path() ? output.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw CompileError("output directory " + dir.string() + " does not exist");
  if (fs::is_directory(output, ec)) throw CompileError("output path " + output.string() + " is a directory");
  std::string temp = (dir / ("." + output.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = mkstemp(temp.data());
  if (fd < 0) throw CompileError("cannot create a file in " + dir.string() + ": " + std::strerror(errno));
  std::ifstream in(built, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  const bool ok = in && written == bytes.size() && ::fchmod(fd, 0755) == 0 && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(temp.c_str(), output.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temp.c_str());
    throw CompileError("cannot write " + output.string() + ": " + reason);
  }
}

}  // namespace

void build_shared_library(const Sources& sources, const BuildOptions& options) {
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

  const std::string runtime_lib = getenv_or("AOTC_RUNTIME_LIB", AOTC_RUNTIME_LIB);
  const std::string runtime_include = getenv_or("AOTC_RUNTIME_INCLUDE", AOTC_RUNTIME_INCLUDE);
  const std::string cxx = getenv_or("AOTC_CXX", AOTC_CXX);
  write_text(work / "model.cpp", sources.model_cpp);
  write_text(work / "weights.S", sources.weights_s);
  write_file(work / "weights.bin", sources.weights_bin.data(), sources.weights_bin.size());
  write_text(work / "exports.map", sources.exports_map);
  std::string ninja =
      fill_template(templates::build_ninja_in, {{"AOTC_VERSION", AOTC_VERSION_STRING},
                                                {"CXX", shell_arg(cxx)},
                                                {"TARGET_FLAGS", AOTC_TARGET_FLAGS},
                                                {"RUNTIME_INCLUDE", shell_arg(runtime_include)},
                                                {"RUNTIME_LIB", ninja_path(runtime_lib)}});
  write_text(work / "build.ninja", ninja);

  std::string output;
  const std::string command =
      shell_arg(getenv_or("AOTC_NINJA", AOTC_NINJA)) + " -C " + shell_arg(work.string());
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
  publish(work / "model.so", options.output_path);
}

}  // namespace aotc::codegen
