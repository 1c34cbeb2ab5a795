#include "interpreter.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "../ir/error.h"
#include "../ops/op_registry.h"

namespace aotc::frontend {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;
namespace prim = c10::prim;
namespace aten = c10::aten;

namespace {

// File, line and line text of one source range, mapped back to the Python that
// generated it when the TorchScript file kept that debug information.
std::optional<ir::SourceLocation> location_of(const torch::jit::SourceRange& raw) {
  torch::jit::SourceRange range = raw;
  if (auto original = raw.findSourceRangeThatGenerated()) range = *original;
  auto flc = range.file_line_col();
  if (!flc) return std::nullopt;
  ir::SourceLocation loc;
  loc.file = std::get<0>(*flc);
  loc.line = static_cast<int>(std::get<1>(*flc));
  try {
    auto source = range.source();
    if (source && !source->text_str().str().empty()) {
      std::string text = source->get_line(source->lineno_for_offset(range.start())).str();
      auto first = text.find_first_not_of(" \t");
      auto last = text.find_last_not_of(" \t\r\n");
      loc.text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
    }
  } catch (...) {
    loc.text.clear();  // the line text is a nicety; its absence is fine
  }
  return loc;
}

// torch's own modules and the serialized code of a TorchScript file are not where the
// user should look.
bool is_library_location(const ir::SourceLocation& loc) {
  return loc.file.find("/torch/") != std::string::npos ||
         loc.file.find("/torchvision/") != std::string::npos || loc.file.rfind("code/__torch__", 0) == 0 ||
         loc.file.find("<string>") != std::string::npos;
}

}  // namespace

// The innermost location in the user's own code (may throw on corrupt debug records).
ir::SourceLocation user_source_location(const Node* node);

ir::SourceLocation source_location(const Node* node) {
  // Source ranges of a loaded file are unpickled lazily from its debug records; a corrupt
  // record must cost only the location, not the compile.
  try {
    return user_source_location(node);
  } catch (...) {
    return {};
  }
}

ir::SourceLocation user_source_location(const Node* node) {
  // Candidates: every call site on the inlined call stack (outermost first), then the node.
  std::vector<ir::SourceLocation> candidates;
  if (auto stack = node->callstack()) {
    for (const auto& entry : (*stack)->vec())
      if (auto loc = location_of(std::get<1>(entry))) candidates.push_back(*loc);
  }
  if (auto loc = location_of(node->sourceRange())) candidates.push_back(*loc);
  // The innermost frame in the user's own code, else the innermost of all.
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it)
    if (!is_library_location(*it)) return *it;
  return candidates.empty() ? ir::SourceLocation{} : candidates.back();
}

namespace {

struct Container;

// What a TorchScript value is during interpretation.
struct Binding {
  enum class Kind { Known, Tensor, Seq, Dict, Poison };
  Kind kind = Kind::Poison;
  c10::IValue known;  // Known: a compile-time value, constant tensors included
  int tensor = -1;    // Tensor: an IR value computed at run time
  // Seq (list or tuple) and Dict that hold something not known at compile time. Shared:
  // TorchScript lists and dicts are references, and every alias must see a mutation.
  std::shared_ptr<Container> box;

  static Binding of_known(c10::IValue v) {
    Binding b;
    b.kind = Kind::Known;
    b.known = std::move(v);
    return b;
  }
  static Binding of_tensor(int id) {
    Binding b;
    b.kind = Kind::Tensor;
    b.tensor = id;
    return b;
  }
  static Binding poison() { return {}; }
  static Binding seq(std::vector<Binding> items, bool tuple);
  static Binding dict(std::vector<c10::IValue> keys, std::vector<Binding> items);
  bool is_known() const { return kind == Kind::Known; }
  bool is_box() const { return kind == Kind::Seq || kind == Kind::Dict; }
  std::vector<Binding>& items() const;
  std::vector<c10::IValue>& keys() const;
};

struct Container {
  std::vector<Binding> items;
  std::vector<c10::IValue> keys;  // Dict only, in insertion order
  bool tuple = false;
};

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
  }
  return c10::ScalarType::Float;
}

c10::Symbol sym(const char* qualified) { return c10::Symbol::fromQualString(qualified); }

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string describe(const c10::IValue& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Python-style index into a sequence of n, or nullopt when out of range.
std::optional<size_t> python_index(int64_t i, size_t n) {
  const int64_t size = static_cast<int64_t>(n);
  if (i < 0) i += size;
  if (i < 0 || i >= size) return std::nullopt;
  return static_cast<size_t>(i);
}

// Ops that change only the shape metadata of their first argument in place: no write
// goes to the storage that a view shares with its base.
bool is_metadata_inplace(const std::string& name) {
  static const std::set<std::string> ops = {"aten::squeeze_",   "aten::unsqueeze_", "aten::transpose_",
                                            "aten::t_",         "aten::swapaxes_",  "aten::swapdims_",
                                            "aten::as_strided_"};
  return ops.count(name) != 0;
}

// Ops whose result shares the storage of their first argument, and how to write a
// changed view back into its base (see write_back).
enum class ViewKind { NotView, Reshape, Permute, Transpose, Select, Slice, Narrow, Unsupported };

ViewKind view_kind(const std::string& name) {
  static const std::map<std::string, ViewKind> kinds = {
      {"aten::view", ViewKind::Reshape},         {"aten::reshape", ViewKind::Reshape},
      {"aten::_unsafe_view", ViewKind::Reshape}, {"aten::view_as", ViewKind::Reshape},
      {"aten::reshape_as", ViewKind::Reshape},   {"aten::flatten", ViewKind::Reshape},
      {"aten::squeeze", ViewKind::Reshape},      {"aten::unsqueeze", ViewKind::Reshape},
      {"aten::unflatten", ViewKind::Reshape},    {"aten::contiguous", ViewKind::Reshape},
      {"aten::detach", ViewKind::Reshape},       {"aten::alias", ViewKind::Reshape},
      {"aten::permute", ViewKind::Permute},      {"aten::transpose", ViewKind::Transpose},
      {"aten::t", ViewKind::Transpose},          {"aten::select", ViewKind::Select},
      {"aten::slice", ViewKind::Slice},          {"aten::narrow", ViewKind::Narrow},
      {"aten::expand", ViewKind::Unsupported},   {"aten::expand_as", ViewKind::Unsupported},
      {"aten::diagonal", ViewKind::Unsupported}, {"aten::as_strided", ViewKind::Unsupported},
      {"aten::unfold", ViewKind::Unsupported},   {"aten::movedim", ViewKind::Unsupported},
      {"aten::swapaxes", ViewKind::Unsupported}, {"aten::swapdims", ViewKind::Unsupported},
  };
  auto it = kinds.find(name);
  return it == kinds.end() ? ViewKind::NotView : it->second;
}

class Interpreter {
 public:
  Interpreter(ir::Graph& graph, bool verbose, Census& census, ConstantPool* pool)
      : graph_(graph), verbose_(verbose), census_(census), pool_(pool) {}

  void run(const std::shared_ptr<torch::jit::Graph>& g, const c10::IValue& self,
           const std::vector<std::optional<c10::IValue>>& arguments) {
    auto inputs = g->inputs();
    bind(inputs[0], Binding::of_known(self));
    size_t next_ir_input = 0;
    for (size_t i = 1; i < inputs.size(); ++i) {
      const auto& argument = i - 1 < arguments.size() ? arguments[i - 1] : std::nullopt;
      bind(inputs[i],
           argument ? Binding::of_known(*argument) : Binding::of_tensor(graph_.inputs.at(next_ir_input++)));
    }
    interpret_block(g->block());
    if (!census_.ok()) return;  // the caller reports what was found
    Binding result = lookup(g->outputs().at(0));
    std::vector<std::pair<std::string, Binding>> flat;
    flatten_output(result, "", flat);
    int index = 0;
    for (auto& [name, b] : flat) {
      int id = tensor_of(b, "model output");
      graph_.outputs.push_back({id, name.empty() ? "output" + std::to_string(index) : name});
      ++index;
    }
    if (graph_.outputs.empty()) throw CompileError("the model returns no tensors");
  }

 private:
  // How a run-time tensor was made from another one by a view op (x[:, 0], x.view(...),
  // x.t(), ...): an in-place update of the view must also update its base.
  struct ViewRecord {
    int base = -1;             // the IR value the view was taken of
    const Node* op = nullptr;  // the view op, with its compile-time arguments
  };

  ir::Graph& graph_;
  bool verbose_;
  Census& census_;
  std::unordered_map<const Value*, Binding> env_;
  std::unordered_map<const c10::TensorImpl*, int> constant_ids_;
  ConstantPool* pool_;                         // nullptr: no sharing
  std::unordered_map<int, ViewRecord> views_;  // keyed by the view's IR value
  int loop_iterations_ = 0;

  void bind(const Value* v, Binding b) { env_[v] = std::move(b); }

  const Binding& lookup(const Value* v) {
    auto it = env_.find(v);
    if (it == env_.end()) {
      // Values defined by prim::Constant are bound on first use.
      if (auto iv = torch::jit::toIValue(v)) return env_[v] = Binding::of_known(*iv);
      throw CompileError("internal: TorchScript value %" + v->debugName() + " used before definition");
    }
    return it->second;
  }

  // "OP at FILE:LINE: WHAT" and the source line: the form of every message about a node.
  static std::string message_at(const Node* node, const std::string& what, const char* label = nullptr) {
    ir::SourceLocation loc = source_location(node);
    std::string message =
        std::string(label ? label : node->kind().toQualString()) + " at " + loc.str() + ": " + what;
    if (!loc.text.empty()) message += "\n    " + loc.text;
    return message;
  }

  // Stops the whole compile: for what makes the rest of the model meaningless.
  [[noreturn]] void fail_at(const Node* node, const std::string& what) {
    throw CompileError(message_at(node, what));
  }

  // Records a problem with one use and goes on, so that the user sees every problem at
  // once; what depends on the node's results is poisoned and reports nothing more.
  void problem_at(Node* node, const std::string& what, const char* label = nullptr) {
    census_.problems.push_back(message_at(node, what, label));
    poison_outputs(node);
  }

  OpUse& use_of(const Node* node) {
    OpUse& use = census_.ops[node->kind().toQualString()];
    if (use.schema.empty()) {
      if (const c10::FunctionSchema* schema = node->maybeSchema()) {
        std::ostringstream os;
        os << *schema;
        use.schema = os.str();
      }
    }
    return use;
  }
  void count_compile_time(const Node* node) { ++use_of(node).compile_time; }

  // An IR value for a tensor binding; constant tensors become IR constants once each.
  int tensor_of(const Binding& b, const std::string& role) {
    if (b.kind == Binding::Kind::Tensor) return b.tensor;
    if (b.kind == Binding::Kind::Known && b.known.isTensor()) return constant_tensor(b.known.toTensor());
    throw CompileError(role + " is not a tensor");
  }

  int constant_tensor(const at::Tensor& t) {
    auto it = constant_ids_.find(t.unsafeGetTensorImpl());
    if (it != constant_ids_.end()) return it->second;
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
  static ir::ConstantBytes dense_bytes(const at::Tensor& t, at::ScalarType scalar_type) {
    const at::Tensor dense = t.detach().to(at::kCPU).to(scalar_type).contiguous();
    std::vector<uint8_t> bytes(dense.nbytes());
    if (!bytes.empty()) std::memcpy(bytes.data(), dense.data_ptr(), bytes.size());
    return ir::ConstantBytes(std::move(bytes));
  }

  // A container binding as a compile-time IValue of the given TorchScript type, when
  // everything in it is known (e.g. a list of sizes built by a loop).
  std::optional<c10::IValue> to_known(const Binding& b, c10::TypePtr type) {
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

  // A known list or dict as a container, so that run-time tensors can go into it. Every
  // value bound to the same list object becomes the same container.
  const Binding& make_box(const Value* v) {
    const Binding b = lookup(v);
    if (!b.is_known() || !(b.known.isList() || b.known.isGenericDict())) return lookup(v);
    Binding box;
    if (b.known.isList()) {
      std::vector<Binding> items;
      for (const c10::IValue& item : b.known.toListRef()) items.push_back(Binding::of_known(item));
      box = Binding::seq(std::move(items), false);
    } else {
      std::vector<c10::IValue> keys;
      std::vector<Binding> items;
      for (const auto& entry : b.known.toGenericDict()) {
        keys.push_back(entry.key());
        items.push_back(Binding::of_known(entry.value()));
      }
      box = Binding::dict(std::move(keys), std::move(items));
    }
    for (auto& [value, other] : env_)
      if (other.is_known() && other.known.is(b.known)) other = box;
    return lookup(v);
  }

  ops::Operand to_operand(const Binding& b) {
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
    o.kind = K::Other;
    o.s = v.tagKind();
    return o;
  }

  Binding from_operand(const ops::Operand& o) {
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

  void interpret_block(Block* block) {
    for (Node* node : block->nodes()) interpret_node(node);
  }

  static bool is_tensor_type(const Value* v) { return v->type()->kind() == c10::TypeKind::TensorType; }

  void interpret_node(Node* node) {
    const auto kind = node->kind();
    if (kind == prim::Constant) {
      auto iv = torch::jit::toIValue(node->output());
      bind(node->output(), iv ? Binding::of_known(*iv) : Binding::poison());
      return;
    }
    // An unsupported op upstream poisons what depends on it, without more messages.
    bool any_poison = false, all_known = true, any_tensor = false, any_box = false;
    for (const Value* in : node->inputs()) {
      const Binding& b = lookup(in);
      any_poison |= b.kind == Binding::Kind::Poison;
      all_known &= b.is_known();
      any_tensor |= b.kind == Binding::Kind::Tensor;
      any_box |= b.is_box();
    }
    if (kind == prim::If) return interpret_if(node);
    if (kind == prim::Loop) return interpret_loop(node);
    const bool to_python_value = kind == aten::Bool || kind == aten::Int || kind == aten::Float ||
                                 kind == aten::item || kind == aten::ScalarImplicit ||
                                 kind == sym("aten::IntImplicit") || kind == sym("aten::FloatImplicit") ||
                                 kind == sym("aten::tolist");
    if (any_poison) {
      bool poisoned_tensor = false;
      for (const Value* in : node->inputs())
        poisoned_tensor |= lookup(in).kind == Binding::Kind::Poison && is_tensor_type(in);
      // Still list what is wrong downstream of another problem: users get the full list at once.
      if (to_python_value && poisoned_tensor) return dynamic_value_problem(node);
      if (poisoned_tensor && !kind.is_prim() && !ops::Registry::get().find_lowering(kind.toQualString()) &&
          !is_tensor_query(node))
        record_unsupported(node);
      return poison_outputs(node);
    }
    if (interpret_structural(node, all_known, any_box)) return count_compile_time(node);
    if (interpret_tensor_query(node)) return count_compile_time(node);
    if (kind == prim::RaiseException) {
      const Binding& message = lookup(node->input(0));
      fail_at(node, "the model raises for these input shapes: " +
                        (message.is_known() && message.known.isString() ? message.known.toStringRef()
                                                                        : std::string("an exception")));
    }
    if (kind == aten::warn || kind == prim::Print) return count_compile_time(node);
    if (any_tensor && to_python_value) return dynamic_value_problem(node);
    if (!any_tensor && node->maybeOperator() && !node->isNondeterministic() &&
        (kind.is_aten() || kind.is_prim())) {
      if (all_known) return evaluate_with_torch(node);
      // Lists and dicts whose items are all known (a list of sizes built in a loop).
      if (any_box && !mutates_a_box(node)) {
        std::vector<c10::IValue> known;
        for (const Value* in : node->inputs()) {
          auto v = to_known(lookup(in), in->type());
          if (!v) break;
          known.push_back(*v);
        }
        if (known.size() == node->inputs().size()) return evaluate_with_torch(node, &known);
      }
    }
    if (kind.is_prim()) {
      // prim ops have no lowerings: one that is not evaluated above depends on run-time values.
      return problem_at(node, "this depends on tensors computed at run time; aotc evaluates " +
                                  std::string(kind.toQualString()) + " only on values known at compile time");
    }
    lower_node(node);
  }

  void dynamic_value_problem(Node* node) {
    problem_at(node,
               "this turns a tensor computed at run time into a Python value (bool(t), int(t), t.item(), "
               "...); aotc needs control flow and shapes that the input shapes and constants decide, "
               "not the input values");
  }

  bool mutates_a_box(const Node* node) {
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (!schema) return true;
    for (size_t i = 0; i < node->inputs().size() && i < schema->arguments().size(); ++i) {
      const auto* alias = schema->arguments()[i].alias_info();
      if (alias && alias->isWrite() && lookup(node->input(i)).is_box()) return true;
    }
    return false;
  }

  void poison_outputs(Node* node) {
    for (const Value* out : node->outputs()) bind(out, Binding::poison());
  }

  void interpret_if(Node* node) {
    const Binding& cond = lookup(node->input(0));
    if (cond.kind == Binding::Kind::Poison) return poison_outputs(node);
    if (!cond.is_known() || !cond.known.isBool())
      return problem_at(node,
                        "this `if` depends on tensor values computed at run time; aotc needs control "
                        "flow that the input shapes and constants decide",
                        "if");
    count_compile_time(node);
    graph_.decisions.push_back({user_source_location(node), cond.known.toBool() ? "if: then" : "if: else"});
    Block* taken = node->blocks().at(cond.known.toBool() ? 0 : 1);
    interpret_block(taken);
    for (size_t i = 0; i < node->outputs().size(); ++i) bind(node->output(i), lookup(taken->outputs()[i]));
  }

  void interpret_loop(Node* node) {
    const Binding& trips = lookup(node->input(0));
    const Binding& start = lookup(node->input(1));
    if (trips.kind == Binding::Kind::Poison || start.kind == Binding::Kind::Poison)
      return poison_outputs(node);
    if (!trips.is_known() || !trips.known.isInt() || !start.is_known() || !start.known.isBool())
      return problem_at(node,
                        "this loop's trip count or condition depends on tensor values computed at run "
                        "time; aotc unrolls loops whose trip count the input shapes and constants decide",
                        "loop");
    count_compile_time(node);
    Block* body = node->blocks().at(0);
    std::vector<Binding> carried;
    for (size_t i = 2; i < node->inputs().size(); ++i) carried.push_back(lookup(node->input(i)));
    bool go_on = start.known.toBool();
    int64_t iter = 0;
    for (; go_on && iter < trips.known.toInt(); ++iter) {
      if (++loop_iterations_ > 100000) fail_at(node, "loop unrolling exceeded 100000 iterations in total");
      bind(body->inputs()[0], Binding::of_known(iter));
      for (size_t i = 0; i < carried.size(); ++i) bind(body->inputs()[i + 1], carried[i]);
      interpret_block(body);
      const Binding& cond = lookup(body->outputs()[0]);
      if (cond.kind == Binding::Kind::Poison) return poison_outputs(node);
      if (!cond.is_known() || !cond.known.isBool())
        return problem_at(node,
                          "this loop's condition depends on tensor values computed at run time; aotc "
                          "unrolls loops whose trip count the input shapes and constants decide",
                          "loop");
      go_on = cond.known.toBool();
      for (size_t i = 0; i < carried.size(); ++i) carried[i] = lookup(body->outputs()[i + 1]);
    }
    graph_.decisions.push_back({user_source_location(node), "loop: " + std::to_string(iter) + " trips"});
    for (size_t i = 0; i < carried.size(); ++i) bind(node->output(i), carried[i]);
  }

  // The items of a list argument, whether a container or a known list.
  std::vector<Binding> items_of(const Binding& b) {
    if (b.kind == Binding::Kind::Seq) return b.items();
    std::vector<Binding> items;
    if (b.is_known() && b.known.isList())
      for (const c10::IValue& item : b.known.toListRef()) items.push_back(Binding::of_known(item));
    return items;
  }

  // Lists, tuples and dicts that hold run-time tensors are containers; their ops run here.
  // Returns false for what torch evaluates or a lowering handles.
  bool interpret_structural(Node* node, bool all_known, bool any_box) {
    const auto kind = node->kind();
    const bool tuple_construct = kind == prim::TupleConstruct;
    if (kind == prim::ListConstruct || tuple_construct) {
      std::vector<Binding> items;
      for (const Value* in : node->inputs()) items.push_back(lookup(in));
      Binding seq = Binding::seq(std::move(items), tuple_construct);
      // Lists of sizes and other known values stay compile-time values.
      if (all_known)
        if (auto known = to_known(seq, node->output()->type())) seq = Binding::of_known(*known);
      bind(node->output(), seq);
      return true;
    }
    if (kind == prim::DictConstruct) {
      std::vector<c10::IValue> keys;
      std::vector<Binding> items;
      for (size_t i = 0; i + 1 < node->inputs().size(); i += 2) {
        const Binding& key = lookup(node->input(i));
        if (!key.is_known()) fail_at(node, "dict keys must be known at compile time");
        keys.push_back(key.known);
        items.push_back(lookup(node->input(i + 1)));
      }
      Binding dict = Binding::dict(std::move(keys), std::move(items));
      if (all_known)
        if (auto known = to_known(dict, node->output()->type())) dict = Binding::of_known(*known);
      bind(node->output(), dict);
      return true;
    }
    if (kind == prim::Uninitialized) {
      bind(node->output(), Binding::of_known(c10::IValue()));
      return true;
    }
    if (kind == aten::__is__ || kind == aten::__isnot__) {
      const Binding& a = lookup(node->input(0));
      const Binding& b = lookup(node->input(1));
      if (a.is_known() && b.is_known()) return false;
      // `query is key`: the same run-time tensor (or container) is the same object; a
      // run-time value is never None nor a compile-time value.
      bool same = false;
      if (a.kind == Binding::Kind::Tensor && b.kind == Binding::Kind::Tensor) same = a.tensor == b.tensor;
      if (a.is_box() && b.is_box()) same = a.box == b.box;
      bind(node->output(), Binding::of_known(same == (kind == aten::__is__)));
      return true;
    }
    if (kind == prim::GetAttr) {
      // An attribute that freezing kept: read from the (frozen, eval-mode) module.
      const Binding& object = lookup(node->input(0));
      if (!object.is_known() || !object.known.isObject())
        fail_at(node, "attribute access on something that is not a module");
      const std::string name = node->s(c10::attr::name);
      const auto& object_ptr = object.known.toObject();
      if (!object_ptr->type()->hasAttribute(name))
        fail_at(node, "the module has no attribute '" + name + "'");
      bind(node->output(), Binding::of_known(object_ptr->getAttr(name)));
      return true;
    }
    if (kind == prim::SetAttr)
      fail_at(node, "forward assigns the module attribute '" + node->s(c10::attr::name) +
                        "'; aotc compiles models whose attributes are constant while they run");
    if (kind == prim::unchecked_cast) {
      bind(node->output(), lookup(node->input(0)));
      return true;
    }
    // Special ops that LibTorch runs without a matching schema (maybeOperator() is null).
    if ((kind == prim::ListUnpack || kind == prim::TupleUnpack) && all_known) {
      const c10::IValue& v = lookup(node->input(0)).known;
      std::vector<c10::IValue> elements;
      if (v.isList())
        for (const c10::IValue& e : v.toListRef()) elements.push_back(e);
      else if (v.isTuple())
        elements = v.toTupleRef().elements().vec();
      if (elements.size() != node->outputs().size())
        fail_at(node, "cannot unpack a value of " + std::to_string(elements.size()) + " items into " +
                          std::to_string(node->outputs().size()));
      for (size_t i = 0; i < elements.size(); ++i) bind(node->output(i), Binding::of_known(elements[i]));
      return true;
    }
    if (kind == prim::TupleIndex && all_known && lookup(node->input(0)).known.isTuple() &&
        lookup(node->input(1)).known.isInt()) {
      const auto& elements = lookup(node->input(0)).known.toTupleRef().elements();
      auto i = python_index(lookup(node->input(1)).known.toInt(), elements.size());
      if (!i) fail_at(node, "tuple index out of range");
      bind(node->output(), Binding::of_known(elements[*i]));
      return true;
    }
    // A known list or dict that receives a run-time value becomes a container first.
    const bool mutating = kind == aten::append || kind == aten::insert || kind == aten::_set_item ||
                          kind == sym("aten::extend") || kind == aten::pop || kind == sym("aten::clear") ||
                          kind == sym("aten::reverse") || kind == aten::Delete;
    if (mutating && !all_known)
      make_box(node->input(0));
    else if (!any_box)
      return false;
    return interpret_container_op(node);
  }

  bool interpret_container_op(Node* node) {
    const auto kind = node->kind();
    const auto n_in = node->inputs().size();
    const Binding self = lookup(node->input(0));
    auto known_arg = [&](size_t i, const char* what) -> const c10::IValue& {
      const Binding& b = lookup(node->input(i));
      if (!b.is_known()) fail_at(node, std::string(what) + " must be known at compile time");
      return b.known;
    };
    auto bind_self_output = [&] {
      if (node->outputs().size() == 1) bind(node->output(), self);
    };
    if (kind == prim::ListUnpack || kind == prim::TupleUnpack) {
      if (self.kind != Binding::Kind::Seq || self.items().size() != node->outputs().size())
        fail_at(node, "cannot unpack this value into " + std::to_string(node->outputs().size()) + " values");
      for (size_t i = 0; i < node->outputs().size(); ++i) bind(node->output(i), self.items()[i]);
      return true;
    }
    if (self.kind == Binding::Kind::Dict) {
      auto find = [&](const c10::IValue& key) -> std::optional<size_t> {
        for (size_t i = 0; i < self.keys().size(); ++i)
          if (self.keys()[i] == key) return i;
        return std::nullopt;
      };
      if (kind == aten::__getitem__ || kind == sym("aten::get") || kind == aten::pop) {
        const c10::IValue& key = known_arg(1, "the key");
        auto i = find(key);
        if (!i) {
          if (kind == aten::__getitem__ || n_in < 3)
            fail_at(node, "key " + describe(key) + " not found in dict");
          bind(node->output(), lookup(node->input(2)));
          return true;
        }
        bind(node->output(), self.items()[*i]);
        if (kind == aten::pop) {
          self.items().erase(self.items().begin() + static_cast<std::ptrdiff_t>(*i));
          self.keys().erase(self.keys().begin() + static_cast<std::ptrdiff_t>(*i));
        }
        return true;
      }
      if (kind == aten::_set_item) {
        const c10::IValue& key = known_arg(1, "the key");
        if (auto i = find(key)) {
          self.items()[*i] = lookup(node->input(2));
        } else {
          self.keys().push_back(key);
          self.items().push_back(lookup(node->input(2)));
        }
        return true;
      }
      if (kind == aten::Delete) {
        auto i = find(known_arg(1, "the key"));
        if (!i) fail_at(node, "key not found in dict");
        self.items().erase(self.items().begin() + static_cast<std::ptrdiff_t>(*i));
        self.keys().erase(self.keys().begin() + static_cast<std::ptrdiff_t>(*i));
        return true;
      }
      if (kind == aten::len)
        return bind(node->output(), Binding::of_known(int64_t(self.items().size()))), true;
      if (kind == aten::__contains__)
        return bind(node->output(), Binding::of_known(find(known_arg(1, "the key")).has_value())), true;
      if (kind == aten::keys) {
        auto list_type = node->output()->type()->expect<c10::ListType>();
        c10::impl::GenericList keys(list_type->getElementType());
        for (const c10::IValue& key : self.keys()) keys.push_back(key);
        return bind(node->output(), Binding::of_known(c10::IValue(keys))), true;
      }
      if (kind == aten::values) return bind(node->output(), Binding::seq(self.items(), false)), true;
      if (kind == sym("aten::items")) {
        std::vector<Binding> pairs;
        for (size_t i = 0; i < self.items().size(); ++i)
          pairs.push_back(Binding::seq({Binding::of_known(self.keys()[i]), self.items()[i]}, true));
        return bind(node->output(), Binding::seq(std::move(pairs), false)), true;
      }
      if (kind == sym("aten::copy"))
        return bind(node->output(), Binding::dict(self.keys(), self.items())), true;
      if (kind == sym("aten::clear")) {
        self.items().clear();
        self.keys().clear();
        return true;
      }
      return false;
    }
    if (self.kind != Binding::Kind::Seq) {
      // A known list with a container argument: list + list, extend.
      if (kind == aten::add && n_in == 2 && lookup(node->input(1)).kind == Binding::Kind::Seq &&
          node->output()->type()->kind() == c10::TypeKind::ListType) {
        std::vector<Binding> items = items_of(self);
        for (const Binding& b : lookup(node->input(1)).items()) items.push_back(b);
        return bind(node->output(), Binding::seq(std::move(items), false)), true;
      }
      return false;
    }
    std::vector<Binding>& items = self.items();
    auto index_arg = [&](size_t i) {
      const c10::IValue& v = known_arg(i, "the index");
      if (!v.isInt()) fail_at(node, "the index must be an int");
      return v.toInt();
    };
    if (kind == aten::__getitem__ || kind == prim::TupleIndex) {
      auto i = python_index(index_arg(1), items.size());
      if (!i) fail_at(node, "index out of range for length " + std::to_string(items.size()));
      return bind(node->output(), items[*i]), true;
    }
    if (kind == aten::len) return bind(node->output(), Binding::of_known(int64_t(items.size()))), true;
    if (kind == aten::append) return items.push_back(lookup(node->input(1))), bind_self_output(), true;
    if (kind == sym("aten::extend")) {
      for (const Binding& b : items_of(lookup(node->input(1)))) items.push_back(b);
      return true;
    }
    if (kind == aten::insert) {
      int64_t i = index_arg(1);
      const int64_t n = static_cast<int64_t>(items.size());
      i = i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n);
      items.insert(items.begin() + i, lookup(node->input(2)));
      return true;
    }
    if (kind == aten::_set_item) {
      auto i = python_index(index_arg(1), items.size());
      if (!i) fail_at(node, "list assignment index out of range");
      items[*i] = lookup(node->input(2));
      return bind_self_output(), true;
    }
    if (kind == aten::pop || kind == aten::Delete) {
      auto i = python_index(n_in > 1 ? index_arg(1) : -1, items.size());
      if (!i) fail_at(node, "index out of range for length " + std::to_string(items.size()));
      if (kind == aten::pop) bind(node->output(), items[*i]);
      items.erase(items.begin() + static_cast<std::ptrdiff_t>(*i));
      return true;
    }
    if (kind == sym("aten::clear")) return items.clear(), true;
    if (kind == sym("aten::reverse")) return std::reverse(items.begin(), items.end()), true;
    if ((kind == aten::list || kind == sym("aten::copy")) && n_in == 1)
      return bind(node->output(), Binding::seq(items, false)), true;
    if (kind == aten::add && n_in == 2 && node->output()->type()->kind() == c10::TypeKind::ListType) {
      std::vector<Binding> joined = items;
      for (const Binding& b : items_of(lookup(node->input(1)))) joined.push_back(b);
      return bind(node->output(), Binding::seq(std::move(joined), false)), true;
    }
    if ((kind == aten::slice || kind == prim::TupleSlice) && !is_tensor_type(node->input(0))) {
      // slice.t(l, start=None, end=None, step=1), with Python's clamping.
      const int64_t n = static_cast<int64_t>(items.size());
      auto opt = [&](size_t i, int64_t fallback) {
        if (i >= n_in) return fallback;
        const c10::IValue& v = known_arg(i, "slice bounds");
        return v.isNone() ? fallback : v.toInt();
      };
      const int64_t step = opt(3, 1);
      if (step <= 0) fail_at(node, "only positive slice steps are supported for lists");
      auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + n : v, int64_t{0}, n); };
      const int64_t begin = clamp(opt(1, 0)), end = clamp(opt(2, n));
      std::vector<Binding> part;
      for (int64_t i = begin; i < end; i += step) part.push_back(items[static_cast<size_t>(i)]);
      return bind(node->output(), Binding::seq(std::move(part), self.box->tuple)), true;
    }
    return false;
  }

  static bool is_tensor_query(const Node* node) {
    static const std::set<std::string> queries = {"aten::size",
                                                  "aten::sym_size",
                                                  "aten::dim",
                                                  "aten::numel",
                                                  "aten::sym_numel",
                                                  "aten::len",
                                                  "prim::dtype",
                                                  "prim::device",
                                                  "prim::is_cuda",
                                                  "aten::is_floating_point",
                                                  "aten::is_complex",
                                                  "prim::requires_grad",
                                                  "aten::is_contiguous",
                                                  "prim::layout",
                                                  "aten::get_device",
                                                  "prim::is_quantized",
                                                  "prim::is_sparse",
                                                  "prim::is_sparse_csr",
                                                  "prim::is_mkldnn",
                                                  "prim::is_meta",
                                                  "prim::is_xpu",
                                                  "prim::is_mps",
                                                  "prim::is_nested",
                                                  "prim::is_vulkan",
                                                  "prim::is_ipu",
                                                  "prim::is_maia",
                                                  "prim::is_xla",
                                                  "prim::is_hpu",
                                                  "aten::is_nonzero_shape",
                                                  "aten::element_size",
                                                  "prim::data"};
    return queries.count(node->kind().toQualString()) != 0;
  }

  // Questions about a run-time tensor's metadata have compile-time answers.
  bool interpret_tensor_query(Node* node) {
    const auto kind = node->kind();
    if (node->inputs().empty() || !is_tensor_query(node)) return false;
    const Binding& b = lookup(node->input(0));
    if (b.kind != Binding::Kind::Tensor) return false;
    const ir::Value& v = graph_.value(b.tensor);
    const int64_t rank = static_cast<int64_t>(v.shape.size());
    const std::string name = kind.toQualString();
    auto answer = [&](c10::IValue value) {
      bind(node->output(), Binding::of_known(std::move(value)));
      return true;
    };
    if ((name == "aten::size" || name == "aten::sym_size") && node->inputs().size() == 1)
      return answer(c10::IValue(v.shape));
    if (name == "aten::size" || name == "aten::sym_size") {
      const Binding& d = lookup(node->input(1));
      if (!d.is_known() || !d.known.isInt()) fail_at(node, "size(dim) needs a dim known at compile time");
      int64_t dim = d.known.toInt();
      if (dim < 0) dim += rank;
      if (dim < 0 || dim >= rank)
        fail_at(node, "dim " + std::to_string(d.known.toInt()) + " out of range for a tensor of rank " +
                          std::to_string(rank));
      return answer(v.shape[static_cast<size_t>(dim)]);
    }
    if (name == "aten::dim") return answer(rank);
    if (name == "aten::numel" || name == "aten::sym_numel") return answer(ir::numel(v.shape));
    if (name == "aten::len") {
      if (rank == 0) fail_at(node, "len() of a 0-d tensor");
      return answer(v.shape[0]);
    }
    if (name == "prim::dtype") return answer(static_cast<int64_t>(scalar_type_of(v.dtype)));
    if (name == "prim::device") return answer(c10::Device(c10::kCPU));
    if (name == "aten::get_device") return answer(int64_t{-1});
    if (name == "aten::is_floating_point") {
      return answer(v.dtype == ir::DType::Float32 || v.dtype == ir::DType::Float16 ||
                    v.dtype == ir::DType::BFloat16);
    }
    if (name == "aten::element_size")
      return answer(static_cast<int64_t>(c10::elementSize(scalar_type_of(v.dtype))));
    // Every tensor aotc computes is a dense, contiguous, strided CPU tensor without grad.
    if (name == "aten::is_contiguous") return answer(true);
    if (name == "prim::layout") return answer(static_cast<int64_t>(c10::kStrided));
    if (name == "prim::data") return bind(node->output(), b), true;
    return answer(false);  // is_cuda, requires_grad, is_quantized, is_sparse, ...
  }

  void evaluate_with_torch(Node* node, const std::vector<c10::IValue>* inputs = nullptr) {
    torch::jit::Stack stack;
    if (inputs)
      stack = *inputs;
    else
      for (const Value* in : node->inputs()) stack.push_back(lookup(in).known);
    // Operators with variadic arguments (aten::format, ...) read their count off the stack.
    if (const c10::FunctionSchema* schema = node->maybeSchema(); schema && schema->is_vararg())
      stack.push_back(static_cast<int64_t>(node->inputs().size()));
    try {
      node->getOperation()(stack);
    } catch (const std::exception& e) {
      std::string message = e.what();
      if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e))
        message = c10_error->what_without_backtrace();
      return problem_at(node, "evaluating at compile time failed: " + message.substr(0, message.find('\n')));
    }
    if (stack.size() != node->outputs().size()) fail_at(node, "internal: unexpected number of results");
    count_compile_time(node);
    for (size_t i = 0; i < node->outputs().size(); ++i) bind(node->output(i), Binding::of_known(stack[i]));
  }

  // Runs the lowering of node with the given operands; returns false (and records the
  // problem) when it refuses.
  bool run_lowering(Node* node, const ops::LowerFn& lowering, std::vector<ops::Operand> operands,
                    std::vector<ops::Operand>& outputs) {
    const std::string name = node->kind().toQualString();
    ops::LowerContext ctx(graph_, name, std::move(operands), node->outputs().size(), source_location(node));
    try {
      lowering(ctx);
    } catch (const CompileError& e) {
      ++use_of(node).failed;
      census_.problems.push_back(e.what());
      return false;
    }
    outputs = ctx.outputs;
    if (verbose_) std::fprintf(stderr, "aotc: lowered %s at %s\n", name.c_str(), ctx.loc.str().c_str());
    return true;
  }

  // After an unsupported op or a refused lowering, the rest of the model is still
  // interpreted, so that every problem is found at once: LibTorch computes the op's result
  // shapes on meta tensors (no data), and placeholder IR values with those shapes stand in
  // for the results (the compile fails before they would be needed). When that is not
  // possible, what depends on the node is poisoned.
  void continue_past(Node* node) {
    if (!node->maybeOperator()) return poison_outputs(node);
    // Meta tensors first (no memory, no work); ops without a meta kernel run on zeros.
    for (const bool meta : {true, false}) {
      if (auto results = run_on_placeholders(node, meta)) {
        auto placeholder = [&](const at::Tensor& t) -> Binding {
          if (!t.defined()) return Binding::of_known(t);  // e.g. attention weights not asked for
          auto dtype = dtype_of(t.scalar_type());
          if (!dtype) return Binding::poison();
          return Binding::of_tensor(graph_.add_value(*dtype, t.sizes().vec()));
        };
        for (size_t i = 0; i < results->size(); ++i) {
          const c10::IValue& out = (*results)[i];
          Binding b;
          if (out.isTensor()) {
            b = placeholder(out.toTensor());
          } else if (out.isTensorList()) {
            std::vector<Binding> items;
            for (const at::Tensor& t : out.toTensorVector()) items.push_back(placeholder(t));
            b = Binding::seq(std::move(items), false);
          } else if (out.isNone()) {
            b = Binding::of_known(out);
          }
          bind(node->output(i), b);
        }
        return;
      }
    }
    poison_outputs(node);
  }

  // The node's results computed by LibTorch on stand-ins for the run-time tensors: meta
  // tensors, or zeros of the same shapes and dtypes (up to 2^26 elements in all).
  std::optional<torch::jit::Stack> run_on_placeholders(Node* node, bool meta) {
    int64_t elements = 0;
    std::function<std::optional<c10::IValue>(const Binding&, c10::TypePtr)> stand_in =
        [&](const Binding& b, c10::TypePtr type) -> std::optional<c10::IValue> {
      if (b.kind == Binding::Kind::Tensor) {
        const ir::Value& v = graph_.value(b.tensor);
        const auto options = at::TensorOptions().dtype(scalar_type_of(v.dtype));
        elements += ir::numel(v.shape);
        return meta ? at::empty(v.shape, options.device(at::kMeta)) : at::zeros(v.shape, options);
      }
      if (b.is_known() && b.known.isTensor())
        return meta ? b.known.toTensor().to(at::kMeta) : b.known.toTensor();
      if (b.is_known()) return b.known;
      if (b.kind != Binding::Kind::Seq) return std::nullopt;
      auto list_type = type->cast<c10::ListType>();
      if (!list_type) return std::nullopt;
      c10::impl::GenericList list(list_type->getElementType());
      for (const Binding& item : b.items()) {
        auto v = stand_in(item, list_type->getElementType());
        if (!v) return std::nullopt;
        list.push_back(*v);
      }
      return c10::IValue(list);
    };
    torch::jit::Stack stack;
    for (const Value* in : node->inputs()) {
      auto v = stand_in(lookup(in), in->type());
      if (!v || elements > (int64_t{1} << 26)) return std::nullopt;
      stack.push_back(*v);
    }
    if (const c10::FunctionSchema* schema = node->maybeSchema(); schema && schema->is_vararg())
      stack.push_back(static_cast<int64_t>(node->inputs().size()));
    try {
      node->getOperation()(stack);
    } catch (const std::exception& e) {
      if (verbose_)
        std::fprintf(stderr, "aotc: no result shapes for %s from %s: %s\n", node->kind().toQualString(),
                     meta ? "meta tensors" : "zeros", first_line(e.what()).c_str());
      return std::nullopt;
    }
    if (stack.size() != node->outputs().size()) return std::nullopt;
    return stack;
  }

  void lower_node(Node* node) {
    const std::string name = node->kind().toQualString();
    const ops::LowerFn* lowering = ops::Registry::get().find_lowering(name);
    // x.add_(y), x += y (aten::add_) and x &= y (aten::__iand__), not aten::__and__.
    static const std::set<std::string> inplace_dunders = {"aten::__iand__", "aten::__ior__", "aten::__ixor__",
                                                          "aten::__ilshift__", "aten::__irshift__"};
    const bool inplace =
        !node->inputs().empty() && !node->outputs().empty() &&
        ((name.back() == '_' && name.rfind("aten::__", 0) != 0) || inplace_dunders.count(name));
    if (!lowering && inplace && (name == "aten::copy_" || name == "aten::fill_"))
      return lower_copy_or_fill(node);
    if (!lowering) {
      record_unsupported(node);
      return continue_past(node);
    }
    std::vector<ops::Operand> operands;
    for (const Value* in : node->inputs()) operands.push_back(to_operand(lookup(in)));
    std::vector<ops::Operand> outputs;
    if (!run_lowering(node, *lowering, std::move(operands), outputs)) return continue_past(node);
    ++use_of(node).runtime;
    for (size_t i = 0; i < node->outputs().size(); ++i) bind(node->output(i), from_operand(outputs[i]));
    const Binding& self = lookup(node->input(0));
    if (inplace && lookup(node->output(0)).kind == Binding::Kind::Tensor) {
      update_in_place(node, self, lookup(node->output(0)).tensor);
    } else if (self.kind == Binding::Kind::Tensor && node->outputs().size() == 1 &&
               lookup(node->output(0)).kind == Binding::Kind::Tensor) {
      const ViewKind view = view_kind(name);
      if (view != ViewKind::NotView) views_[lookup(node->output(0)).tensor] = {self.tensor, node};
    }
  }

  // x.copy_(src) and x.fill_(value) without a lowering of their own: the new value of x
  // is src (same shape and dtype) or a constant, and update_in_place does the rest.
  void lower_copy_or_fill(Node* node) {
    const Binding self = lookup(node->input(0));
    if (self.kind != Binding::Kind::Tensor) {
      record_unsupported(node);
      return continue_past(node);
    }
    const ir::Value& dst = graph_.value(self.tensor);
    int result = -1;
    const Binding& src = lookup(node->input(1));
    if (node->kind() == aten::fill_ && src.is_known() && (src.known.isScalar() || src.known.isTensor())) {
      const c10::Scalar value = src.known.isTensor() ? src.known.toTensor().item() : src.known.toScalar();
      at::Tensor filled = at::full(dst.shape, value, at::TensorOptions().dtype(scalar_type_of(dst.dtype)));
      // constant_ids_ is keyed by the tensor's address: it must outlive the interpretation.
      kept_alive_.push_back(filled);
      result = constant_tensor(filled);
    } else if (node->kind() == aten::copy_ && (src.kind == Binding::Kind::Tensor || src.is_known())) {
      const int id = tensor_of(src, "copy_ source");
      const ir::Value& s = graph_.value(id);
      if (s.shape != dst.shape || s.dtype != dst.dtype) {
        ++use_of(node).failed;
        return problem_at(node,
                          "copying a " + std::string(ir::dtype_name(s.dtype)) + ir::shape_str(s.shape) +
                              " tensor into a " + ir::dtype_name(dst.dtype) + ir::shape_str(dst.shape) +
                              " one needs broadcasting or a dtype cast, which aotc's copy_ does not do yet");
      }
      result = id;
    } else {
      record_unsupported(node);
      return continue_past(node);
    }
    ++use_of(node).runtime;
    bind(node->output(0), Binding::of_tensor(result));
    update_in_place(node, self, result);
  }
  std::vector<at::Tensor> kept_alive_;

  // Every binding (in containers too) that holds tensor `from` holds `to` from now on.
  void replace_tensor(int from, int to) {
    std::function<void(Binding&)> visit = [&](Binding& b) {
      if (b.kind == Binding::Kind::Tensor && b.tensor == from) b.tensor = to;
      if (b.is_box())
        for (Binding& item : b.items()) visit(item);
    };
    std::set<const Container*> seen;
    for (auto& [value, b] : env_) {
      if (b.is_box() && !seen.insert(b.box.get()).second) continue;
      visit(b);
    }
  }

  bool is_referenced(int tensor) {
    bool found = false;
    std::function<void(const Binding&)> visit = [&](const Binding& b) {
      if (b.kind == Binding::Kind::Tensor && b.tensor == tensor) found = true;
      if (b.is_box())
        for (const Binding& item : b.items()) visit(item);
    };
    for (const auto& [value, b] : env_) visit(b);
    return found;
  }

  // An in-place op (x.add_(y), x[:, 0] += 1, x.copy_(y)) computed `result`, the new
  // content of `self`. aotc's IR is functional: every reader of self from now on reads
  // result, a view's base gets the new content written back (and its base, and so on),
  // and other views of a changed tensor are taken again from the new content.
  void update_in_place(Node* node, const Binding& self, int result) {
    if (self.is_known() && self.known.isTensor()) {
      // A constant (a frozen buffer) updated in place: later readers see the result.
      const c10::IValue old = self.known;
      for (auto& [value, b] : env_)
        if (b.is_known() && b.known.isTensor() && b.known.is(old)) b = Binding::of_tensor(result);
      return;
    }
    if (self.kind != Binding::Kind::Tensor) return;
    const std::string name = node->kind().toQualString();
    if (is_metadata_inplace(name)) return replace_tensor(self.tensor, result);
    std::string why;
    if (!write_back(node, self.tensor, result, why)) {
      ++use_of(node).failed;
      census_.problems.push_back(message_at(node, why));
    }
  }

  // Makes `to` the new content of tensor `from`: see update_in_place.
  bool write_back(Node* node, int from, int to, std::string& why) {
    replace_tensor(from, to);
    retake_views_of(node, from, to, why);
    auto record = views_.find(from);
    if (record == views_.end()) return why.empty();
    const ViewRecord view = record->second;
    views_[to] = view;  // a second in-place update of the same view writes back again
    int new_base = -1;
    if (!scatter_into_base(node, view, to, new_base, why)) return false;
    return write_back(node, view.base, new_base, why);
  }

  // Views of `from` that are still read take their values again from `to`.
  void retake_views_of(Node* node, int from, int to, std::string& why) {
    std::vector<std::pair<int, ViewRecord>> children;
    for (const auto& [id, record] : views_)
      if (record.base == from) children.emplace_back(id, record);
    for (const auto& [id, record] : children) {
      if (!is_referenced(id)) continue;
      std::vector<ops::Operand> operands;
      for (const Value* in : record.op->inputs()) operands.push_back(to_operand(lookup(in)));
      operands[0] = ops::Operand::of_tensor(to);
      std::vector<ops::Operand> outputs;
      const ops::LowerFn* lowering = ops::Registry::get().find_lowering(record.op->kind().toQualString());
      if (!lowering || !run_lowering(const_cast<Node*>(record.op), *lowering, operands, outputs) ||
          !outputs[0].is_tensor()) {
        why = "a view of the tensor updated in place is read later and could not be taken again";
        return;
      }
      views_[outputs[0].tensor] = {to, record.op};
      replace_tensor(id, outputs[0].tensor);
      retake_views_of(node, id, outputs[0].tensor, why);
    }
  }

  // The base of a view with the view's region replaced by `content`, through the inverse
  // of the view op: a reshape back, the inverse permutation, or select/slice_scatter.
  bool scatter_into_base(Node* node, const ViewRecord& view, int content, int& new_base, std::string& why) {
    const std::string view_name = view.op->kind().toQualString();
    const ir::Value& base = graph_.value(view.base);
    auto known_int = [&](size_t i, int64_t fallback) -> int64_t {
      if (i >= view.op->inputs().size()) return fallback;
      const Binding& b = lookup(view.op->input(i));
      return b.is_known() && b.known.isInt() ? b.known.toInt() : fallback;
    };
    auto call = [&](const std::string& op, std::vector<ops::Operand> operands) {
      const ops::LowerFn* lowering = ops::Registry::get().find_lowering(op);
      if (!lowering) {
        why = "writing through a view made by " + view_name + " needs " + op +
              ", which aotc cannot lower yet (see aotc --list-ops)";
        return false;
      }
      ops::LowerContext ctx(graph_, op, std::move(operands), 1, source_location(node));
      try {
        (*lowering)(ctx);
      } catch (const CompileError& e) {
        why = std::string("writing through a view failed: ") + e.what();
        return false;
      }
      if (!ctx.outputs[0].is_tensor()) return why = "internal: " + op + " gave no tensor", false;
      new_base = ctx.outputs[0].tensor;
      return true;
    };
    const auto T = [](int id) { return ops::Operand::of_tensor(id); };
    const auto I = [](int64_t v) { return ops::Operand::of_int(v); };
    const int64_t rank = static_cast<int64_t>(base.shape.size());
    switch (view_kind(view_name)) {
      case ViewKind::Reshape:
        return call("aten::reshape", {T(content), ops::Operand::of_ints(base.shape)});
      case ViewKind::Transpose: {
        if (view_name == "aten::t") return call("aten::t", {T(content)});
        return call("aten::transpose", {T(content), I(known_int(1, 0)), I(known_int(2, 1))});
      }
      case ViewKind::Permute: {
        const Binding& dims = lookup(view.op->input(1));
        if (!dims.is_known() || !dims.known.isIntList()) break;
        std::vector<int64_t> perm = dims.known.toIntVector(), inverse(perm.size());
        for (size_t i = 0; i < perm.size(); ++i)
          inverse[static_cast<size_t>((perm[i] % rank + rank) % rank)] = int64_t(i);
        return call("aten::permute", {T(content), ops::Operand::of_ints(inverse)});
      }
      case ViewKind::Select:
      case ViewKind::Slice:
      case ViewKind::Narrow: {
        // The region [start, end) with step along dim, as Python's slicing clamps it.
        int64_t dim = known_int(1, 0);
        if (dim < 0) dim += rank;
        if (dim < 0 || dim >= rank) break;
        const int64_t size = base.shape[static_cast<size_t>(dim)];
        int64_t start = 0, end = size, step = 1;
        const ViewKind kind = view_kind(view_name);
        if (kind == ViewKind::Select) {
          start = known_int(2, 0);
          if (start < 0) start += size;
          end = start + 1;
        } else if (kind == ViewKind::Narrow) {
          start = known_int(2, 0);
          if (start < 0) start += size;
          end = start + known_int(3, 0);
        } else {
          const auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + size : v, int64_t{0}, size); };
          start = clamp(known_int(2, 0));
          end = std::max(start, clamp(known_int(3, size)));
          step = known_int(4, 1);
        }
        if (ops::Registry::get().find_lowering(kind == ViewKind::Select ? "aten::select_scatter"
                                                                        : "aten::slice_scatter")) {
          if (kind == ViewKind::Select)
            return call("aten::select_scatter", {T(view.base), T(content), I(dim), I(start)});
          return call("aten::slice_scatter", {T(view.base), T(content), I(dim), I(start), I(end), I(step)});
        }
        // Without the scatter ops: the parts of the base before and after the region,
        // concatenated around the new content (contiguous regions only).
        if (step != 1) {
          why = "writing through a strided slice needs aten::slice_scatter, which aotc cannot lower yet";
          return false;
        }
        std::vector<int> parts;
        int part = -1;
        if (start > 0) {
          if (!call("aten::slice", {T(view.base), I(dim), I(0), I(start), I(1)})) return false;
          parts.push_back(new_base);
        }
        part = content;
        if (kind == ViewKind::Select) {
          if (!call("aten::unsqueeze", {T(content), I(dim)})) return false;
          part = new_base;
        }
        parts.push_back(part);
        if (end < size) {
          if (!call("aten::slice", {T(view.base), I(dim), I(end), I(size), I(1)})) return false;
          parts.push_back(new_base);
        }
        if (parts.size() == 1) return call("aten::reshape", {T(parts[0]), ops::Operand::of_ints(base.shape)});
        return call("aten::cat", {ops::Operand::of_tensors(parts), I(dim)});
      }
      case ViewKind::Unsupported:
      case ViewKind::NotView:
        break;
    }
    why = "in-place update through a view made by " + view_name + " is not supported";
    return false;
  }

  void record_unsupported(Node* node) {
    OpUse& use = use_of(node);
    if (use.schema.empty()) use.schema = node->kind().toQualString();
    ++use.unsupported;
    const ir::SourceLocation loc = source_location(node);
    for (auto& [where, count] : use.unsupported_at)
      if (where.str() == loc.str()) return ++count, void();
    use.unsupported_at.emplace_back(loc, 1);
  }

  void flatten_output(const Binding& b, const std::string& name,
                      std::vector<std::pair<std::string, Binding>>& out) {
    switch (b.kind) {
      case Binding::Kind::Tensor:
        out.emplace_back(name, b);
        return;
      case Binding::Kind::Seq:
        for (const Binding& item : b.items()) flatten_output(item, "", out);
        return;
      case Binding::Kind::Dict:
        for (size_t i = 0; i < b.items().size(); ++i)
          flatten_output(b.items()[i], b.keys()[i].isString() ? b.keys()[i].toStringRef() : "", out);
        return;
      case Binding::Kind::Poison:
        throw CompileError("internal: poisoned output");
      case Binding::Kind::Known:
        break;
    }
    const c10::IValue& v = b.known;
    if (v.isTensor()) return out.emplace_back(name, b), void();
    // An optional output that is None for these shapes (torchvision's GoogLeNetOutputs
    // without aux logits) has nothing to compute: it is left out.
    if (v.isNone()) return;
    if (v.isTuple()) {
      for (const auto& e : v.toTupleRef().elements()) flatten_output(Binding::of_known(e), "", out);
      return;
    }
    if (v.isList()) {
      for (const auto& e : v.toListRef()) flatten_output(Binding::of_known(e), "", out);
      return;
    }
    if (v.isGenericDict()) {
      for (const auto& entry : v.toGenericDict())
        flatten_output(Binding::of_known(entry.value()),
                       entry.key().isString() ? entry.key().toStringRef() : "", out);
      return;
    }
    throw CompileError(std::string("the model returns a value of type ") + v.tagKind() +
                       "; aotc models return tensors, or tuples, lists and dicts of tensors");
  }
};

}  // namespace

void lower_graph(const std::shared_ptr<torch::jit::Graph>& graph, ir::Graph& ir_graph, bool verbose,
                 Census& census, const c10::IValue& self,
                 const std::vector<std::optional<c10::IValue>>& arguments, ConstantPool* pool) {
  // The model runs for inference: torch.is_grad_enabled() is False, as under torch.no_grad()
  // (nn.MultiheadAttention and TransformerEncoder take their fused paths only then).
  at::NoGradGuard no_grad;
  Interpreter(ir_graph, verbose, census, pool).run(graph, self, arguments);
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

int Census::unsupported_uses() const {
  int total = 0;
  for (const auto& [name, use] : ops) total += use.unsupported;
  return total;
}

std::string Census::error_report() const {
  std::ostringstream os;
  int kinds = 0;
  for (const auto& [name, use] : ops) kinds += use.unsupported > 0;
  const int uses = unsupported_uses();
  if (uses == 0 && problems.size() == 1) return problems.front();
  if (uses > 0) {
    os << "the model uses " << kinds << " unsupported op(s), " << uses << " use(s) in all:";
    for (const auto& [name, use] : ops) {
      if (use.unsupported == 0) continue;
      os << "\n  " << name << "  x" << use.unsupported << "\n    schema: " << use.schema;
      for (const auto& [where, count] : use.unsupported_at) {
        os << "\n    " << where.str();
        if (count > 1) os << " (x" << count << ")";
        if (!where.text.empty()) os << ":  " << where.text;
      }
    }
  }
  if (!problems.empty()) {
    if (uses > 0) os << "\n";
    os << (uses > 0 ? "" : "the model cannot be compiled: ") << problems.size()
       << (uses > 0 ? " other problem(s):" : " problems:");
    for (const std::string& problem : problems) {
      std::string indented = problem;
      for (size_t pos = 0; (pos = indented.find('\n', pos)) != std::string::npos; pos += 3)
        indented.replace(pos, 1, "\n  ");
      os << "\n  " << indented;
    }
  }
  return os.str();
}

std::vector<std::string> schemas_of(const std::string& op_name) {
  std::vector<std::string> schemas;
  for (const auto& op : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(op_name))) {
    std::ostringstream os;
    os << op->schema();
    schemas.push_back(os.str());
  }
  return schemas;
}

}  // namespace aotc::frontend
