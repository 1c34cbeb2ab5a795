// merge_sibling_gemms: linear layers that read the same input and feed only attention
// (BERT's separate query, key and value projections) become one GEMM whose weight is the
// three weights stacked, its output [.., 3n]; each attention op then reads its query, key
// or value from that output through its strides and an offset, as it already does for the
// packed projection of nn.MultiheadAttention. One wider product instead of three keeps
// more of the machine busy: on the H100 one merged product takes about half the time of
// BERT-base's three (bench/results_gpu.md).
//
// A group merges when its gemms have the same input (the same value, read the same way),
// the same k, alpha, beta, bias kind (none or per column, constant) and clamp, constant
// weights of the same layout and no residual; and when every reader of each output (or
// of an alias of it) is an attention op reading it as query, key or value, in a way that
// still addresses the right elements once each row is 3n wide (checked below; no graph
// output). Anything else is left as it is.
#include <aotc/rt/kernels.h>

#include <cstring>
#include <map>
#include <string>
#include <tuple>

#include "../ops/gemm.h"
#include "passes.h"

namespace aotc::passes {
namespace {

bool is_candidate(const ir::Graph& graph, const ir::Op& op) {
  if (op.kind != ir::kind::gemm || op.inputs.size() != 3 || op.outputs.size() != 1) return false;
  const int b = op.inputs[1], bias = op.inputs[2];
  const auto kind = static_cast<rt::BiasKind>(op.i("bias_kind"));
  if (b < 0 || !graph.is_constant(b) || graph.value(b).dtype != ir::DType::Float32) return false;
  if (kind != rt::BiasKind::None && kind != rt::BiasKind::PerColumn) return false;
  if (kind == rt::BiasKind::PerColumn &&
      (bias < 0 || !graph.is_constant(bias) || graph.value(bias).dtype != ir::DType::Float32 ||
       ir::numel(graph.value(bias).shape) != op.i("n")))
    return false;
  // Dense operands as the lowering makes them (the weight's row stride its width).
  const bool trans_b = op.b("trans_b");
  const ir::Value& y = graph.value(op.outputs[0]);
  return op.i("ldb") == (trans_b ? op.i("k") : op.i("n")) && op.i("ldc") == op.i("n") &&
         ir::numel(graph.value(b).shape) == op.i("n") * op.i("k") && y.storage == ir::Storage::Arena &&
         y.dtype == ir::DType::Float32 && !y.shape.empty() && y.shape.back() == op.i("n");
}

// Floats from the storage root of `id` to its first float.
int64_t element_offset(const ir::Graph& graph, int id) {
  return graph.root_byte_offset(id) / static_cast<int64_t>(sizeof(float));
}

// An attention operand as the op reads it: offset and strides over (batch, head, row)
// into rows of `n` elements, rewritten for rows of `n_total` with this output's columns
// starting at `column`. False when the operand's columns do not stay inside one row of n.
struct Addressing {
  int64_t offset = 0;
  std::vector<int64_t> strides;
};
bool readdress(Addressing& a, const int64_t sizes[3], int64_t width, int64_t n, int64_t n_total,
               int64_t column) {
  int64_t last_column = a.offset % n + width - 1;
  for (int d = 0; d < 3; ++d) {
    const int64_t stride = a.strides[static_cast<size_t>(d)];
    if (sizes[d] <= 1) continue;  // never stepped: the stride is never used
    if (stride % n == 0) {
      a.strides[static_cast<size_t>(d)] = stride / n * n_total;  // whole rows
    } else if (stride > 0 && stride < n) {
      last_column += (sizes[d] - 1) * stride;  // within a row
    } else {
      return false;
    }
  }
  if (last_column >= n) return false;
  a.offset = a.offset / n * n_total + a.offset % n + column;
  return true;
}

const char* const kSlots[3] = {"q", "k", "v"};

// The rewrites of every attention read of `out` (an output of n columns) for a merged
// output of n_total columns with this one's at `column`; false when a reader is not an
// attention op reading it as query, key or value, or cannot be readdressed.
struct Rewrite {
  size_t op;
  int slot;
  Addressing addressing;
};
bool plan_rewrites(const ir::Graph& graph, int out, int64_t n, int64_t n_total, int64_t column,
                   std::vector<Rewrite>& rewrites) {
  for (int reader : readers_of_storage(graph, out)) {
    if (reader < 0) return false;  // a graph output
    const ir::Op& op = graph.ops[static_cast<size_t>(reader)];
    if (op.kind != ir::kind::attention) return false;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] < 0 || graph.storage_root(op.inputs[i]) != graph.storage_root(out)) continue;
      if (i > 2) return false;  // read as the mask
      const int slot = static_cast<int>(i);
      const int64_t rows = slot == 0 ? op.i("q_len") : op.i("kv_len");
      const int64_t width = slot == 2 ? op.i("v_head_dim") : op.i("head_dim");
      const int64_t sizes[3] = {op.i("batch"), op.i("heads"), rows};
      Addressing a{element_offset(graph, op.inputs[i]) + op.i(std::string(kSlots[slot]) + "_offset"),
                   op.ints(std::string(kSlots[slot]) + "_strides")};
      if (!readdress(a, sizes, width, n, n_total, column)) return false;
      rewrites.push_back({static_cast<size_t>(reader), slot, a});
    }
  }
  return true;
}

// The recipe of a stacked constant: the gemms' widths (and the weights' layout).
std::string stacked_recipe(const ir::Graph& graph, const std::vector<size_t>& group,
                           const std::string& what) {
  const ir::Op& first = graph.ops[group[0]];
  std::string recipe = "merge_sibling_gemms " + what + " k=" + std::to_string(first.i("k")) +
                       " trans_b=" + std::to_string(first.b("trans_b")) + " n=";
  for (size_t index : group) recipe += std::to_string(graph.ops[index].i("n")) + ",";
  return recipe;
}

// The group's operands in `slot` (1: weights, 2: biases), for add_derived_f32_constant.
std::vector<int> group_inputs(const ir::Graph& graph, const std::vector<size_t>& group, size_t slot) {
  std::vector<int> ids;
  for (size_t index : group) ids.push_back(graph.ops[index].inputs[slot]);
  return ids;
}

// The weights (and biases) of the group side by side as one constant.
int stacked_weight(ir::Graph& graph, const std::vector<size_t>& group, int64_t n_total) {
  const ir::Op& first = graph.ops[group[0]];
  const int64_t k = first.i("k");
  const bool trans_b = first.b("trans_b");
  auto stack = [&] {
    std::vector<float> data(static_cast<size_t>(n_total * k));
    int64_t column = 0;
    for (size_t index : group) {
      const ir::Op& op = graph.ops[index];
      const int64_t n = op.i("n");
      const float* w = graph.constant_of(op.inputs[1]).f32() + element_offset(graph, op.inputs[1]);
      if (trans_b) {  // n x k: rows stack
        std::memcpy(data.data() + column * k, w, static_cast<size_t>(n * k) * sizeof(float));
      } else {  // k x n: rows widen
        for (int64_t r = 0; r < k; ++r)
          std::memcpy(data.data() + r * n_total + column, w + r * n, static_cast<size_t>(n) * sizeof(float));
      }
      column += n;
    }
    return data;
  };
  return add_derived_f32_constant(graph, stacked_recipe(graph, group, "weights"),
                                  group_inputs(graph, group, 1),
                                  trans_b ? ir::Shape{n_total, k} : ir::Shape{k, n_total}, stack,
                                  graph.value(first.inputs[1]).name + "+merged");
}

int stacked_bias(ir::Graph& graph, const std::vector<size_t>& group, int64_t n_total) {
  auto stack = [&] {
    std::vector<float> data;
    data.reserve(static_cast<size_t>(n_total));
    for (size_t index : group) {
      const ir::Op& op = graph.ops[index];
      const float* b = graph.constant_of(op.inputs[2]).f32() + element_offset(graph, op.inputs[2]);
      data.insert(data.end(), b, b + op.i("n"));
    }
    return data;
  };
  return add_derived_f32_constant(graph, stacked_recipe(graph, group, "biases"),
                                  group_inputs(graph, group, 2), {n_total}, stack,
                                  graph.value(graph.ops[group[0]].inputs[2]).name + "+merged");
}

}  // namespace

void merge_sibling_gemms(ir::Graph& graph) {
  // Candidates grouped by what must be equal, in op order.
  using Key = std::tuple<int, int64_t, int64_t, bool, int64_t, bool, double, double, int64_t, double, double>;
  std::map<Key, std::vector<size_t>> groups;
  std::vector<Key> order;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& op = graph.ops[i];
    if (!is_candidate(graph, op)) continue;
    const Key key{op.inputs[0],
                  op.i("m"),
                  op.i("k"),
                  op.b("trans_a"),
                  op.i("lda"),
                  op.b("trans_b"),
                  op.f("alpha"),
                  op.f("beta"),
                  op.i("bias_kind"),
                  op.f(ir::attr::clamp_lo),
                  op.f(ir::attr::clamp_hi)};
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.push_back(i);
  }
  bool merged_any = false;
  for (const Key& key : order) {
    const std::vector<size_t>& group = groups[key];
    if (group.size() < 2) continue;
    int64_t n_total = 0;
    for (size_t index : group) n_total += graph.ops[index].i("n");
    std::vector<Rewrite> rewrites;
    int64_t column = 0;
    bool ok = true;
    for (size_t index : group) {
      const ir::Op& op = graph.ops[index];
      ok = ok && plan_rewrites(graph, op.outputs[0], op.i("n"), n_total, column, rewrites);
      column += op.i("n");
    }
    if (!ok) continue;

    const ir::Op& first = graph.ops[group[0]];
    const bool with_bias = static_cast<rt::BiasKind>(first.i("bias_kind")) == rt::BiasKind::PerColumn;
    const int weight = stacked_weight(graph, group, n_total);
    const int bias = with_bias ? stacked_bias(graph, group, n_total) : -1;
    ir::Shape shape = graph.value(first.outputs[0]).shape;
    shape.back() = n_total;
    const int out =
        graph.add_value(ir::DType::Float32, shape, graph.value(first.outputs[0]).name + "+merged");
    for (const Rewrite& r : rewrites) {
      ir::Op& op = graph.ops[r.op];
      op.inputs[static_cast<size_t>(r.slot)] = out;
      op.attrs[std::string(kSlots[r.slot]) + "_offset"] = r.addressing.offset;
      op.attrs[std::string(kSlots[r.slot]) + "_strides"] = r.addressing.strides;
    }
    // The first gemm becomes the merged one (its input is there before every reader of
    // the group); the others, now unread, go with eliminate_dead_ops.
    ir::Op& merged = graph.ops[group[0]];
    merged.inputs = {merged.inputs[0], weight, bias};
    merged.outputs = {out};
    merged.attrs["n"] = n_total;
    merged.attrs["ldb"] = merged.b("trans_b") ? merged.i("k") : n_total;
    merged.attrs["ldc"] = n_total;
    merged.attrs["stride_c"] = merged.i("m") * n_total;
    merged.thread_scratch_bytes = rt::gemm_thread_scratch_bytes(ops::gemm_params_of(merged));
    merged_any = true;
  }
  if (merged_any) eliminate_dead_ops(graph);
}

}  // namespace aotc::passes
