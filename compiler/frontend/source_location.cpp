// source_location.cpp - where a TorchScript node is in the user's Python source, from its
// source range and inlined call stack.
#include "interpreter_internal.h"

namespace aotc::frontend {

namespace {

// File, line and line text of one source range, mapped back to the Python that
// generated it when the TorchScript file kept that debug information.
std::optional<ir::SourceLocation> location_of(const torch::jit::SourceRange& raw) {
  torch::jit::SourceRange range = raw;
  if (auto original = raw.findSourceRangeThatGenerated()) range = *original;
  auto flc = range.file_line_col();
  if (!flc) return std::nullopt;
  ir::SourceLocation loc;
  loc.file = std::get<0>(*flc);
  loc.line = static_cast<int>(std::get<1>(*flc));
  try {
    auto source = range.source();
    if (source && !source->text_str().str().empty()) {
      std::string text = source->get_line(source->lineno_for_offset(range.start())).str();
      auto first = text.find_first_not_of(" \t");
      auto last = text.find_last_not_of(" \t\r\n");
      loc.text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
    }
  } catch (...) {
    loc.text.clear();  // the line text is a nicety; its absence is fine
  }
  return loc;
}

// torch's own modules and the serialized code of a TorchScript file are not where the
// user should look.
bool is_library_location(const ir::SourceLocation& loc) {
  return loc.file.find("/torch/") != std::string::npos ||
         loc.file.find("/torchvision/") != std::string::npos || loc.file.rfind("code/__torch__", 0) == 0 ||
         loc.file.find("<string>") != std::string::npos;
}

}  // namespace

ir::SourceLocation source_location(const Node* node) {
  // Source ranges of a loaded file are unpickled lazily from its debug records; a corrupt
  // record must cost only the location, not the compile.
  try {
    return user_source_location(node);
  } catch (...) {
    return {};
  }
}

ir::SourceLocation user_source_location(const Node* node) {
  // Candidates: every call site on the inlined call stack (outermost first), then the node.
  std::vector<ir::SourceLocation> candidates;
  if (auto stack = node->callstack()) {
    for (const auto& entry : (*stack)->vec())
      if (auto loc = location_of(std::get<1>(entry))) candidates.push_back(*loc);
  }
  if (auto loc = location_of(node->sourceRange())) candidates.push_back(*loc);
  // The innermost frame in the user's own code, else the innermost of all.
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it)
    if (!is_library_location(*it)) return *it;
  return candidates.empty() ? ir::SourceLocation{} : candidates.back();
}

}  // namespace aotc::frontend
