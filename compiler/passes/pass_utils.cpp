#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "passes.h"

namespace aotc::passes {

std::vector<int> readers_of_storage(const ir::Graph& graph, int id) {
  const int root = graph.storage_root(id);
  std::vector<int> readers;
  for (size_t i = 0; i < graph.ops.size(); ++i)
    for (int in : graph.ops[i].inputs)
      if (in >= 0 && graph.storage_root(in) == root) readers.push_back(static_cast<int>(i));
  for (const ir::GraphOutput& out : graph.outputs)
    if (graph.storage_root(out.value) == root) readers.push_back(-1);
  return readers;
}

const float* constant_floats(const ir::Graph& graph, int id, int64_t count) {
  const int64_t offset = graph.root_byte_offset(id);
  const ir::Value& root = graph.value(graph.storage_root(id));
  if (root.storage != ir::Storage::Constant || root.dtype != ir::DType::Float32 ||
      graph.value(id).dtype != ir::DType::Float32)
    return nullptr;
  const ir::Constant& c = graph.constants.at(static_cast<size_t>(root.constant_index));
  if (offset < 0 || offset % static_cast<int64_t>(sizeof(float)) != 0 ||
      offset + count * static_cast<int64_t>(sizeof(float)) > static_cast<int64_t>(c.bytes.size()))
    return nullptr;
  return c.f32() + offset / static_cast<int64_t>(sizeof(float));
}

int add_derived_f32_constant(ir::Graph& graph, const std::string& recipe, const std::vector<int>& sources,
                             ir::Shape shape, const std::function<std::vector<float>()>& compute,
                             std::string name) {
  return graph.add_derived_constant(
      recipe, sources, ir::DType::Float32, std::move(shape),
      [&] {
        const std::vector<float> data = compute();
        std::vector<uint8_t> bytes(data.size() * sizeof(float));
        if (!bytes.empty()) std::memcpy(bytes.data(), data.data(), bytes.size());
        return bytes;
      },
      std::move(name));
}

int sole_whole_read(const ir::Graph& graph, int id) {
  const int v = graph.storage_root(id);
  if (graph.value(v).storage != ir::Storage::Arena || graph.value(v).shape != graph.value(id).shape ||
      graph.root_byte_offset(id) != 0 || readers_of_storage(graph, v).size() != 1)
    return -1;
  return v;
}

int producer_of(const ir::Graph& graph, int id) {
  const int root = graph.storage_root(id);
  for (size_t i = 0; i < graph.ops.size(); ++i)
    for (int out : graph.ops[i].outputs)
      if (out == root) return static_cast<int>(i);
  return -1;
}

void fuse_unary_into_epilogue(ir::Graph& graph, const char* off_switch,
                              const std::function<rt::GemmActivation(rt::UnaryOp)>& activation_of,
                              const std::function<bool(const ir::Op& producer, const ir::Op& unary)>& takes) {
  if (const char* env = std::getenv(off_switch); env && std::strcmp(env, "0") == 0) return;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& act = graph.ops[i];
    if (act.kind != ir::kind::unary) continue;
    const rt::GemmActivation activation = activation_of(static_cast<rt::UnaryOp>(act.i("op")));
    if (activation == rt::GemmActivation::None) continue;
    const int p = producer_of(graph, act.inputs[0]);
    if (p < 0) continue;
    ir::Op& producer = graph.ops[static_cast<size_t>(p)];
    if (producer.has(ir::attr::activation) || !takes(producer, act)) continue;
    if (readers_of_storage(graph, act.inputs[0]).size() != 1) continue;
    if (graph.value(producer.outputs[0]).shape != graph.value(act.outputs[0]).shape) continue;
    producer.attrs[ir::attr::activation] = static_cast<int64_t>(activation);
    producer.outputs[0] = act.outputs[0];
    graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(i));
    --i;
  }
}

void run_step(ir::Graph& graph, bool verbose, const char* name, const std::function<void(ir::Graph&)>& pass) {
  const size_t before = graph.ops.size();
  pass(graph);
  if (verbose) std::fprintf(stderr, "aotc: pass %-28s %zu -> %zu ops\n", name, before, graph.ops.size());
}

void run_default_passes(ir::Graph& graph, bool verbose) {
  run_step(graph, verbose, "eliminate_dead_ops", eliminate_dead_ops);
  run_step(graph, verbose, "eliminate_identity_assembles", eliminate_identity_assembles);
  run_step(graph, verbose, "fold_batch_norm", fold_batch_norm);
  run_step(graph, verbose, "fuse_activation", [](ir::Graph& g) { fuse_activation(g); });
  run_step(graph, verbose, "fold_gemm_channel_scale", fold_gemm_channel_scale);
  run_step(graph, verbose, "fuse_attention", fuse_attention);
  run_step(graph, verbose, "eliminate_dead_ops", eliminate_dead_ops);
  run_step(graph, verbose, "merge_sibling_gemms", merge_sibling_gemms);
  run_step(graph, verbose, "write_attention_permuted", write_attention_permuted);
  run_step(graph, verbose, "plan_memory", [](ir::Graph& g) { plan_memory(g); });
}

}  // namespace aotc::passes
