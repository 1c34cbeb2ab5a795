// op_census.cpp - the op census (aotc --check): every op use counted, unsupported ones with
// their source lines, and the report of everything that cannot be compiled.
#include <torch/csrc/jit/runtime/operator.h>

#include <sstream>

#include "interpreter_internal.h"

namespace aotc::frontend {

OpUse& Interpreter::use_of(const Node* node) {
  OpUse& use = census_.ops[node->kind().toQualString()];
  if (use.schema.empty()) {
    if (const c10::FunctionSchema* schema = node->maybeSchema()) {
      std::ostringstream os;
      os << *schema;
      use.schema = os.str();
    }
  }
  return use;
}

void Interpreter::record_unsupported(Node* node) {
  OpUse& use = use_of(node);
  if (use.schema.empty()) use.schema = node->kind().toQualString();
  ++use.unsupported;
  const ir::SourceLocation loc = source_location(node);
  for (auto& [where, count] : use.unsupported_at)
    if (where.str() == loc.str()) return ++count, void();
  use.unsupported_at.emplace_back(loc, 1);
}

int Census::unsupported_uses() const {
  int total = 0;
  for (const auto& [name, use] : ops) total += use.unsupported;
  return total;
}

namespace {

// Why an op that has no lowering cannot have one, where that is known: printed under the
// op in the report, so that the user does not wait for a release that cannot add it.
const char* unsupported_reason(const std::string& op) {
  static const char* const kDataDependentShape =
      "its output's shape depends on its input's values, known only when the model runs; aotc compiles "
      "every shape ahead of time (a mask applied with torch.where, or a fixed-size result such as topk, "
      "keeps the shapes static)";
  for (const char* name : {"aten::nonzero", "aten::nonzero_numpy", "aten::argwhere", "aten::unique",
                           "aten::_unique", "aten::_unique2", "aten::unique_dim", "aten::unique_consecutive",
                           "aten::unique_dim_consecutive", "aten::bincount"})
    if (op == name) return kDataDependentShape;
  return nullptr;
}

}  // namespace

std::string Census::error_report() const {
  std::ostringstream os;
  int kinds = 0;
  for (const auto& [name, use] : ops) kinds += use.unsupported > 0;
  const int uses = unsupported_uses();
  if (uses == 0 && problems.size() == 1) return problems.front();
  if (uses > 0) {
    os << "the model uses " << kinds << " unsupported op(s), " << uses << " use(s) in all:";
    for (const auto& [name, use] : ops) {
      if (use.unsupported == 0) continue;
      os << "\n  " << name << "  x" << use.unsupported << "\n    schema: " << use.schema;
      if (const char* why = unsupported_reason(name)) os << "\n    why: " << why;
      for (const auto& [where, count] : use.unsupported_at) {
        os << "\n    " << where.str();
        if (count > 1) os << " (x" << count << ")";
        if (!where.text.empty()) os << ":  " << where.text;
      }
    }
  }
  if (!problems.empty()) {
    if (uses > 0) os << "\n";
    os << (uses > 0 ? "" : "the model cannot be compiled: ") << problems.size()
       << (uses > 0 ? " other problem(s):" : " problems:");
    for (const std::string& problem : problems) {
      std::string indented = problem;
      for (size_t pos = 0; (pos = indented.find('\n', pos)) != std::string::npos; pos += 3)
        indented.replace(pos, 1, "\n  ");
      os << "\n  " << indented;
    }
  }
  return os.str();
}

std::vector<std::string> schemas_of(const std::string& op_name) {
  std::vector<std::string> schemas;
  for (const auto& op : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(op_name))) {
    std::ostringstream os;
    os << op->schema();
    schemas.push_back(os.str());
  }
  return schemas;
}

}  // namespace aotc::frontend
