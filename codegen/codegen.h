// codegen.h - turns a planned IR graph into the sources of a model .so (from the
// templates in templates/) and builds them with ninja and clang++/lld.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "../compiler/ir/graph.h"

namespace aotc::codegen {

// Where a model's weights live.
enum class WeightsMode {
  Embed,  // inside the .so (default)
  File,   // in OUTPUT.weights beside the .so, mmapped at create (see aotc_model_create_v2)
};

struct Sources {
  std::string model_cpp;
  std::string weights_s;
  std::vector<uint8_t> weights_bin;  // the weights blob, wherever it goes
  bool weights_external = false;     // WeightsMode::File: weights_bin goes to OUTPUT.weights
  std::string exports_map;
  // aotc --target cuda: model_cpp holds CUDA C++ (model.cu, built by nvcc with
  // templates/build_cuda.ninja.in); see codegen/cuda/cuda_target.h.
  bool cuda = false;
  std::string cuda_arch;  // "sm_90"
};

// Lays out the constants the ops use in one 64-byte aligned blob (setting each
// Constant::offset) and writes the model source, which records the blob's size and
// checksum (and, for WeightsMode::File, that the blob is not in the library).
// source_name goes into a comment.
Sources generate_sources(ir::Graph& graph, const std::string& source_name,
                         WeightsMode weights = WeightsMode::Embed);

struct BuildOptions {
  std::string output_path;      // the .so to write (atomically)
  std::string emit_source_dir;  // keep sources and build.ninja here; empty: a temp dir
  bool verbose = false;
  std::string target_triple;  // empty: the host; e.g. "aarch64-linux-gnu"
  WeightsMode weights = WeightsMode::Embed;
  // aotc --no-build: write the sources and build.ninja into emit_source_dir (which must be
  // given) and stop there; output_path is not written. Needs no ninja, and for CUDA sources
  // no nvcc: without the CUDA toolchain build.ninja is left out, with a note on stderr.
  bool no_build = false;
};

// Lays out the constants the ops read (and the outputs return) in one 64-byte aligned
// blob, in first-use order, setting each Constant::offset; returns the blob. Constants
// nothing reads (replaced by a pass) have their bytes released. With graph.weights_placed,
// returns an empty blob and leaves the offsets as they are.
std::vector<uint8_t> layout_weights(ir::Graph& graph);

// The part of a model's source that every target generates alike (generate_sources.cpp),
// which each target's generator extends: the weights laid out (sources.weights_bin,
// weights_external, weights_s, exports_map) and the values of its template's placeholders
// that describe the model: AOTC_VERSION, AOTC_VERSION_LITERAL, SOURCE_NAME, OP_COUNT,
// ARENA_BYTES, WEIGHTS_BYTES, WEIGHTS_CHECKSUM, WEIGHTS_DATA, WEIGHTS_EXTERNAL,
// WEIGHTS_WHERE, INPUT_DESCS, OUTPUT_DESCS, NUM_INPUTS and NUM_OUTPUTS. The target adds
// RUN_BODY, OUTPUT_COPIES and its own, then fills its template.
struct ModelSource {
  Sources sources;
  std::map<std::string, std::string> values;
};
ModelSource model_source(ir::Graph& graph, const std::string& source_name, WeightsMode weights);

// A string for a ninja variable that ends up in a shell command (shell-quoted, '$' escaped
// for ninja), and a path in a ninja build statement ('$', ' ' and ':' escaped): the
// build.ninja of every target (build_library.cpp).
std::string ninja_shell_arg(const std::string& s);
std::string ninja_path(const std::string& s);

// The CPU a model is built for (--target-triple): clang flags for build.ninja and the
// aotc runtime library built for that CPU.
struct Target {
  std::string triple;       // e.g. "x86_64-linux-gnu" (the host), "aarch64-linux-gnu"
  std::string flags;        // target_flags in build.ninja
  std::string runtime_lib;  // libaotc_runtime.a for this target
};

// Resolves a --target-triple (empty: the host). Throws CompileError for an unknown triple
// or one whose runtime library is not built (the cross runtimes live in build-<triple>/
// beside the aotc build directory; AOTC_RUNTIME_LIB_<TRIPLE> overrides the path).
Target resolve_target(const std::string& triple);

// Writes the sources and build.ninja, runs ninja, and renames the result onto
// output_path (with no_build, only writes the sources). On failure nothing is left at
// output_path (an existing file is untouched). With external weights,
// weights_path_for(output_path) is written the same way, before the .so; if the .so
// cannot be published, the previous weights file is put back.
void build_shared_library(const Sources& sources, const BuildOptions& options);

// Where the weights of the model library at so_path go with --weights file: its .so
// suffix replaced by .weights (model.so -> model.weights), else .weights appended.
std::string weights_path_for(const std::string& so_path);

// The version of this aotc (codegen/version.cpp): the project's semantic version, plus
// git describe when it was built from a git checkout, e.g. "0.1.0 (git v0.1.0-12-gabc1234)".
// aotc --version prints it; every generated model records it (aotc_compiler_version).
const char* aotc_version();

// Quotes a string for a C++ string literal: every byte that is not plain printable
// ASCII (and quotes, backslashes, '?' against trigraphs) becomes an octal escape.
std::string cpp_string_literal(const std::string& s);

}  // namespace aotc::codegen
