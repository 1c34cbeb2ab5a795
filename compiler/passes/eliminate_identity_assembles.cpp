// eliminate_identity_assembles: an assemble op one of whose pieces writes the whole output
// needs no fill first, and when that piece is its only one and reads its input's elements
// in order, the output is those elements: it becomes an alias of the input and the op goes.
// F.pad by zero is such an assembly (torchvision's Swin pads every window attention's input
// and every patch merging's to whole windows and even sizes, by zero where they are already:
// a fill and a copy of the activations per block), as are cat of one tensor and roll by 0.
// IR values are never written after the op that makes them, so the alias is safe where
// torch would have had a new tensor. Graph outputs keep their own buffer. Not in a --dim
// build: a pad by zero at some sizes is a pad at others, and every size must give the same
// ops.
#include <set>

#include "../ops/op_helpers.h"
#include "passes.h"

namespace aotc::passes {
namespace {

// Whether piece `p` of an assemble op (its flattened piece attrs) writes the whole dense
// output of `shape` from offset 0.
bool covers_output(const ir::Op& op, size_t p, size_t first_dim, const ir::Shape& shape) {
  const std::vector<int64_t>& ranks = op.ints("piece_rank");
  const std::vector<int64_t>& dims = op.ints("piece_dims");
  const std::vector<int64_t>& dst = op.ints("piece_dst_strides");
  if (static_cast<size_t>(ranks[p]) != shape.size() || op.ints("piece_dst_offset")[p] != 0) return false;
  const std::vector<int64_t> dense = ops::dense_strides(shape);
  for (size_t d = 0; d < shape.size(); ++d)
    if (dims[first_dim + d] != shape[d] || (shape[d] != 1 && dst[first_dim + d] != dense[d])) return false;
  return true;
}

}  // namespace

void eliminate_identity_assembles(ir::Graph& graph) {
  if (graph.sizes_vary) return;
  std::set<int> output_roots;
  for (const ir::GraphOutput& out : graph.outputs) output_roots.insert(graph.storage_root(out.value));
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    ir::Op& op = graph.ops[i];
    if (op.kind != ir::kind::assemble || op.outputs.size() != 1) continue;
    const int out = op.outputs[0];
    const ir::Shape shape = graph.value(out).shape;
    const std::vector<int64_t>& ranks = op.ints("piece_rank");
    int covering = -1;
    size_t first_dim = 0, covering_dim = 0;
    for (size_t p = 0; p < ranks.size(); first_dim += static_cast<size_t>(ranks[p]), ++p)
      if (covers_output(op, p, first_dim, shape)) {
        covering = static_cast<int>(p);
        covering_dim = first_dim;
      }
    if (covering < 0 || ir::numel(shape) == 0) continue;
    // The last piece to cover everything overwrites all before it, the fill included (when
    // it reads an input, not the output it overwrites).
    const int64_t covering_input = op.ints("piece_input")[static_cast<size_t>(covering)];
    if (covering == static_cast<int>(ranks.size()) - 1 && covering_input >= 0) op.attrs.erase("fill");
    if (ranks.size() != 1 || op.has("fill")) continue;
    const int64_t input = op.ints("piece_input")[0];
    if (input < 0 || output_roots.count(out) || graph.value(out).storage != ir::Storage::Arena) continue;
    const int src = op.inputs[static_cast<size_t>(input)];
    const std::vector<int64_t>& src_strides = op.ints("piece_src_strides");
    const std::vector<int64_t> dense = ops::dense_strides(shape);
    bool in_order = graph.value(src).dtype == graph.value(out).dtype;
    for (size_t d = 0; d < shape.size(); ++d)
      in_order &= shape[d] == 1 || src_strides[covering_dim + d] == dense[d];
    const int64_t offset = op.ints("piece_src_offset")[0];
    if (!in_order || offset < 0 || offset + ir::numel(shape) > ir::numel(graph.value(src).shape)) continue;
    ir::Value& v = graph.value(out);
    v.storage = ir::Storage::Alias;
    v.alias_of = src;
    v.alias_byte_offset = offset * ir::dtype_size(v.dtype);
    graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(i));
    --i;
  }
}

}  // namespace aotc::passes
