// interpreter_bindings.cpp - the interpreter's environment: what each TorchScript value is bound
// to, constant tensors as IR constants, and bindings as the lowerings' operands and back.
#include <ATen/ATen.h>

#include <cstring>

#include "../ir/error.h"
#include "interpreter_internal.h"

namespace aotc::frontend {

Binding Binding::seq(std::vector<Binding> items, bool tuple) {
  Binding b;
  b.kind = Kind::Seq;
  b.box = std::make_shared<Container>();
  b.box->items = std::move(items);
  b.box->tuple = tuple;
  return b;
}
Binding Binding::dict(std::vector<c10::IValue> keys, std::vector<Binding> items) {
  Binding b;
  b.kind = Kind::Dict;
  b.box = std::make_shared<Container>();
  b.box->keys = std::move(keys);
  b.box->items = std::move(items);
  return b;
}
std::vector<Binding>& Binding::items() const { return box->items; }
std::vector<c10::IValue>& Binding::keys() const { return box->keys; }

std::optional<ir::DType> dtype_of(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float:
      return ir::DType::Float32;
    case c10::ScalarType::Half:
      return ir::DType::Float16;
    case c10::ScalarType::BFloat16:
      return ir::DType::BFloat16;
    case c10::ScalarType::Long:
      return ir::DType::Int64;
    case c10::ScalarType::Int:
      return ir::DType::Int32;
    case c10::ScalarType::Bool:
      return ir::DType::Bool;
    default:
      return std::nullopt;
  }
}

c10::ScalarType scalar_type_of(ir::DType t) {
  switch (t) {
    case ir::DType::Float32:
      return c10::ScalarType::Float;
    case ir::DType::Float16:
      return c10::ScalarType::Half;
    case ir::DType::BFloat16:
      return c10::ScalarType::BFloat16;
    case ir::DType::Int64:
      return c10::ScalarType::Long;
    case ir::DType::Int32:
      return c10::ScalarType::Int;
    case ir::DType::Bool:
      return c10::ScalarType::Bool;
    case ir::DType::UInt8:
      return c10::ScalarType::QUInt8;
    case ir::DType::Int8:
      return c10::ScalarType::QInt8;
  }
  return c10::ScalarType::Float;
}

const Binding& Interpreter::lookup(const Value* v) {
  auto it = env_.find(v);
  if (it == env_.end()) {
    // Values defined by prim::Constant are bound on first use.
    if (auto iv = torch::jit::toIValue(v)) return env_[v] = Binding::of_known(*iv);
    throw CompileError("internal: TorchScript value %" + v->debugName() + " used before definition");
  }
  return it->second;
}

// An IR value for a tensor binding; constant tensors become IR constants once each.
int Interpreter::tensor_of(const Binding& b, const std::string& role) {
  if (b.kind == Binding::Kind::Tensor) return b.tensor;
  if (b.kind == Binding::Kind::Known && b.known.isTensor()) return constant_tensor(b.known.toTensor());
  throw CompileError(role + " is not a tensor");
}

int Interpreter::constant_tensor(const at::Tensor& t) {
  auto it = constant_ids_.find(t.unsafeGetTensorImpl());
  if (it != constant_ids_.end()) return it->second;
  if (t.is_quantized()) {
    // Its integers, with the scale and zero point on the IR value.
    if (t.qscheme() != at::kPerTensorAffine)
      throw CompileError(std::string("constant quantized tensor with qscheme ") + c10::toString(t.qscheme()) +
                         " is not supported (per-tensor affine is, and per-channel inside packed weights)");
    const bool is_unsigned = t.scalar_type() == at::kQUInt8;
    if (!is_unsigned && t.scalar_type() != at::kQInt8)
      throw CompileError(std::string("constant quantized tensor of dtype ") + c10::toString(t.scalar_type()) +
                         " is not supported (quint8 and qint8 are)");
    const ir::DType dtype = is_unsigned ? ir::DType::UInt8 : ir::DType::Int8;
    const at::Tensor integers = t.int_repr();
    const int id = graph_.add_constant(dtype, t.sizes().vec(), dense_bytes(integers, integers.scalar_type()));
    graph_.value(id).quant = ir::QuantParams{t.q_scale(), t.q_zero_point(), false};
    constant_ids_[t.unsafeGetTensorImpl()] = id;
    kept_alive_.push_back(t);  // its address names it in constant_ids_
    return id;
  }
  // float64 constants (Python floats turned into tensors) compute in float32 here.
  const at::ScalarType scalar_type = t.scalar_type() == at::kDouble ? at::kFloat : t.scalar_type();
  auto dtype = dtype_of(scalar_type);
  if (!dtype)
    throw CompileError(std::string("constant tensor of dtype ") + c10::toString(scalar_type) +
                       " is not supported (float32, float16, bfloat16, int64, int32 and bool are)");
  std::optional<ir::ConstantBytes>* pooled = pool_ ? pool_->find(t.unsafeGetTensorImpl()) : nullptr;
  ir::ConstantBytes bytes = pooled && *pooled ? **pooled : dense_bytes(t, scalar_type);
  if (pooled) *pooled = bytes;
  int id = graph_.add_constant(*dtype, t.sizes().vec(), std::move(bytes));
  constant_ids_[t.unsafeGetTensorImpl()] = id;
  return id;
}

// t's elements as scalar_type, row-major, on the CPU.
ir::ConstantBytes Interpreter::dense_bytes(const at::Tensor& t, at::ScalarType scalar_type) {
  const at::Tensor dense = t.detach().to(at::kCPU).to(scalar_type).contiguous();
  std::vector<uint8_t> bytes(dense.nbytes());
  if (!bytes.empty()) std::memcpy(bytes.data(), dense.data_ptr(), bytes.size());
  return ir::ConstantBytes(std::move(bytes));
}

// A container binding as a compile-time IValue of the given TorchScript type, when
// everything in it is known (e.g. a list of sizes built by a loop).
std::optional<c10::IValue> Interpreter::to_known(const Binding& b, c10::TypePtr type) {
  if (b.is_known()) return b.known;
  if (!b.is_box()) return std::nullopt;
  if (auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
  if (b.kind == Binding::Kind::Dict) {
    auto dict_type = type->cast<c10::DictType>();
    if (!dict_type) return std::nullopt;
    c10::impl::GenericDict dict(dict_type->getKeyType(), dict_type->getValueType());
    for (size_t i = 0; i < b.items().size(); ++i) {
      auto v = to_known(b.items()[i], dict_type->getValueType());
      if (!v) return std::nullopt;
      dict.insert_or_assign(b.keys()[i], *v);
    }
    return c10::IValue(dict);
  }
  if (auto list_type = type->cast<c10::ListType>()) {
    c10::impl::GenericList list(list_type->getElementType());
    for (const Binding& item : b.items()) {
      auto v = to_known(item, list_type->getElementType());
      if (!v) return std::nullopt;
      list.push_back(*v);
    }
    return c10::IValue(list);
  }
  auto tuple_type = type->cast<c10::TupleType>();
  std::vector<c10::IValue> elements;
  for (size_t i = 0; i < b.items().size(); ++i) {
    c10::TypePtr t =
        tuple_type && i < tuple_type->elements().size() ? tuple_type->elements()[i] : c10::AnyType::get();
    auto v = to_known(b.items()[i], t);
    if (!v) return std::nullopt;
    elements.push_back(*v);
  }
  return c10::IValue(c10::ivalue::Tuple::create(std::move(elements)));
}

ops::Operand Interpreter::to_operand(const Binding& b) {
  using K = ops::Operand::Kind;
  ops::Operand o;
  switch (b.kind) {
    case Binding::Kind::Tensor:
      return ops::Operand::of_tensor(b.tensor);
    case Binding::Kind::Seq: {
      std::vector<int> ids;
      for (const Binding& item : b.items()) {
        if (item.kind == Binding::Kind::Tensor || (item.is_known() && item.known.isTensor()))
          ids.push_back(tensor_of(item, "list item"));
        else if (item.is_known() && item.known.isNone())
          ids.push_back(-1);  // Tensor?[] (aten::index): None is a full slice
        else {
          o.kind = K::Other;
          o.s = "a list or tuple mixing tensors and other values";
          return o;
        }
      }
      return ops::Operand::of_tensors(std::move(ids));
    }
    case Binding::Kind::Dict:
      o.kind = K::Other;
      o.s = "Dict";
      return o;
    case Binding::Kind::Poison:
      o.kind = K::Other;
      o.s = "unknown";
      return o;
    case Binding::Kind::Known:
      break;
  }
  const c10::IValue& v = b.known;
  if (v.isNone()) return ops::Operand::none();
  if (v.isBool()) return ops::Operand::of_bool(v.toBool());
  if (v.isInt()) return ops::Operand::of_int(v.toInt());
  if (v.isDouble()) return ops::Operand::of_double(v.toDouble());
  if (v.isString()) {
    o.kind = K::String;
    o.s = v.toStringRef();
    return o;
  }
  if (v.isIntList()) return ops::Operand::of_ints(v.toIntVector());
  if (v.isDoubleList()) {
    o.kind = K::DoubleList;
    o.doubles = v.toDoubleVector();
    return o;
  }
  if (v.isBoolList()) {
    o.kind = K::BoolList;
    for (bool x : v.toBoolList()) o.bools.push_back(x);
    return o;
  }
  if (v.isTensor()) return ops::Operand::of_tensor(constant_tensor(v.toTensor()));
  if (v.isTensorList()) {
    std::vector<int> ids;
    for (const at::Tensor& t : v.toTensorVector()) ids.push_back(constant_tensor(t));
    return ops::Operand::of_tensors(std::move(ids));
  }
  if (v.isList()) {  // Tensor?[] of constants and None (aten::index)
    std::vector<int> ids;
    for (const c10::IValue& e : v.toListRef()) {
      if (!e.isTensor() && !e.isNone()) {
        o.kind = K::Other;
        o.s = "a list mixing tensors and other values";
        return o;
      }
      ids.push_back(e.isTensor() ? constant_tensor(e.toTensor()) : -1);
    }
    return ops::Operand::of_tensors(std::move(ids));
  }
  if (v.isDevice()) {
    o.kind = K::Device;
    o.s = v.toDevice().str();
    return o;
  }
  if (v.isScalar()) return ops::Operand::of_double(v.toScalar().toDouble());
  if (v.isObject()) {
    const std::string type = v.type()->str();
    const bool conv_or_linear = type == "__torch__.torch.classes.quantized.Conv2dPackedParamsBase" ||
                                type == "__torch__.torch.classes.quantized.LinearPackedParamsBase";
    if (conv_or_linear) {
      try {
        return quantized_weights(v);
      } catch (const std::exception& e) {
        std::string message = e.what();
        if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e))
          message = c10_error->what_without_backtrace();
        o.kind = K::Other;
        o.s = type + " that aotc cannot read (" + message.substr(0, message.find('\n')) + ")";
        return o;
      }
    }
  }
  o.kind = K::Other;
  o.s = v.tagKind();
  return o;
}

namespace {

// obj.name(): a method of a TorchBind object (the packed parameters' unpack, stride, ...).
c10::IValue call_method(const c10::IValue& obj, const char* name) {
  const auto cls = obj.type()->cast<c10::ClassType>();
  torch::jit::Function* method = cls ? cls->findMethod(name) : nullptr;
  if (!method) throw CompileError(obj.type()->str() + " has no method " + name);
  torch::jit::Stack stack{obj};
  method->run(stack);
  return stack.back();
}

}  // namespace

// torch's packed weights of quantized::conv2d / linear as IR constants: the int8 weight,
// the float bias and the quantization of the weight, with the convolution's geometry.
ops::Operand Interpreter::quantized_weights(const c10::IValue& packed) {
  const void* key = packed.internalToPointer();
  if (auto it = quantized_weights_.find(key); it != quantized_weights_.end()) return it->second;
  const std::string type = packed.type()->str();
  auto w = std::make_shared<ops::QuantizedWeights>();
  const auto unpacked = call_method(packed, "unpack").toTuple();
  const at::Tensor weight = unpacked->elements().at(0).toTensor();
  const c10::IValue bias = unpacked->elements().at(1);
  if (!weight.is_quantized() || weight.scalar_type() != at::kQInt8)
    throw CompileError(type + ": the weight is " + c10::toString(weight.scalar_type()) +
                       ", aotc supports qint8 weights");
  if (weight.qscheme() == at::kPerTensorAffine) {
    w->scales = {weight.q_scale()};
    w->zero_points = {weight.q_zero_point()};
  } else if (weight.qscheme() == at::kPerChannelAffine && weight.q_per_channel_axis() == 0) {
    const at::Tensor scales = weight.q_per_channel_scales().to(at::kDouble).contiguous();
    const at::Tensor zeros = weight.q_per_channel_zero_points().to(at::kLong).contiguous();
    w->scales.assign(scales.data_ptr<double>(), scales.data_ptr<double>() + scales.numel());
    w->zero_points.assign(zeros.data_ptr<int64_t>(), zeros.data_ptr<int64_t>() + zeros.numel());
  } else {
    throw CompileError(type + ": weight qscheme " + std::string(c10::toString(weight.qscheme())) +
                       " is not supported (per-tensor affine, and per-channel affine along the output "
                       "channels, are)");
  }
  const at::Tensor integers = weight.int_repr();
  w->weight = graph_.add_constant(ir::DType::Int8, weight.sizes().vec(), dense_bytes(integers, at::kChar));
  if (bias.isTensor() && bias.toTensor().defined()) {
    const at::Tensor b = bias.toTensor();
    w->bias = graph_.add_constant(ir::DType::Float32, b.sizes().vec(), dense_bytes(b, at::kFloat));
  }
  if (type.find("Conv") != std::string::npos) {
    w->stride = call_method(packed, "stride").toIntVector();
    w->padding = call_method(packed, "padding").toIntVector();
    w->dilation = call_method(packed, "dilation").toIntVector();
    w->output_padding = call_method(packed, "output_padding").toIntVector();
    w->groups = call_method(packed, "groups").toInt();
    w->transpose = call_method(packed, "transpose").toBool();
  }
  ops::Operand o;
  o.kind = ops::Operand::Kind::QuantizedWeights;
  o.qweights = std::move(w);
  return quantized_weights_[key] = o;
}

Binding Interpreter::from_operand(const ops::Operand& o) {
  using K = ops::Operand::Kind;
  switch (o.kind) {
    case K::Tensor:
      return Binding::of_tensor(o.tensor);
    case K::TensorList: {
      std::vector<Binding> items;
      for (int id : o.tensors) items.push_back(Binding::of_tensor(id));
      return Binding::seq(std::move(items), false);
    }
    case K::None:
      return Binding::of_known(c10::IValue());
    case K::Bool:
      return Binding::of_known(o.b);
    case K::Int:
      return Binding::of_known(o.i);
    case K::Double:
      return Binding::of_known(o.d);
    case K::IntList:
      return Binding::of_known(c10::IValue(o.ints));
    default:
      return Binding::poison();
  }
}

ConstantPool::ConstantPool(const torch::jit::Graph& graph) {
  std::vector<const torch::jit::Block*> blocks{graph.block()};
  while (!blocks.empty()) {
    const torch::jit::Block* block = blocks.back();
    blocks.pop_back();
    for (const Node* node : block->nodes()) {
      for (const torch::jit::Block* inner : node->blocks()) blocks.push_back(inner);
      if (node->kind() == prim::Constant && node->hasAttribute(torch::jit::attr::value) &&
          node->kindOf(torch::jit::attr::value) == torch::jit::AttributeKind::t)
        bytes_.emplace(node->t(torch::jit::attr::value).unsafeGetTensorImpl(), std::nullopt);
    }
  }
}

std::optional<ir::ConstantBytes>* ConstantPool::find(const c10::TensorImpl* t) {
  auto it = bytes_.find(t);
  return it == bytes_.end() ? nullptr : &it->second;
}

}  // namespace aotc::frontend
