// interpreter.cpp - the walk over a TorchScript graph: each node is folded (if, loop),
// answered (tensor metadata), evaluated by LibTorch or lowered to aotc IR.
#include "interpreter.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <functional>
#include <set>

#include "../ir/error.h"
#include "../ops/quantized.h"
#include "interpreter_internal.h"

namespace aotc::frontend {

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

void Interpreter::run(const std::shared_ptr<torch::jit::Graph>& g, const c10::IValue& self,
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
    const ir::Value& v = graph_.value(id);
    if (v.quant || v.dtype == ir::DType::UInt8 || v.dtype == ir::DType::Int8)
      throw CompileError(
          "model output " + std::to_string(index) +
          " is a quantized tensor; aotc's libraries return float32: dequantize it in the model "
          "(x.dequantize(), or a DeQuantStub before the return)");
    graph_.outputs.push_back({id, name.empty() ? "output" + std::to_string(index) : name});
    ++index;
  }
  if (graph_.outputs.empty()) throw CompileError("the model returns no tensors");
}

// "OP at FILE:LINE: WHAT" and the source line: the form of every message about a node.
std::string Interpreter::message_at(const Node* node, const std::string& what, const char* label) {
  ir::SourceLocation loc = source_location(node);
  std::string message =
      std::string(label ? label : node->kind().toQualString()) + " at " + loc.str() + ": " + what;
  if (!loc.text.empty()) message += "\n    " + loc.text;
  return message;
}

// Stops the whole compile: for what makes the rest of the model meaningless.
void Interpreter::fail_at(const Node* node, const std::string& what) {
  throw CompileError(message_at(node, what));
}

// Records a problem with one use and goes on, so that the user sees every problem at
// once; what depends on the node's results is poisoned and reports nothing more.
void Interpreter::problem_at(Node* node, const std::string& what, const char* label) {
  census_.problems.push_back(message_at(node, what, label));
  poison_outputs(node);
}

void Interpreter::interpret_block(Block* block) {
  for (Node* node : block->nodes()) interpret_node(node);
}

void Interpreter::interpret_node(Node* node) {
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
    const ops::Registry& registry = ops::Registry::get();
    if (poisoned_tensor && !kind.is_prim() && !registry.find_lowering(kind.toQualString()) &&
        !registry.find_quantized_lowering(kind.toQualString()) &&
        !is_quantized_elementwise(kind.toQualString()) && !is_tensor_query(node))
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
  if (any_tensor && evaluate_small_factory(node)) return;
  if (kind.is_prim()) {
    // prim ops have no lowerings: one that is not evaluated above depends on run-time values.
    return problem_at(node, "this depends on tensors computed at run time; aotc evaluates " +
                                std::string(kind.toQualString()) + " only on values known at compile time");
  }
  lower_node(node);
}

void Interpreter::dynamic_value_problem(Node* node) {
  problem_at(node,
             "this turns a tensor computed at run time into a Python value (bool(t), int(t), t.item(), "
             "...); aotc needs control flow and shapes that the input shapes and constants decide, "
             "not the input values");
}

void Interpreter::poison_outputs(Node* node) {
  for (const Value* out : node->outputs()) bind(out, Binding::poison());
}

void Interpreter::interpret_if(Node* node) {
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

void Interpreter::interpret_loop(Node* node) {
  const Binding& trips = lookup(node->input(0));
  const Binding& start = lookup(node->input(1));
  if (trips.kind == Binding::Kind::Poison || start.kind == Binding::Kind::Poison) return poison_outputs(node);
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

bool Interpreter::is_tensor_query(const Node* node) {
  static const std::set<std::string> queries = {"aten::size",          "aten::sym_size",
                                                "aten::dim",           "aten::numel",
                                                "aten::sym_numel",     "aten::len",
                                                "prim::dtype",         "prim::device",
                                                "prim::is_cuda",       "aten::is_floating_point",
                                                "aten::is_complex",    "prim::requires_grad",
                                                "aten::is_contiguous", "prim::layout",
                                                "aten::get_device",    "prim::is_quantized",
                                                "aten::q_scale",       "aten::q_zero_point",
                                                "aten::qscheme",       "prim::is_sparse",
                                                "prim::is_sparse_csr", "prim::is_mkldnn",
                                                "prim::is_meta",       "prim::is_xpu",
                                                "prim::is_mps",        "prim::is_nested",
                                                "prim::is_vulkan",     "prim::is_ipu",
                                                "prim::is_maia",       "prim::is_xla",
                                                "prim::is_hpu",        "aten::is_nonzero_shape",
                                                "aten::element_size",  "prim::data"};
  return queries.count(node->kind().toQualString()) != 0;
}

// Questions about a run-time tensor's metadata have compile-time answers.
bool Interpreter::interpret_tensor_query(Node* node) {
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
  if (name == "prim::is_quantized") return answer(v.quant.has_value());
  if (name == "aten::q_scale" || name == "aten::q_zero_point" || name == "aten::qscheme") {
    if (!v.quant) fail_at(node, "the tensor is not quantized");
    if (name == "aten::q_scale") return answer(v.quant->scale);
    if (name == "aten::q_zero_point") return answer(v.quant->zero_point);
    return answer(static_cast<int64_t>(c10::kPerTensorAffine));
  }
  return answer(false);  // is_cuda, requires_grad, is_sparse, ...
}

void Interpreter::evaluate_with_torch(Node* node, const std::vector<c10::IValue>* inputs) {
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

// x.new_zeros(size), torch.zeros_like(x), ...: only x's dtype and shape decide the result,
// and both are known here. A small result is made at compile time, so that what fills it
// folds there too (a Swin transformer's shifted-window mask: slices of x.new_zeros filled with
// counters, then compared, would otherwise run as dozens of tiny kernels per block). A large
// one stays a fill at run time: as a constant it would grow the library by its bytes.
// (new_empty / empty_like are left to run time: LibTorch would leave their bytes undefined.)
bool Interpreter::evaluate_small_factory(Node* node) {
  constexpr int64_t kSmallFactoryBytes = int64_t{64} << 10;
  if (!fold_small_factories_) return false;
  const std::string name = node->kind().toQualString();
  const bool like = name == "aten::zeros_like" || name == "aten::ones_like" || name == "aten::full_like";
  if (!like && name != "aten::new_zeros" && name != "aten::new_ones" && name != "aten::new_full")
    return false;
  const Binding& self = lookup(node->input(0));
  if (self.kind != Binding::Kind::Tensor) return false;
  const ir::Value& v = graph_.value(self.tensor);
  if (v.quant) return false;
  // x's stand-in: its shape matters to the *_like ops, only its dtype to the new_* ones.
  std::vector<c10::IValue> known{
      at::empty(like ? v.shape : ir::Shape{0}, at::TensorOptions().dtype(scalar_type_of(v.dtype)))};
  for (size_t i = 1; i < node->inputs().size(); ++i) {
    const Binding& b = lookup(node->input(i));
    if (!b.is_known()) return false;
    known.push_back(b.known);
  }
  // The result's size before making it: *_like ops have x's, new_* ops their size argument.
  int64_t elements = 1;
  if (like) {
    elements = ir::numel(v.shape);
  } else {
    if (!known[1].isIntList()) return false;
    for (int64_t d : known[1].toIntList()) {
      if (d < 0 || (d > 0 && elements > kSmallFactoryBytes / d)) return false;
      elements *= d;
    }
  }
  if (elements * 8 > kSmallFactoryBytes) return false;  // 8: the widest dtype a dtype argument can ask
  evaluate_with_torch(node, &known);
  return true;
}

// Runs the lowering of node with the given operands; returns false (and records the
// problem) when it refuses.
bool Interpreter::run_lowering(Node* node, const ops::LowerFn& lowering, std::vector<ops::Operand> operands,
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
void Interpreter::continue_past(Node* node) {
  if (!node->maybeOperator()) return poison_outputs(node);
  // Meta tensors first (no memory, no work); ops without a meta kernel run on zeros.
  for (const bool meta : {true, false}) {
    if (auto results = run_on_placeholders(node, meta)) {
      auto placeholder = [&](const at::Tensor& t) -> Binding {
        if (!t.defined()) return Binding::of_known(t);  // e.g. attention weights not asked for
        if (t.is_quantized() && t.scalar_type() == at::kQUInt8 && t.qscheme() == at::kPerTensorAffine) {
          const int id = graph_.add_value(ir::DType::UInt8, t.sizes().vec());
          graph_.value(id).quant = ir::QuantParams{t.q_scale(), t.q_zero_point(), false};
          return Binding::of_tensor(id);
        }
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
std::optional<torch::jit::Stack> Interpreter::run_on_placeholders(Node* node, bool meta) {
  int64_t elements = 0;
  std::function<std::optional<c10::IValue>(const Binding&, c10::TypePtr)> stand_in =
      [&](const Binding& b, c10::TypePtr type) -> std::optional<c10::IValue> {
    if (b.kind == Binding::Kind::Tensor) {
      const ir::Value& v = graph_.value(b.tensor);
      const auto options = at::TensorOptions().dtype(scalar_type_of(v.dtype));
      elements += ir::numel(v.shape);
      if (v.quant) {  // torch has no quantized meta tensors, nor zeros
        if (meta) return std::nullopt;
        return at::_empty_affine_quantized(v.shape, options, v.quant->scale, v.quant->zero_point);
      }
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

// Whether a lowering's arguments include a quantized tensor.
bool Interpreter::takes_quantized(const std::vector<ops::Operand>& operands) const {
  for (const ops::Operand& o : operands) {
    if (o.kind == ops::Operand::Kind::Tensor && graph_.value(o.tensor).quant) return true;
    if (o.kind == ops::Operand::Kind::TensorList)
      for (int id : o.tensors)
        if (id >= 0 && graph_.value(id).quant) return true;
  }
  return false;
}

void Interpreter::lower_node(Node* node) {
  const std::string name = node->kind().toQualString();
  const ops::LowerFn* lowering = ops::Registry::get().find_lowering(name);
  const ops::LowerFn* quantized_lowering = ops::Registry::get().find_quantized_lowering(name);
  // x.add_(y), x += y (aten::add_) and x &= y (aten::__iand__), not aten::__and__.
  static const std::set<std::string> inplace_dunders = {"aten::__iand__", "aten::__ior__", "aten::__ixor__",
                                                        "aten::__ilshift__", "aten::__irshift__"};
  const bool inplace =
      !node->inputs().empty() && !node->outputs().empty() &&
      ((name.back() == '_' && name.rfind("aten::__", 0) != 0) || inplace_dunders.count(name));
  std::vector<ops::Operand> operands;
  for (const Value* in : node->inputs()) operands.push_back(to_operand(lookup(in)));
  const bool quantized = takes_quantized(operands);
  // Writing a changed view back into its base (write_back) runs float lowerings.
  if (inplace && quantized && is_view_or_viewed(lookup(node->input(0)))) {
    ++use_of(node).failed;
    return problem_at(
        node,
        "in-place updates of a quantized tensor that is a view of another, or has views, are not "
        "supported; use the op's out-of-place form");
  }
  if (!lowering && !quantized_lowering && inplace && (name == "aten::copy_" || name == "aten::fill_")) {
    if (quantized) {
      ++use_of(node).failed;
      return problem_at(node, "copy_ and fill_ of quantized tensors are not supported");
    }
    return lower_copy_or_fill(node);
  }
  if (!quantized_lowering && is_quantized_elementwise(name) && quantized)
    return lower_quantized_elementwise(node, operands);
  if (!lowering && !quantized_lowering) {
    record_unsupported(node);
    return continue_past(node);
  }
  // Quantized tensors go to the quantized lowerings only: the others would read their
  // integers as numbers.
  if (quantized) {
    if (!quantized_lowering) {
      ++use_of(node).failed;
      return problem_at(node,
                        "aotc has no quantized form of this op; dequantize its input first (x.dequantize(), "
                        "or a DeQuantStub) to run it in float32");
    }
    lowering = quantized_lowering;
  } else if (!lowering) {
    lowering = quantized_lowering;  // e.g. quantized::conv2d given a float tensor: it says so
  }
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

// Whether b is a run-time tensor that a view op made, or that one was made of.
bool Interpreter::is_view_or_viewed(const Binding& b) const {
  if (b.kind != Binding::Kind::Tensor) return false;
  if (views_.count(b.tensor)) return true;
  for (const auto& [view, record] : views_)
    if (record.base == b.tensor) return true;
  return false;
}

bool Interpreter::is_quantized_elementwise(const std::string& name) {
  return quantized_elementwise_ops().count(name) != 0;
}

// A quantized element-wise op as a table lookup: LibTorch runs the op itself on a tensor
// of all 256 integers with the input's scale and zero point, which gives every result and
// the output's scale and zero point exactly as torch computes them.
void Interpreter::lower_quantized_elementwise(Node* node, const std::vector<ops::Operand>& operands) {
  int input = -1;
  size_t input_index = 0;
  torch::jit::Stack stack;
  for (size_t i = 0; i < node->inputs().size(); ++i) {
    const Binding& b = lookup(node->input(i));
    const bool known_quantized = b.is_known() && b.known.isTensor() && b.known.toTensor().is_quantized();
    if (input < 0 && (known_quantized || (b.kind == Binding::Kind::Tensor && graph_.value(b.tensor).quant))) {
      input = known_quantized ? tensor_of(b, "input") : b.tensor;
      input_index = i;
      stack.emplace_back();
      if (!graph_.value(input).quant || graph_.value(input).dtype != ir::DType::UInt8) {
        ++use_of(node).failed;
        return problem_at(node, "aotc runs element-wise ops on quint8 tensors with a per-tensor scale only");
      }
    } else if (b.is_known()) {
      stack.push_back(b.known);
    } else {
      ++use_of(node).failed;
      return problem_at(node,
                        "aotc runs this op on a quantized tensor only with its other arguments known "
                        "at compile time");
    }
  }
  const ir::QuantParams q = *graph_.value(input).quant;
  const at::Tensor codes = at::arange(256, at::TensorOptions().dtype(at::kInt)).to(at::kByte);
  stack[input_index] = at::_make_per_tensor_quantized_tensor(codes, q.scale, q.zero_point);
  at::Tensor table;
  try {
    node->getOperation()(stack);
    if (stack.size() == 1 && stack[0].isTensor()) table = stack[0].toTensor();
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e))
      message = c10_error->what_without_backtrace();
    ++use_of(node).failed;
    return problem_at(
        node, "torch cannot run this op on a quantized tensor: " + message.substr(0, message.find('\n')));
  }
  if (!table.defined() || !table.is_quantized() || table.scalar_type() != at::kQUInt8 ||
      table.qscheme() != at::kPerTensorAffine || table.numel() != 256) {
    ++use_of(node).failed;
    return problem_at(node,
                      "internal: this op's quantized result is not a quint8 tensor of the input's shape");
  }
  const at::Tensor integers = table.int_repr().contiguous();
  std::vector<uint8_t> bytes(integers.data_ptr<uint8_t>(), integers.data_ptr<uint8_t>() + 256);
  const ir::QuantParams out_q{table.q_scale(), table.q_zero_point(), q.channels_last};
  const std::string name = node->kind().toQualString();
  std::vector<ops::Operand> outputs;
  const ops::LowerFn lowering = [&](ops::LowerContext& ctx) {
    ctx.set_tensor_output(0, ops::add_quantized_lookup(ctx, input, std::move(bytes), out_q));
  };
  if (!run_lowering(node, lowering, operands, outputs)) return continue_past(node);
  ++use_of(node).runtime;
  bind(node->output(0), from_operand(outputs[0]));
  const bool inplace = name.back() == '_';
  if (inplace) update_in_place(node, lookup(node->input(0)), outputs[0].tensor);
}

const std::set<std::string>& quantized_elementwise_ops() {
  static const std::set<std::string> ops = {"aten::hardswish",
                                            "aten::hardswish_",
                                            "quantized::hardswish",
                                            "aten::hardsigmoid",
                                            "aten::hardsigmoid_",
                                            "aten::sigmoid",
                                            "aten::sigmoid_",
                                            "quantized::sigmoid",
                                            "aten::tanh",
                                            "aten::tanh_",
                                            "aten::leaky_relu",
                                            "aten::leaky_relu_",
                                            "quantized::leaky_relu",
                                            "aten::elu",
                                            "aten::elu_",
                                            "quantized::elu",
                                            "aten::celu",
                                            "quantized::celu",
                                            "aten::gelu",
                                            "quantized::gelu",
                                            "aten::threshold",
                                            "quantized::threshold",
                                            "quantized::relu6",
                                            "aten::silu",
                                            "aten::mish"};
  return ops;
}

void Interpreter::flatten_output(const Binding& b, const std::string& name,
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

void lower_graph(const std::shared_ptr<torch::jit::Graph>& graph, ir::Graph& ir_graph, bool verbose,
                 Census& census, const c10::IValue& self,
                 const std::vector<std::optional<c10::IValue>>& arguments, ConstantPool* pool,
                 bool fold_small_factories) {
  // The model runs for inference: torch.is_grad_enabled() is False, as under torch.no_grad()
  // (nn.MultiheadAttention and TransformerEncoder take their fused paths only then).
  at::NoGradGuard no_grad;
  Interpreter(ir_graph, verbose, census, pool, fold_small_factories).run(graph, self, arguments);
}

}  // namespace aotc::frontend
