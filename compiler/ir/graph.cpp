#include "graph.h"

#include <cstring>
#include <sstream>
#include <stdexcept>

namespace aotc::ir {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "float32";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Int64:
      return "int64";
    case DType::Int32:
      return "int32";
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "uint8";
    case DType::Int8:
      return "int8";
  }
  return "unknown";
}

const char* dtype_abi_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "AOTC_DTYPE_FLOAT32";
    case DType::Float16:
      return "AOTC_DTYPE_FLOAT16";
    case DType::BFloat16:
      return "AOTC_DTYPE_BFLOAT16";
    case DType::Int64:
      return "AOTC_DTYPE_INT64";
    case DType::Int32:
      return "AOTC_DTYPE_INT32";
    case DType::Bool:
      return "AOTC_DTYPE_BOOL";
    case DType::UInt8:
    case DType::Int8:
      break;  // quantized tensors never cross the ABI: the frontend refuses them there
  }
  return "AOTC_DTYPE_FLOAT32";
}

int64_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return 4;
    case DType::Float16:
      return 2;
    case DType::BFloat16:
      return 2;
    case DType::Int64:
      return 8;
    case DType::Int32:
      return 4;
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      return 1;
  }
  return 0;
}

std::optional<DType> parse_dtype(const std::string& name) {
  for (DType d : {DType::Float32, DType::Float16, DType::BFloat16, DType::Int64, DType::Int32, DType::Bool}) {
    if (name == dtype_name(d)) return d;
  }
  return std::nullopt;
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string SourceLocation::str() const {
  if (file.empty()) return "<unknown location>";
  return file + ":" + std::to_string(line);
}

namespace {
template <class T>
const T& get_attr(const Op& op, const std::string& key) {
  auto it = op.attrs.find(key);
  if (it == op.attrs.end()) throw std::logic_error("op " + op.kind + " has no attribute " + key);
  const T* v = std::get_if<T>(&it->second);
  if (!v) throw std::logic_error("op " + op.kind + " attribute " + key + " has another type");
  return *v;
}
}  // namespace

int64_t Op::i(const std::string& key) const { return get_attr<int64_t>(*this, key); }
double Op::f(const std::string& key) const { return get_attr<double>(*this, key); }
bool Op::b(const std::string& key) const { return get_attr<bool>(*this, key); }
const std::string& Op::s(const std::string& key) const { return get_attr<std::string>(*this, key); }
const std::vector<int64_t>& Op::ints(const std::string& key) const {
  return get_attr<std::vector<int64_t>>(*this, key);
}

int Graph::add_value(DType dtype, Shape shape, std::string name) {
  Value v;
  v.id = static_cast<int>(values.size());
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.name = name.empty() ? "v" + std::to_string(v.id) : std::move(name);
  values.push_back(std::move(v));
  return values.back().id;
}

int Graph::add_input(DType dtype, Shape shape, std::string name) {
  int id = add_value(dtype, std::move(shape), std::move(name));
  value(id).storage = Storage::Input;
  value(id).input_index = static_cast<int>(inputs.size());
  inputs.push_back(id);
  return id;
}

int Graph::add_constant(DType dtype, Shape shape, std::vector<uint8_t> bytes, std::string name) {
  return add_constant(dtype, std::move(shape), ConstantBytes(std::move(bytes)), std::move(name));
}

int Graph::add_constant(DType dtype, Shape shape, ConstantBytes bytes, std::string name) {
  if (static_cast<int64_t>(bytes.size()) != numel(shape) * dtype_size(dtype))
    throw std::logic_error("constant byte size does not match its shape");
  Constant c;
  c.dtype = dtype;
  c.shape = shape;
  c.bytes = std::move(bytes);
  constants.push_back(std::move(c));
  int id = add_value(dtype, std::move(shape), std::move(name));
  value(id).storage = Storage::Constant;
  value(id).constant_index = static_cast<int>(constants.size()) - 1;
  return id;
}

int Graph::add_f32_constant(Shape shape, std::vector<float> data, std::string name) {
  std::vector<uint8_t> bytes(data.size() * sizeof(float));
  std::memcpy(bytes.data(), data.data(), bytes.size());
  return add_constant(DType::Float32, std::move(shape), std::move(bytes), std::move(name));
}

int Graph::add_derived_constant(const std::string& recipe, const std::vector<int>& sources, DType dtype,
                                Shape shape, const std::function<std::vector<uint8_t>()>& make,
                                std::string name) {
  if (!derived_constants) return add_constant(dtype, std::move(shape), make(), std::move(name));
  // Beside the recipe, how each source views its buffer and the product's type: the key
  // then holds all that make() may read.
  std::string key = recipe + " -> " + dtype_name(dtype) + shape_str(shape);
  std::vector<ConstantBytes> buffers;
  for (int id : sources) {
    if (id < 0) {
      key += " | none";
      continue;
    }
    const Value& root = value(storage_root(id));
    if (root.storage != Storage::Constant)
      throw std::logic_error("a derived constant's source is not a constant");
    const Constant& c = constants.at(static_cast<size_t>(root.constant_index));
    const Value& v = value(id);
    key += std::string(" | ") + dtype_name(v.dtype) + shape_str(v.shape) + " at " +
           std::to_string(root_byte_offset(id)) + " of " + dtype_name(c.dtype) + shape_str(c.shape);
    buffers.push_back(c.bytes);
  }
  ConstantBytes bytes = derived_constants->get(key, buffers, [&] { return ConstantBytes(make()); });
  return add_constant(dtype, std::move(shape), std::move(bytes), std::move(name));
}

int Graph::add_alias(int src, Shape shape, int64_t byte_offset) {
  const DType dtype = value(src).dtype;
  int id = add_value(dtype, std::move(shape));
  Value& v = value(id);
  v.storage = Storage::Alias;
  v.alias_of = src;
  v.alias_byte_offset = byte_offset;
  v.quant = value(src).quant;
  return id;
}

Op& Graph::add_op(std::string kind, std::vector<int> in, std::vector<int> out, SourceLocation loc) {
  Op op;
  op.kind = std::move(kind);
  op.inputs = std::move(in);
  op.outputs = std::move(out);
  op.loc = std::move(loc);
  ops.push_back(std::move(op));
  return ops.back();
}

int Graph::storage_root(int id) const {
  while (value(id).storage == Storage::Alias) id = value(id).alias_of;
  return id;
}

int64_t Graph::root_byte_offset(int id) const {
  int64_t offset = 0;
  for (; value(id).storage == Storage::Alias; id = value(id).alias_of) offset += value(id).alias_byte_offset;
  return offset;
}

int Graph::view_root(int id) const {
  for (;;) {
    const Value& v = value(id);
    if (v.storage == Storage::Alias)
      id = v.alias_of;
    else if (v.view_of >= 0)
      id = v.view_of;
    else
      return id;
  }
}

Constant& Graph::constant_of(int id) {
  return constants.at(static_cast<size_t>(value(storage_root(id)).constant_index));
}
const Constant& Graph::constant_of(int id) const {
  return constants.at(static_cast<size_t>(value(storage_root(id)).constant_index));
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(values.size(), 0);
  for (const Op& op : ops)
    for (int in : op.inputs)
      if (in >= 0) ++uses[static_cast<size_t>(in)];
  for (const GraphOutput& out : outputs) ++uses[static_cast<size_t>(out.value)];
  for (const Value& v : values)
    if (v.storage == Storage::Alias) ++uses[static_cast<size_t>(v.alias_of)];
  return uses;
}

std::string Graph::dump() const {
  std::ostringstream os;
  auto describe = [&](int id) {
    if (id < 0) return std::string("none");
    const Value& v = value(id);
    std::string s = "%" + std::to_string(id) + ":" + dtype_name(v.dtype) + shape_str(v.shape);
    if (v.storage == Storage::Constant) s += "(const)";
    if (v.storage == Storage::Alias) s += "(alias of %" + std::to_string(v.alias_of) + ")";
    if (v.view_of >= 0) s += "(view of %" + std::to_string(v.view_of) + ")";
    if (v.quant) {
      std::ostringstream q;
      q << "(q " << v.quant->scale << ", " << v.quant->zero_point << (v.quant->channels_last ? ", nhwc" : "")
        << ")";
      s += q.str();
    }
    return s;
  };
  os << "inputs:";
  for (int in : inputs) os << " " << describe(in);
  os << "\n";
  for (const Op& op : ops) {
    os << "  ";
    for (size_t i = 0; i < op.outputs.size(); ++i) os << (i ? ", " : "") << describe(op.outputs[i]);
    os << " = " << op.kind << "(";
    for (size_t i = 0; i < op.inputs.size(); ++i) os << (i ? ", " : "") << describe(op.inputs[i]);
    os << ")";
    if (!op.loc.file.empty()) os << "  # " << op.loc.str();
    os << "\n";
  }
  os << "outputs:";
  for (const GraphOutput& out : outputs) os << " " << out.name << "=" << describe(out.value);
  os << "\n";
  return os.str();
}

}  // namespace aotc::ir
