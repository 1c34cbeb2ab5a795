// interpreter_inplace.cpp - in-place ops (aten::*_, copy_, fill_) in a functional IR: readers
// rebound to the result, views written back into their bases and views taken again.
#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "../ir/error.h"
#include "interpreter_internal.h"

namespace aotc::frontend {

namespace {

// Ops that change only the shape metadata of their first argument in place: no write
// goes to the storage that a view shares with its base.
bool is_metadata_inplace(const std::string& name) {
  static const std::set<std::string> ops = {"aten::squeeze_",   "aten::unsqueeze_", "aten::transpose_",
                                            "aten::t_",         "aten::swapaxes_",  "aten::swapdims_",
                                            "aten::as_strided_"};
  return ops.count(name) != 0;
}

}  // namespace

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

// x.copy_(src) and x.fill_(value) without a lowering of their own: the new value of x
// is src (same shape and dtype) or a constant, and update_in_place does the rest.
void Interpreter::lower_copy_or_fill(Node* node) {
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

// Every binding (in containers too) that holds tensor `from` holds `to` from now on.
void Interpreter::replace_tensor(int from, int to) {
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

bool Interpreter::is_referenced(int tensor) {
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
void Interpreter::update_in_place(Node* node, const Binding& self, int result) {
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
bool Interpreter::write_back(Node* node, int from, int to, std::string& why) {
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
void Interpreter::retake_views_of(Node* node, int from, int to, std::string& why) {
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
bool Interpreter::scatter_into_base(Node* node, const ViewRecord& view, int content, int& new_base,
                                    std::string& why) {
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

}  // namespace aotc::frontend
