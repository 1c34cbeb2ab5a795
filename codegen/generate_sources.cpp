#include <aotc/aotc.h>
#include <aotc/rt/model_desc.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "../compiler/ir/error.h"
#include "../compiler/ops/op_registry.h"
#include "aotc_config.h"
#include "codegen.h"
#include "template_text.h"
#include "templates_embedded.h"

namespace aotc::codegen {
namespace {

constexpr int64_t kWeightAlignment = 64;

// The TensorDesc line of one value.
std::string tensor_desc(const std::string& name, const ir::Value& v) {
  std::ostringstream os;
  os << "    {" << cpp_string_literal(name) << ", " << ir::dtype_abi_name(v.dtype) << ", " << v.shape.size()
     << ", {";
  for (size_t i = 0; i < v.shape.size(); ++i) os << (i ? ", " : "") << v.shape[i];
  os << "}},";
  return os.str();
}

// The TensorDesc lines of the graph's inputs (one unused entry for a model without inputs:
// C++ has no empty arrays) and of its outputs.
std::string input_descs(const ir::Graph& graph) {
  if (graph.inputs.empty()) return "    {\"\", AOTC_DTYPE_FLOAT32, 0, {}},\n";
  std::string descs;
  for (int id : graph.inputs) descs += tensor_desc(graph.value(id).name, graph.value(id)) + "\n";
  return descs;
}

std::string output_descs(const ir::Graph& graph) {
  std::string descs;
  for (const ir::GraphOutput& out : graph.outputs)
    descs += tensor_desc(out.name, graph.value(out.value)) + "\n";
  return descs;
}

// The weights' checksum as a C++ literal ("0x...ull").
std::string checksum_literal(const std::vector<uint8_t>& weights) {
  const uint64_t checksum = rt::weights_checksum(weights.data(), weights.size());
  char text[32];
  std::snprintf(text, sizeof text, "0x%016llxull", static_cast<unsigned long long>(checksum));
  return text;
}

// Model-derived text (the source name) made a harmless single comment line.
std::string comment_safe(const std::string& text) {
  std::string safe;
  for (unsigned char c : text) safe += (c >= 0x20 && c < 0x7f && c != '\\') ? static_cast<char>(c) : '_';
  return safe;
}

}  // namespace

// Constants actually read by ops or returned, in first-use order, packed with alignment;
// the others' bytes are released.
std::vector<uint8_t> layout_weights(ir::Graph& graph) {
  if (graph.weights_placed) return {};
  std::vector<int> order;
  std::set<int> seen;
  auto visit = [&](int id) {
    if (id < 0) return;
    const ir::Value& root = graph.value(graph.storage_root(id));
    if (root.storage == ir::Storage::Constant && seen.insert(root.constant_index).second)
      order.push_back(root.constant_index);
  };
  for (const ir::Op& op : graph.ops)
    for (int in : op.inputs) visit(in);
  for (const ir::GraphOutput& out : graph.outputs) visit(out.value);
  // A constant nothing reads any more (a weight that a pass replaced by its transformed or
  // packed form) is released before the blob is built: for vit_b_16 the replaced linear
  // weights are 330 MB.
  for (size_t i = 0; i < graph.constants.size(); ++i)
    if (!seen.count(static_cast<int>(i))) graph.constants[i].bytes.release();
  std::vector<uint8_t> blob;
  for (int index : order) {
    ir::Constant& c = graph.constants[static_cast<size_t>(index)];
    blob.resize(static_cast<size_t>((static_cast<int64_t>(blob.size()) + kWeightAlignment - 1) /
                                    kWeightAlignment * kWeightAlignment),
                0);
    c.offset = static_cast<int64_t>(blob.size());
    blob.insert(blob.end(), c.bytes.begin(), c.bytes.end());
  }
  return blob;
}

std::string cpp_string_literal(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?') {
      out += static_cast<char>(c);
    } else {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\%03o", c);
      out += buffer;
    }
  }
  return out + "\"";
}

ModelSource model_source(ir::Graph& graph, const std::string& source_name, WeightsMode weights) {
  ModelSource model;
  Sources& sources = model.sources;
  sources.weights_bin = layout_weights(graph);
  sources.weights_external = weights == WeightsMode::File;
  sources.weights_s = std::string(templates::weights_S_in);
  sources.exports_map = std::string(templates::exports_map);
  model.values = {
      {"AOTC_VERSION", comment_safe(aotc_version())},
      {"AOTC_VERSION_LITERAL", cpp_string_literal(aotc_version())},
      {"SOURCE_NAME", comment_safe(source_name)},
      {"OP_COUNT", std::to_string(graph.ops.size())},
      {"ARENA_BYTES", std::to_string(graph.arena_bytes)},
      {"WEIGHTS_BYTES", std::to_string(sources.weights_bin.size())},
      {"WEIGHTS_CHECKSUM", checksum_literal(sources.weights_bin)},
      {"WEIGHTS_DATA", sources.weights_external ? "nullptr" : "aotc_weights_data"},
      {"WEIGHTS_EXTERNAL", sources.weights_external ? "true" : "false"},
      {"WEIGHTS_WHERE", sources.weights_external ? "in the .weights file beside the library" : "embedded"},
      {"INPUT_DESCS", input_descs(graph)},
      {"OUTPUT_DESCS", output_descs(graph)},
      {"NUM_INPUTS", std::to_string(graph.inputs.size())},
      {"NUM_OUTPUTS", std::to_string(graph.outputs.size())},
  };
  return model;
}

Sources generate_sources(ir::Graph& graph, const std::string& source_name, WeightsMode weights) {
  ModelSource model = model_source(graph, source_name, weights);
  // Per-thread kernel scratch: the largest any op needs, in whole cache lines.
  int64_t thread_scratch = 0;
  for (const ir::Op& op : graph.ops) thread_scratch = std::max(thread_scratch, op.thread_scratch_bytes);
  thread_scratch = (thread_scratch + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;

  const ops::Registry& registry = ops::Registry::get();
  ops::EmitContext emit(graph);
  std::string body;
  for (const ir::Op& op : graph.ops) {
    const ops::EmitFn* fn = registry.find_ir_op(op.kind);
    if (!fn) throw CompileError("internal: no code generator for IR op '" + op.kind + "'");
    body += (*fn)(emit, op);
  }
  std::string copies;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const ir::GraphOutput& out = graph.outputs[i];
    copies += "  std::memcpy(args.outputs[" + std::to_string(i) + "], " + emit.in(out.value) + ", " +
              std::to_string(graph.value(out.value).bytes()) + ");\n";
  }
  model.values["THREAD_SCRATCH_BYTES"] = std::to_string(thread_scratch);
  model.values["RUN_BODY"] = body;
  model.values["OUTPUT_COPIES"] = copies;
  model.sources.model_cpp = fill_template(templates::model_cpp_in, model.values);
  return model.sources;
}

}  // namespace aotc::codegen
