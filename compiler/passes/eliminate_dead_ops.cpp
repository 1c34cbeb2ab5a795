// eliminate_dead_ops: drops ops none of whose results (or their aliases) are read by a
// later op or a graph output. Walks backwards so chains of dead ops go in one pass.
#include <set>

#include "passes.h"

namespace aotc::passes {

void eliminate_dead_ops(ir::Graph& graph) {
  std::set<int> live_roots;
  for (const ir::GraphOutput& out : graph.outputs) live_roots.insert(graph.storage_root(out.value));
  std::vector<bool> keep(graph.ops.size(), false);
  for (size_t i = graph.ops.size(); i-- > 0;) {
    const ir::Op& op = graph.ops[i];
    for (int out : op.outputs) keep[i] = keep[i] || live_roots.count(graph.storage_root(out));
    if (!keep[i]) continue;
    for (int in : op.inputs)
      if (in >= 0) live_roots.insert(graph.storage_root(in));
  }
  std::vector<ir::Op> kept;
  for (size_t i = 0; i < graph.ops.size(); ++i)
    if (keep[i]) kept.push_back(std::move(graph.ops[i]));
  graph.ops = std::move(kept);
}

}  // namespace aotc::passes
