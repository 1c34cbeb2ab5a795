// interpreter_internal.h - what the interpreter's files share: the bindings of TorchScript
// values and the Interpreter class, whose member functions are grouped below by the file
// that defines them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../ops/op_registry.h"
#include "interpreter.h"

namespace aotc::frontend {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;
namespace prim = c10::prim;
namespace aten = c10::aten;

// The innermost location in the user's own code (may throw on corrupt debug records).
ir::SourceLocation user_source_location(const Node* node);

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

std::optional<ir::DType> dtype_of(c10::ScalarType t);
c10::ScalarType scalar_type_of(ir::DType t);
inline c10::Symbol sym(const char* qualified) { return c10::Symbol::fromQualString(qualified); }

// Ops whose result shares the storage of their first argument, and how to write a
// changed view back into its base (see write_back).
enum class ViewKind { NotView, Reshape, Permute, Transpose, Select, Slice, Narrow, Unsupported };
ViewKind view_kind(const std::string& name);

class Interpreter {
 public:
  Interpreter(ir::Graph& graph, bool verbose, Census& census, ConstantPool* pool, bool fold_small_factories)
      : graph_(graph),
        verbose_(verbose),
        census_(census),
        pool_(pool),
        fold_small_factories_(fold_small_factories) {}

  void run(const std::shared_ptr<torch::jit::Graph>& g, const c10::IValue& self,
           const std::vector<std::optional<c10::IValue>>& arguments);

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
  bool fold_small_factories_;                  // Options::fold_small_factories
  std::unordered_map<int, ViewRecord> views_;  // keyed by the view's IR value
  int loop_iterations_ = 0;
  // Packed quantized weights unpacked once each (keyed by the packed object).
  std::unordered_map<const void*, ops::Operand> quantized_weights_;
  std::vector<at::Tensor> kept_alive_;  // tensors that fill_ made constants of (see lower_copy_or_fill)

  void bind(const Value* v, Binding b) { env_[v] = std::move(b); }

  // interpreter.cpp: the walk over the graph and dispatch
  static std::string message_at(const Node* node, const std::string& what, const char* label = nullptr);
  [[noreturn]] void fail_at(const Node* node, const std::string& what);
  void problem_at(Node* node, const std::string& what, const char* label = nullptr);
  void interpret_block(Block* block);
  static bool is_tensor_type(const Value* v) { return v->type()->kind() == c10::TypeKind::TensorType; }
  void interpret_node(Node* node);
  void dynamic_value_problem(Node* node);
  void poison_outputs(Node* node);
  void interpret_if(Node* node);
  void interpret_loop(Node* node);
  static bool is_tensor_query(const Node* node);
  bool interpret_tensor_query(Node* node);
  void evaluate_with_torch(Node* node, const std::vector<c10::IValue>* inputs = nullptr);
  bool evaluate_small_factory(Node* node);
  bool run_lowering(Node* node, const ops::LowerFn& lowering, std::vector<ops::Operand> operands,
                    std::vector<ops::Operand>& outputs);
  void continue_past(Node* node);
  std::optional<torch::jit::Stack> run_on_placeholders(Node* node, bool meta);
  bool takes_quantized(const std::vector<ops::Operand>& operands) const;
  static bool is_quantized_elementwise(const std::string& name);
  bool is_view_or_viewed(const Binding& b) const;
  void lower_quantized_elementwise(Node* node, const std::vector<ops::Operand>& operands);
  void lower_node(Node* node);
  void flatten_output(const Binding& b, const std::string& name,
                      std::vector<std::pair<std::string, Binding>>& out);

  // interpreter_bindings.cpp: the environment, constants, operands
  const Binding& lookup(const Value* v);
  int tensor_of(const Binding& b, const std::string& role);
  int constant_tensor(const at::Tensor& t);
  ops::Operand quantized_weights(const c10::IValue& packed);
  static ir::ConstantBytes dense_bytes(const at::Tensor& t, at::ScalarType scalar_type);
  std::optional<c10::IValue> to_known(const Binding& b, c10::TypePtr type);
  ops::Operand to_operand(const Binding& b);
  Binding from_operand(const ops::Operand& o);

  // interpreter_containers.cpp: lists, tuples, dicts and prim ops
  bool mutates_a_box(const Node* node);
  const Binding& make_box(const Value* v);
  std::vector<Binding> items_of(const Binding& b);
  bool interpret_structural(Node* node, bool all_known, bool any_box);
  bool interpret_container_op(Node* node);

  // interpreter_inplace.cpp: in-place ops and writing views back
  void lower_copy_or_fill(Node* node);
  void replace_tensor(int from, int to);
  bool is_referenced(int tensor);
  void update_in_place(Node* node, const Binding& self, int result);
  bool write_back(Node* node, int from, int to, std::string& why);
  void retake_views_of(Node* node, int from, int to, std::string& why);
  bool scatter_into_base(Node* node, const ViewRecord& view, int content, int& new_base, std::string& why);

  // op_census.cpp: the op census
  OpUse& use_of(const Node* node);
  void count_compile_time(const Node* node) { ++use_of(node).compile_time; }
  void record_unsupported(Node* node);
};

}  // namespace aotc::frontend
