// write_attention_permuted: an attention op whose output is read only by one copy that
// permutes it (BERT's a.transpose(1, 2).reshape(b, s, d), which puts the heads back side
// by side) writes its output where the copy would have put it, through its out_strides,
// and the copy goes. The attention kernels (CPU and CUDA) already write through
// out_strides; this saves a pass over the attention output per layer (a copy per layer
// of BERT-base on the H100, bench/results_gpu.md).
//
// Applies when the output is [batch, heads, rows, width] as the op sees it (no folded
// dims), is no graph output and has no other reader, and the copy reads it from its first
// element with each of its dims once, the last one staying contiguous.
#include <aotc/rt/kernels.h>

#include "../ops/op_helpers.h"
#include "passes.h"

namespace aotc::passes {
namespace {

// The strides of out's (batch, head, row) in the copy's output, or empty when the copy is
// not such a permutation of out.
std::vector<int64_t> permuted_strides(const ir::Shape& out_shape, const ir::Op& copy) {
  const std::vector<int64_t>& dims = copy.ints("dims");
  const std::vector<int64_t>& src = copy.ints("src_strides");
  const std::vector<int64_t>& dst = copy.ints("dst_strides");
  const std::vector<int64_t> dense = ops::dense_strides(out_shape);
  if (ir::numel(dims) != ir::numel(out_shape)) return {};
  std::vector<int64_t> result(out_shape.size(), -1);
  std::vector<bool> used(dims.size(), false);
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 1) {
      // Never stepped; but a row stride is cuBLAS's leading dimension, at least the width.
      result[d] = d == 2 ? out_shape.back() : 0;
      continue;
    }
    for (size_t j = 0; j < dims.size() && result[d] < 0; ++j)
      if (!used[j] && dims[j] == out_shape[d] && src[j] == dense[d]) {
        used[j] = true;
        result[d] = dst[j];
      }
    if (result[d] < 0) return {};
  }
  for (size_t j = 0; j < dims.size(); ++j)
    if (!used[j] && dims[j] != 1) return {};
  if (out_shape.back() > 1 && result.back() != 1) return {};
  result.pop_back();
  return result;
}

}  // namespace

void write_attention_permuted(ir::Graph& graph) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    ir::Op& op = graph.ops[i];
    if (op.kind != ir::kind::attention) continue;
    const int out = op.outputs[0];
    const ir::Value& v = graph.value(out);
    if (v.storage != ir::Storage::Arena || v.shape.size() != 4 || v.shape[0] != op.i("batch") ||
        v.shape[1] != op.i("heads"))
      continue;
    // Written densely now (a dim of size 1 may have any stride: it is never stepped).
    const std::vector<int64_t> dense = ops::dense_strides(v.shape);
    const std::vector<int64_t>& written = op.ints(ir::attr::out_strides);
    bool is_dense = written.size() == 3;
    for (size_t d = 0; d < 3 && is_dense; ++d) is_dense = v.shape[d] == 1 || written[d] == dense[d];
    if (!is_dense) continue;
    const std::vector<int> readers = readers_of_storage(graph, out);
    if (readers.size() != 1 || readers[0] < 0) continue;
    const ir::Op& copy = graph.ops[static_cast<size_t>(readers[0])];
    if (copy.kind != ir::kind::copy || copy.inputs[0] != out || copy.outputs.size() != 1 ||
        (copy.has("src_offset") && copy.i("src_offset") != 0) || copy.i("elem_size") != 4)
      continue;
    const int target = copy.outputs[0];
    if (graph.value(target).storage != ir::Storage::Arena ||
        copy.ints("dst_strides") != ops::dense_strides(graph.value(target).shape) ||
        copy.ints("dims") != graph.value(target).shape)
      continue;
    std::vector<int64_t> strides = permuted_strides(v.shape, copy);
    if (strides.empty()) continue;
    op.attrs[ir::attr::out_strides] = strides;
    op.outputs[0] = target;
    graph.ops.erase(graph.ops.begin() + readers[0]);  // after op: i stays valid
  }
}

}  // namespace aotc::passes
