// interpreter_containers.cpp - lists, tuples and dicts that hold run-time tensors, and the
// prim ops (construct, unpack, attributes, identity) that the interpreter runs itself.
#include <algorithm>
#include <sstream>

#include "../ir/error.h"
#include "interpreter_internal.h"

namespace aotc::frontend {

namespace {

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

}  // namespace

bool Interpreter::mutates_a_box(const Node* node) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (!schema) return true;
  for (size_t i = 0; i < node->inputs().size() && i < schema->arguments().size(); ++i) {
    const auto* alias = schema->arguments()[i].alias_info();
    if (alias && alias->isWrite() && lookup(node->input(i)).is_box()) return true;
  }
  return false;
}

// A known list or dict as a container, so that run-time tensors can go into it. Every
// value bound to the same list object becomes the same container.
const Binding& Interpreter::make_box(const Value* v) {
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

// The items of a list argument, whether a container or a known list.
std::vector<Binding> Interpreter::items_of(const Binding& b) {
  if (b.kind == Binding::Kind::Seq) return b.items();
  std::vector<Binding> items;
  if (b.is_known() && b.known.isList())
    for (const c10::IValue& item : b.known.toListRef()) items.push_back(Binding::of_known(item));
  return items;
}

// Lists, tuples and dicts that hold run-time tensors are containers; their ops run here.
// Returns false for what torch evaluates or a lowering handles.
bool Interpreter::interpret_structural(Node* node, bool all_known, bool any_box) {
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
    if (!object_ptr->type()->hasAttribute(name)) fail_at(node, "the module has no attribute '" + name + "'");
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

bool Interpreter::interpret_container_op(Node* node) {
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
    if (kind == aten::len) return bind(node->output(), Binding::of_known(int64_t(self.items().size()))), true;
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

}  // namespace aotc::frontend
