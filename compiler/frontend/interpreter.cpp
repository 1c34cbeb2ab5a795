#include "interpreter.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <cstring>
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

// What a TorchScript value is during interpretation.
struct Binding {
  enum class Kind { Known, Tensor, Seq, Dict, Poison };
  Kind kind = Kind::Poison;
  c10::IValue known;              // Known: a compile-time value, constant tensors included
  int tensor = -1;                // Tensor: an IR value computed at run time
  std::vector<Binding> items;     // Seq (list or tuple) and Dict values
  std::vector<c10::IValue> keys;  // Dict keys

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
  bool is_known() const { return kind == Kind::Known; }
};

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

struct UnsupportedUse {
  std::string schema;
  int count = 0;
  std::vector<std::string> locations;
};

class Interpreter {
 public:
  Interpreter(ir::Graph& graph, bool verbose) : graph_(graph), verbose_(verbose) {}

  void run(const std::shared_ptr<torch::jit::Graph>& g) {
    auto inputs = g->inputs();
    // inputs[0] is the frozen module's self, unused after freezing.
    for (size_t i = 1; i < inputs.size(); ++i) bind(inputs[i], Binding::of_tensor(graph_.inputs.at(i - 1)));
    interpret_block(g->block());
    report_unsupported();
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
  ir::Graph& graph_;
  bool verbose_;
  std::unordered_map<const Value*, Binding> env_;
  std::unordered_map<const c10::TensorImpl*, int> constant_ids_;
  std::map<std::string, UnsupportedUse> unsupported_;
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

  [[noreturn]] void fail_at(const Node* node, const std::string& what) {
    ir::SourceLocation loc = source_location(node);
    std::string message = std::string(node->kind().toQualString()) + " at " + loc.str() + ": " + what;
    if (!loc.text.empty()) message += "\n    " + loc.text;
    throw CompileError(message);
  }

  // An IR value for a tensor binding; constant tensors become IR constants once each.
  int tensor_of(const Binding& b, const std::string& role) {
    if (b.kind == Binding::Kind::Tensor) return b.tensor;
    if (b.kind == Binding::Kind::Known && b.known.isTensor()) return constant_tensor(b.known.toTensor());
    throw CompileError(role + " is not a tensor");
  }

  int constant_tensor(const at::Tensor& t) {
    auto it = constant_ids_.find(t.unsafeGetTensorImpl());
    if (it != constant_ids_.end()) return it->second;
    at::Tensor dense = t.detach().to(at::kCPU);
    // float64 constants (Python floats turned into tensors) compute in float32 here.
    if (dense.scalar_type() == at::kDouble) dense = dense.to(at::kFloat);
    auto dtype = dtype_of(dense.scalar_type());
    if (!dtype)
      throw CompileError(std::string("constant tensor of dtype ") + c10::toString(dense.scalar_type()) +
                         " is not supported (float32, float16, bfloat16, int64, int32 and bool are)");
    dense = dense.contiguous();
    std::vector<uint8_t> bytes(dense.nbytes());
    if (!bytes.empty()) std::memcpy(bytes.data(), dense.data_ptr(), bytes.size());
    int id = graph_.add_constant(*dtype, dense.sizes().vec(), std::move(bytes));
    constant_ids_[t.unsafeGetTensorImpl()] = id;
    return id;
  }

  ops::Operand to_operand(const Binding& b) {
    using K = ops::Operand::Kind;
    ops::Operand o;
    switch (b.kind) {
      case Binding::Kind::Tensor:
        return ops::Operand::of_tensor(b.tensor);
      case Binding::Kind::Seq: {
        // int[] built from values known at compile time that TorchScript could not fold
        // (sizes of run-time tensors in traced graphs: x.view(n, 3, c // 3, h, w)).
        bool all_ints = !b.items.empty();
        for (const Binding& item : b.items) all_ints &= item.is_known() && item.known.isInt();
        if (all_ints) {
          std::vector<int64_t> ints;
          for (const Binding& item : b.items) ints.push_back(item.known.toInt());
          return ops::Operand::of_ints(std::move(ints));
        }
        std::vector<int> ids;
        for (const Binding& item : b.items) {
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
        Binding b;
        b.kind = Binding::Kind::Seq;
        for (int id : o.tensors) b.items.push_back(Binding::of_tensor(id));
        return b;
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

  void interpret_node(Node* node) {
    const auto kind = node->kind();
    if (kind == prim::Constant) {
      auto iv = torch::jit::toIValue(node->output());
      bind(node->output(), iv ? Binding::of_known(*iv) : Binding::poison());
      return;
    }
    // An unsupported op upstream poisons what depends on it, without more messages.
    bool any_poison = false, all_known = true, any_tensor = false;
    for (const Value* in : node->inputs()) {
      const Binding& b = lookup(in);
      any_poison |= b.kind == Binding::Kind::Poison;
      all_known &= b.is_known();
      any_tensor |= b.kind == Binding::Kind::Tensor;
    }
    if (kind == prim::If) return interpret_if(node);
    if (kind == prim::Loop) return interpret_loop(node);
    if (any_poison) {
      // Still list a missing op downstream of another one: users get the full list at once.
      if (kind.is_aten() && !ops::Registry::get().find_lowering(kind.toQualString()))
        record_unsupported(node);
      return poison_outputs(node);
    }
    if (interpret_structural(node)) return;
    if (interpret_tensor_query(node)) return;
    if (kind == prim::RaiseException) {
      std::string message = lookup(node->input(0)).is_known() && lookup(node->input(0)).known.isString()
                                ? lookup(node->input(0)).known.toStringRef()
                                : std::string("an exception");
      fail_at(node, "the model raises for these input shapes: " + message);
    }
    if (kind == aten::warn || kind == prim::Print) return;
    if (any_tensor && (kind == aten::Bool || kind == aten::Int || kind == aten::Float || kind == aten::item ||
                       kind == aten::ScalarImplicit))
      fail_at(node,
              "this turns a tensor computed at run time into a Python value; aotc needs control "
              "flow and shapes decided at compile time (by input shapes and constants)");
    if (all_known && !any_tensor && node->maybeOperator() && !node->isNondeterministic() &&
        (kind.is_aten() || kind.is_prim()))
      return evaluate_with_torch(node);
    lower_node(node);
  }

  void poison_outputs(Node* node) {
    for (const Value* out : node->outputs()) bind(out, Binding::poison());
  }

  void interpret_if(Node* node) {
    const Binding& cond = lookup(node->input(0));
    if (cond.kind == Binding::Kind::Poison) return poison_outputs(node);
    if (!cond.is_known() || !cond.known.isBool())
      fail_at(node,
              "this `if` depends on tensor values computed at run time; aotc needs control "
              "flow that is decided by shapes and constants");
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
      fail_at(node,
              "this loop's trip count or condition depends on values computed at run time; "
              "aotc unrolls loops whose trip count is known at compile time");
    Block* body = node->blocks().at(0);
    std::vector<Binding> carried;
    for (size_t i = 2; i < node->inputs().size(); ++i) carried.push_back(lookup(node->input(i)));
    bool go_on = start.known.toBool();
    for (int64_t iter = 0; go_on && iter < trips.known.toInt(); ++iter) {
      if (++loop_iterations_ > 100000) fail_at(node, "loop unrolling exceeded 100000 iterations in total");
      bind(body->inputs()[0], Binding::of_known(iter));
      for (size_t i = 0; i < carried.size(); ++i) bind(body->inputs()[i + 1], carried[i]);
      interpret_block(body);
      const Binding& cond = lookup(body->outputs()[0]);
      if (cond.kind == Binding::Kind::Poison) return poison_outputs(node);
      if (!cond.is_known() || !cond.known.isBool())
        fail_at(node, "this loop's condition depends on tensor values computed at run time");
      go_on = cond.known.toBool();
      for (size_t i = 0; i < carried.size(); ++i) carried[i] = lookup(body->outputs()[i + 1]);
    }
    for (size_t i = 0; i < carried.size(); ++i) bind(node->output(i), carried[i]);
  }

  // Lists, tuples and dicts that hold run-time tensors are kept as sequences.
  bool interpret_structural(Node* node) {
    const auto kind = node->kind();
    auto seq_of_inputs = [&](Node* n) {
      Binding b;
      b.kind = Binding::Kind::Seq;
      for (const Value* in : n->inputs()) b.items.push_back(lookup(in));
      return b;
    };
    auto all_inputs_known = [&] {
      for (const Value* in : node->inputs())
        if (!lookup(in).is_known()) return false;
      return true;
    };
    if (kind == prim::ListConstruct || kind == prim::TupleConstruct) {
      if (all_inputs_known() && node->maybeOperator()) return evaluate_with_torch(node), true;
      bind(node->output(), seq_of_inputs(node));
      return true;
    }
    if (kind == prim::DictConstruct) {
      Binding b;
      b.kind = Binding::Kind::Dict;
      for (size_t i = 0; i + 1 < node->inputs().size(); i += 2) {
        const Binding& key = lookup(node->input(i));
        if (!key.is_known()) fail_at(node, "dict keys must be known at compile time");
        b.keys.push_back(key.known);
        b.items.push_back(lookup(node->input(i + 1)));
      }
      bind(node->output(), b);
      return true;
    }
    if (kind == prim::ListUnpack || kind == prim::TupleUnpack) {
      Binding seq = lookup(node->input(0));
      // A known list (n, c, h, w = x.shape): ListUnpack has no operator to evaluate it with.
      if (seq.is_known() && seq.known.isIntList()) {
        const std::vector<int64_t> items = seq.known.toIntVector();
        if (items.size() != node->outputs().size())
          fail_at(node, "cannot unpack " + std::to_string(items.size()) + " values into " +
                            std::to_string(node->outputs().size()));
        for (size_t i = 0; i < items.size(); ++i) bind(node->output(i), Binding::of_known(items[i]));
        return true;
      }
      if (seq.is_known()) return false;  // torch evaluates it
      if (seq.kind != Binding::Kind::Seq || seq.items.size() != node->outputs().size())
        fail_at(node, "cannot unpack this value into " + std::to_string(node->outputs().size()) + " values");
      for (size_t i = 0; i < node->outputs().size(); ++i) bind(node->output(i), seq.items[i]);
      return true;
    }
    if (kind == prim::TupleIndex || kind == aten::__getitem__) {
      Binding seq = lookup(node->input(0));
      if (seq.is_known()) return false;
      const Binding& index = lookup(node->input(1));
      if (seq.kind == Binding::Kind::Dict && index.is_known()) {
        for (size_t i = 0; i < seq.keys.size(); ++i)
          if (seq.keys[i] == index.known) return bind(node->output(), seq.items[i]), true;
        fail_at(node, "key not found in dict");
      }
      if (seq.kind != Binding::Kind::Seq || !index.is_known() || !index.known.isInt())
        fail_at(node, "indexing needs a list or tuple and an index known at compile time");
      int64_t i = index.known.toInt();
      const int64_t n = static_cast<int64_t>(seq.items.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n)
        fail_at(node, "index " + std::to_string(index.known.toInt()) + " out of range for length " +
                          std::to_string(n));
      bind(node->output(), seq.items[static_cast<size_t>(i)]);
      return true;
    }
    if (kind == aten::len && lookup(node->input(0)).kind == Binding::Kind::Seq) {
      bind(node->output(), Binding::of_known(static_cast<int64_t>(lookup(node->input(0)).items.size())));
      return true;
    }
    if (kind == prim::unchecked_cast || kind == aten::detach || kind == prim::TupleUnpack) {
      if (lookup(node->input(0)).is_known()) return false;
      bind(node->output(), lookup(node->input(0)));
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
      // A run-time tensor is never None.
      const bool a_none = a.is_known() && a.known.isNone();
      const bool b_none = b.is_known() && b.known.isNone();
      if (!a_none && !b_none) fail_at(node, "identity comparison of run-time values is not supported");
      const bool same = false;
      bind(node->output(), Binding::of_known(kind == aten::__is__ ? same : !same));
      return true;
    }
    if (kind == prim::GetAttr)
      fail_at(node,
              "module attribute access remains after freezing (attributes mutated in "
              "forward are not supported)");
    return false;
  }

  // Questions about a run-time tensor's metadata have compile-time answers.
  bool interpret_tensor_query(Node* node) {
    const auto kind = node->kind();
    if (node->inputs().empty()) return false;
    const Binding& b = lookup(node->input(0));
    if (b.kind != Binding::Kind::Tensor) return false;
    const ir::Value& v = graph_.value(b.tensor);
    const int64_t rank = static_cast<int64_t>(v.shape.size());
    if (kind == aten::size && node->inputs().size() == 1) {
      bind(node->output(), Binding::of_known(c10::IValue(v.shape)));
      return true;
    }
    if (kind == aten::size && node->inputs().size() == 2) {
      const Binding& d = lookup(node->input(1));
      if (!d.is_known() || !d.known.isInt()) fail_at(node, "size(dim) needs a dim known at compile time");
      int64_t dim = d.known.toInt();
      if (dim < 0) dim += rank;
      if (dim < 0 || dim >= rank)
        fail_at(node, "dim " + std::to_string(d.known.toInt()) + " out of range for a tensor of rank " +
                          std::to_string(rank));
      bind(node->output(), Binding::of_known(v.shape[static_cast<size_t>(dim)]));
      return true;
    }
    if (kind == aten::dim) return bind(node->output(), Binding::of_known(rank)), true;
    if (kind == c10::Symbol::fromQualString("aten::numel"))
      return bind(node->output(), Binding::of_known(ir::numel(v.shape))), true;
    if (kind == aten::len) {
      if (rank == 0) fail_at(node, "len() of a 0-d tensor");
      return bind(node->output(), Binding::of_known(v.shape[0])), true;
    }
    if (kind == prim::dtype)
      return bind(node->output(), Binding::of_known(static_cast<int64_t>(scalar_type_of(v.dtype)))), true;
    if (kind == prim::device) return bind(node->output(), Binding::of_known(c10::Device(c10::kCPU))), true;
    if (kind == prim::is_cuda) return bind(node->output(), Binding::of_known(false)), true;
    if (kind == aten::is_floating_point) {
      const bool fp =
          v.dtype == ir::DType::Float32 || v.dtype == ir::DType::Float16 || v.dtype == ir::DType::BFloat16;
      return bind(node->output(), Binding::of_known(fp)), true;
    }
    return false;
  }

  void evaluate_with_torch(Node* node) {
    torch::jit::Stack stack;
    for (const Value* in : node->inputs()) stack.push_back(lookup(in).known);
    try {
      node->getOperation()(stack);
    } catch (const c10::Error& e) {
      std::string message = e.what_without_backtrace();
      fail_at(node, "evaluating at compile time failed: " + message.substr(0, message.find('\n')));
    }
    if (stack.size() != node->outputs().size()) fail_at(node, "internal: unexpected number of results");
    for (size_t i = 0; i < node->outputs().size(); ++i) bind(node->output(i), Binding::of_known(stack[i]));
  }

  void lower_node(Node* node) {
    const std::string name = node->kind().toQualString();
    const ops::LowerFn* lowering = ops::Registry::get().find_lowering(name);
    if (!lowering) {
      record_unsupported(node);
      return poison_outputs(node);
    }
    std::vector<ops::Operand> operands;
    for (const Value* in : node->inputs()) operands.push_back(to_operand(lookup(in)));
    ops::LowerContext ctx(graph_, name, std::move(operands), node->outputs().size(), source_location(node));
    (*lowering)(ctx);
    for (size_t i = 0; i < node->outputs().size(); ++i) bind(node->output(i), from_operand(ctx.outputs[i]));
    // In-place ops (x.relu_(), x += y) left after RemoveTensorMutation: later readers of
    // the mutated input see the result.
    if (name.back() == '_' && !node->inputs().empty() &&
        lookup(node->input(0)).kind == Binding::Kind::Tensor && !node->outputs().empty()) {
      check_no_live_view(node);
      bind(node->input(0), lookup(node->output(0)));
    }
    if (verbose_) std::fprintf(stderr, "aotc: lowered %s at %s\n", name.c_str(), ctx.loc.str().c_str());
  }

  // Rebinding the result of an in-place op is only right when no other tensor that is
  // still read later shares the mutated memory in torch (a view such as x.view(...) or
  // x[:, 1:] would have to see the change too). view_root also follows the views that aotc
  // materialised as copies (slices with a step, transposes, ...).
  void check_no_live_view(Node* node) {
    const int root = graph_.view_root(lookup(node->input(0)).tensor);
    for (const auto& [value, b] : env_) {
      if (value == node->input(0) || b.kind != Binding::Kind::Tensor || graph_.view_root(b.tensor) != root)
        continue;
      for (const torch::jit::Use& use : value->uses())
        if (use.user != node && use.user->isAfter(node))
          fail_at(node, "in-place update of a tensor that has a view read later (%" + value->debugName() +
                            "); aotc does not support mutating views yet");
    }
  }

  void record_unsupported(Node* node) {
    const std::string name = node->kind().toQualString();
    UnsupportedUse& use = unsupported_[name];
    if (use.schema.empty()) {
      if (const c10::FunctionSchema* schema = node->maybeSchema()) {
        std::ostringstream os;
        os << *schema;
        use.schema = os.str();
      } else {
        use.schema = name;
      }
    }
    ++use.count;
    if (use.locations.size() < 20) use.locations.push_back(source_location(node).str());
  }

  void report_unsupported() {
    if (unsupported_.empty()) return;
    int total = 0;
    for (const auto& [name, use] : unsupported_) total += use.count;
    std::ostringstream os;
    os << "the model uses " << unsupported_.size() << " unsupported op(s), " << total << " use(s) in all:";
    for (const auto& [name, use] : unsupported_) {
      os << "\n  " << name << "  x" << use.count << "\n    schema: " << use.schema << "\n    at:";
      for (const std::string& where : use.locations) os << " " << where;
      if (use.count > static_cast<int>(use.locations.size())) os << " ...";
    }
    throw CompileError(os.str());
  }

  void flatten_output(const Binding& b, const std::string& name,
                      std::vector<std::pair<std::string, Binding>>& out) {
    switch (b.kind) {
      case Binding::Kind::Tensor:
        out.emplace_back(name, b);
        return;
      case Binding::Kind::Seq:
        for (const Binding& item : b.items) flatten_output(item, "", out);
        return;
      case Binding::Kind::Dict:
        for (size_t i = 0; i < b.items.size(); ++i)
          flatten_output(b.items[i], b.keys[i].isString() ? b.keys[i].toStringRef() : "", out);
        return;
      case Binding::Kind::Poison:
        throw CompileError("internal: poisoned output");
      case Binding::Kind::Known:
        break;
    }
    const c10::IValue& v = b.known;
    if (v.isTensor()) return out.emplace_back(name, b), void();
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

void lower_graph(const std::shared_ptr<torch::jit::Graph>& graph, ir::Graph& ir_graph, bool verbose) {
  Interpreter(ir_graph, verbose).run(graph);
}

}  // namespace aotc::frontend
