// codegen.h - turns a planned IR graph into the sources of a model .so (from the
// templates in templates/) and builds them with ninja and clang++/lld.
#pragma once

#include <cstdint>
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
  std::vector<uint8_t> weights_bin;
  std::string exports_map;
};

// Lays out the constants the ops use in one 64-byte aligned blob (setting each
// Constant::offset) and writes the model source. source_name goes into a comment.
Sources generate_sources(ir::Graph& graph, const std::string& source_name,
                         WeightsMode weights = WeightsMode::Embed);

struct BuildOptions {
  std::string output_path;      // the .so to write (atomically)
  std::string emit_source_dir;  // keep sources and build.ninja here; empty: a temp dir
  bool verbose = false;
  std::string target_triple;    // empty: the host; e.g. "aarch64-linux-gnu"
  WeightsMode weights = WeightsMode::Embed;
};

// Writes the sources and build.ninja, runs ninja, and renames the result onto
// output_path. On failure nothing is left at output_path (an existing file is untouched).
void build_shared_library(const Sources& sources, const BuildOptions& options);

// Quotes a string for a C++ string literal: every byte that is not plain printable
// ASCII (and quotes, backslashes, '?' against trigraphs) becomes an octal escape.
std::string cpp_string_literal(const std::string& s);

}  // namespace aotc::codegen
