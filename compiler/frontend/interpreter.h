// interpreter.h - lowers a cleaned-up TorchScript graph to aotc IR by abstract
// interpretation: every TorchScript value is either known at compile time (an IValue:
// ints, shapes, lists, constant tensors, ...), a tensor computed at run time (an IR
// value), or a sequence/dict of those. Control flow on known values is folded as it is
// interpreted; nodes whose inputs are all known are executed with LibTorch's own
// operator at compile time; the rest go to the lowerings in compiler/ops.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <memory>
#include <optional>
#include <unordered_map>

#include "../ir/graph.h"
#include "frontend.h"

namespace aotc::frontend {

// The bytes of a graph's constant tensors (a frozen model's weights), copied into IR
// constants once and shared by every IR graph lowered from that graph: aotc --dim lowers a
// model at ~30 sample sizes. Only the graph's own prim::Constant tensors are pooled: the
// graph keeps them alive, so their addresses name them for as long as it lives (keep the
// pool no longer than the graph); tensors computed while lowering are copied each time.
class ConstantPool {
 public:
  explicit ConstantPool(const torch::jit::Graph& graph);
  // t's entry (empty until its bytes are first made), or nullptr if t is not pooled.
  std::optional<ir::ConstantBytes>* find(const c10::TensorImpl* t);

 private:
  std::unordered_map<const c10::TensorImpl*, std::optional<ir::ConstantBytes>> bytes_;
};

// graph: the method's graph after freezing, inlining and clean-up; its first input is
// the module (self: attributes that freezing kept are read from it). arguments: for each
// further graph input, nullopt where the next IR input of ir_graph (already added, in
// order) is bound, or the compile-time value (an argument's default). Every op
// reached and every problem found (unsupported ops, lowerings that refuse, control flow
// decided at run time) is recorded in census; the caller decides whether to throw.
// pool: where constant tensors' bytes are shared with other lowerings of the same graph
// (nullptr: each constant is copied).
// fold_small_factories: Options::fold_small_factories.
void lower_graph(const std::shared_ptr<torch::jit::Graph>& graph, ir::Graph& ir_graph, bool verbose,
                 Census& census, const c10::IValue& self,
                 const std::vector<std::optional<c10::IValue>>& arguments, ConstantPool* pool = nullptr,
                 bool fold_small_factories = true);

// The user's source location of a node, from its TorchScript source range.
ir::SourceLocation source_location(const torch::jit::Node* node);

}  // namespace aotc::frontend
