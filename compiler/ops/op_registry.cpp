#include "op_registry.h"

#include <cmath>
#include <cstdio>

namespace aotc::ops {

void register_all_ops(Registry& r) {
#define AOTC_OP_FILE(name) register_##name(r);
#include "op_files.def"
#undef AOTC_OP_FILE
}

Registry& Registry::get() {
  static Registry* registry = [] {
    auto* r = new Registry;
    register_all_ops(*r);
    return r;
  }();
  return *registry;
}

void Registry::add_lowering(const std::string& torch_name, LowerFn fn) {
  lowerings_[torch_name] = std::move(fn);
}
void Registry::add_ir_op(const std::string& kind, EmitFn emit) { ir_ops_[kind] = std::move(emit); }

void Registry::add_quantized_lowering(const std::string& torch_name, LowerFn fn) {
  quantized_lowerings_[torch_name] = std::move(fn);
}

const LowerFn* Registry::find_lowering(const std::string& torch_name) const {
  auto it = lowerings_.find(torch_name);
  return it == lowerings_.end() ? nullptr : &it->second;
}
const LowerFn* Registry::find_quantized_lowering(const std::string& torch_name) const {
  auto it = quantized_lowerings_.find(torch_name);
  return it == quantized_lowerings_.end() ? nullptr : &it->second;
}
const EmitFn* Registry::find_ir_op(const std::string& kind) const {
  auto it = ir_ops_.find(kind);
  return it == ir_ops_.end() ? nullptr : &it->second;
}
std::vector<std::string> Registry::ir_op_kinds() const {
  std::vector<std::string> kinds;
  for (const auto& [kind, fn] : ir_ops_) kinds.push_back(kind);
  return kinds;
}

std::vector<std::string> Registry::lowering_names() const {
  std::vector<std::string> names;
  for (const auto& [name, fn] : lowerings_) names.push_back(name);
  return names;
}

std::vector<std::string> Registry::quantized_lowering_names() const {
  std::vector<std::string> names;
  for (const auto& [name, fn] : quantized_lowerings_) names.push_back(name);
  return names;
}

std::string Operand::describe() const {
  switch (kind) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return std::string("bool ") + (b ? "True" : "False");
    case Kind::Int:
      return "int " + std::to_string(i);
    case Kind::Double:
      return "float " + std::to_string(d);
    case Kind::String:
      return "str '" + s + "'";
    case Kind::IntList:
      return "int[] " + ir::shape_str(ints);
    case Kind::DoubleList:
      return "float[] of " + std::to_string(doubles.size());
    case Kind::BoolList:
      return "bool[] of " + std::to_string(bools.size());
    case Kind::Tensor:
      return "Tensor";
    case Kind::TensorList:
      return "Tensor[] of " + std::to_string(tensors.size());
    case Kind::Device:
      return "Device " + s;
    case Kind::QuantizedWeights:
      return "packed quantized weights";
    case Kind::Other:
      return s;
  }
  return "?";
}

const Operand& LowerContext::arg(size_t i) const {
  if (i >= inputs.size())
    fail("expected at least " + std::to_string(i + 1) + " arguments, got " + std::to_string(inputs.size()));
  return inputs[i];
}

int LowerContext::tensor(size_t i) const {
  const Operand& o = arg(i);
  if (o.kind != Operand::Kind::Tensor)
    fail("argument " + std::to_string(i) + " must be a Tensor, got " + o.describe());
  return o.tensor;
}

int64_t LowerContext::int_arg(size_t i) const {
  const Operand& o = arg(i);
  if (o.kind == Operand::Kind::Int) return o.i;
  if (o.kind == Operand::Kind::Bool) return o.b ? 1 : 0;
  fail("argument " + std::to_string(i) + " must be an int known at compile time, got " + o.describe());
}

double LowerContext::double_arg(size_t i) const {
  const Operand& o = arg(i);
  if (o.kind == Operand::Kind::Double) return o.d;
  if (o.kind == Operand::Kind::Int) return static_cast<double>(o.i);
  if (o.kind == Operand::Kind::Bool) return o.b ? 1.0 : 0.0;
  fail("argument " + std::to_string(i) + " must be a number known at compile time, got " + o.describe());
}

bool LowerContext::bool_arg(size_t i) const {
  const Operand& o = arg(i);
  if (o.kind == Operand::Kind::Bool) return o.b;
  if (o.kind == Operand::Kind::Int) return o.i != 0;
  fail("argument " + std::to_string(i) + " must be a bool known at compile time, got " + o.describe());
}

std::vector<int64_t> LowerContext::ints_arg(size_t i, size_t expand_to) const {
  const Operand& o = arg(i);
  std::vector<int64_t> v;
  if (o.kind == Operand::Kind::IntList)
    v = o.ints;
  else if (o.kind == Operand::Kind::Int)
    v = {o.i};
  else
    fail("argument " + std::to_string(i) + " must be an int list known at compile time, got " + o.describe());
  if (expand_to && v.size() == 1) v.assign(expand_to, v[0]);
  if (expand_to && v.size() != expand_to)
    fail("argument " + std::to_string(i) + " must have " + std::to_string(expand_to) + " values, got " +
         ir::shape_str(v));
  return v;
}

const QuantizedWeights& LowerContext::qweights_arg(size_t i) const {
  const Operand& o = arg(i);
  if (o.kind != Operand::Kind::QuantizedWeights || !o.qweights)
    fail("argument " + std::to_string(i) + " must be packed quantized weights, got " + o.describe());
  return *o.qweights;
}

const ir::QuantParams& LowerContext::quant(size_t i) const {
  const ir::Value& v = value(i);
  if (!v.quant)
    fail("argument " + std::to_string(i) + " must be a quantized tensor, got " + ir::dtype_name(v.dtype) +
         " (quantize it first: torch.quantize_per_tensor or a QuantStub)");
  if (v.dtype != ir::DType::UInt8)
    fail("argument " + std::to_string(i) + " is a qint8 tensor; aotc's quantized ops take quint8 tensors");
  return *v.quant;
}

ir::Op& LowerContext::add_op(std::string kind, std::vector<int> in, std::vector<int> out) {
  return graph.add_op(std::move(kind), std::move(in), std::move(out), loc);
}

void LowerContext::fail(const std::string& what) const {
  std::string message = op_name + " at " + loc.str() + ": " + what;
  if (!loc.text.empty()) message += "\n    " + loc.text;
  throw CompileError(message);
}

void LowerContext::require_float32(std::initializer_list<size_t> args) const {
  for (size_t i : args) {
    if (is_none(i)) continue;
    const ir::Value& v = value(i);
    if (v.dtype != ir::DType::Float32)
      fail("argument " + std::to_string(i) + " has dtype " + ir::dtype_name(v.dtype) +
           "; this op supports float32 only");
  }
}

std::string EmitContext::c_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::Float32:
      return "float";
    case ir::DType::Float16:
      return "uint16_t";
    case ir::DType::BFloat16:
      return "uint16_t";
    case ir::DType::Int64:
      return "int64_t";
    case ir::DType::Int32:
      return "int32_t";
    case ir::DType::Bool:
      return "bool";
    case ir::DType::UInt8:
      return "uint8_t";
    case ir::DType::Int8:
      return "int8_t";
  }
  return "void";
}

namespace {
// Byte address of a value's data as a C++ expression over the generated run function's
// locals: arena, w (weights), in (inputs), and with named dims aotc_offsets (the context's
// arena offsets).
std::string address(const ir::Graph& g, int id) {
  const int64_t offset = g.root_byte_offset(id);
  id = g.storage_root(id);
  const ir::Value& v = g.value(id);
  switch (v.storage) {
    case ir::Storage::Arena:
      if (v.arena_slot >= 0)
        return "(arena + aotc_offsets[" + std::to_string(v.arena_slot) + "] + " + std::to_string(offset) +
               ")";
      if (v.arena_offset < 0)
        throw CompileError("internal: value %" + std::to_string(id) + " has no arena offset");
      return "(arena + " + std::to_string(v.arena_offset + offset) + ")";
    case ir::Storage::Constant:
      return "(w + " + std::to_string(g.constants.at(static_cast<size_t>(v.constant_index)).offset + offset) +
             ")";
    case ir::Storage::Input:
      return "(static_cast<const unsigned char*>(in[" + std::to_string(v.input_index) + "]) + " +
             std::to_string(offset) + ")";
    case ir::Storage::Alias:
      break;
  }
  throw CompileError("internal: bad storage");
}
}  // namespace

std::string EmitContext::in(int id) const {
  if (id < 0) return "nullptr";
  return "reinterpret_cast<const " + c_type(graph.value(id).dtype) + "*>" + address(graph, id);
}

std::string EmitContext::out(int id) const {
  const ir::Value& root = graph.value(graph.storage_root(id));
  if (root.storage != ir::Storage::Arena)
    throw CompileError("internal: op writes to a value that is not in the arena (%" + std::to_string(id) +
                       ")");
  return "reinterpret_cast<" + c_type(graph.value(id).dtype) + "*>" + address(graph, id);
}

std::string EmitContext::scratch(const ir::Op& op) const {
  if (op.scratch_bytes == 0) return "nullptr";
  if (op.scratch_slot >= 0)
    return "reinterpret_cast<float*>(arena + aotc_offsets[" + std::to_string(op.scratch_slot) + "])";
  return "reinterpret_cast<float*>(arena + " + std::to_string(op.scratch_offset) + ")";
}

std::string EmitContext::f32(double v) {
  if (std::isnan(v)) return "__builtin_nanf(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inff()" : "(-__builtin_inff())";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.9gf", static_cast<double>(static_cast<float>(v)));
  std::string s = buffer;
  // "1f" is not a float literal; "1.f" is.
  if (s.find_first_of(".eE") == std::string::npos) s.insert(s.size() - 1, ".");
  return s;
}

}  // namespace aotc::ops
