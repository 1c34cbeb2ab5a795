// How view ops lower (compiler/ops/strided_view.h): contiguous views are
// aliases, other views are one copy, and views of views compose into a single copy that
// reads the original tensor, so the intermediate copies become dead.
#include <doctest/doctest.h>

#include <climits>

#include "../../compiler/ops/op_registry.h"
#include "../../compiler/passes/passes.h"

using namespace aotc;

namespace {

// Runs the registered lowering of `op` on the operands; returns output `i`'s operand.
ops::Operand lower(ir::Graph& g, const std::string& op, std::vector<ops::Operand> args, size_t i = 0) {
  const ops::LowerFn* fn = ops::Registry::get().find_lowering(op);
  REQUIRE(fn != nullptr);
  ops::LowerContext ctx(g, op, std::move(args), 1, {});
  (*fn)(ctx);
  return ctx.outputs.at(i);
}
int lower_tensor(ir::Graph& g, const std::string& op, std::vector<ops::Operand> args) {
  const ops::Operand o = lower(g, op, std::move(args));
  REQUIRE(o.is_tensor());
  return o.tensor;
}
ops::Operand T(int id) { return ops::Operand::of_tensor(id); }
ops::Operand I(int64_t v) { return ops::Operand::of_int(v); }

}  // namespace

TEST_CASE("views: a view of a view of a view is one copy of the original") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Int64, {4, 6, 5}, "x");
  const int t = lower_tensor(g, "aten::transpose", {T(x), I(0), I(2)});                  // [5, 6, 4]
  const int s = lower_tensor(g, "aten::slice", {T(t), I(1), I(1), I(INT64_MAX), I(2)});  // [5, 3, 4]
  const int v = lower_tensor(g, "aten::select", {T(s), I(-1), I(-3)});                   // [5, 3]
  CHECK(g.value(v).shape == ir::Shape{5, 3});
  CHECK(g.value(v).dtype == ir::DType::Int64);
  g.outputs.push_back({v, "y"});
  passes::eliminate_dead_ops(g);
  REQUIRE(g.ops.size() == 1);
  const ir::Op& copy = g.ops[0];
  CHECK(copy.kind == ir::kind::copy);
  CHECK(copy.inputs == std::vector<int>{x});
  // y[i, j] = x[1, 1 + 2 j, i]: strides (1, 10) over x's elements from offset 30 + 5.
  CHECK(copy.ints("src_strides") == std::vector<int64_t>{1, 10});
  CHECK(copy.i("src_offset") == 35);
  CHECK(copy.i("elem_size") == 8);
  CHECK(g.view_root(v) == x);  // the frontend's in-place check sees the view
}

TEST_CASE("views: contiguous views are aliases, no op") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {4, 6, 5}, "x");
  const int a = lower_tensor(g, "aten::narrow", {T(x), I(0), I(-3), I(2)});  // rows 1, 2
  const int tt =
      lower_tensor(g, "aten::t",
                   {T(lower_tensor(g, "aten::t", {T(lower_tensor(g, "aten::select", {T(x), I(0), I(3)}))}))});
  const int e =
      lower_tensor(g, "aten::select", {T(lower_tensor(g, "aten::unsqueeze", {T(x), I(1)})), I(1), I(0)});
  for (int v : {a, tt, e}) g.outputs.push_back({v, "y"});
  passes::eliminate_dead_ops(g);  // x.select(0, 3).t() was a copy; .t() again reads x directly
  CHECK(g.ops.empty());
  CHECK(g.value(a).storage == ir::Storage::Alias);
  CHECK(g.value(a).alias_byte_offset == 30 * 4);
  CHECK(g.storage_root(tt) == x);
  CHECK(g.value(tt).shape == ir::Shape{6, 5});
  int64_t offset = 0;
  for (int v = tt; g.value(v).storage == ir::Storage::Alias; v = g.value(v).alias_of)
    offset += g.value(v).alias_byte_offset;
  CHECK(offset == 90 * 4);
  CHECK(g.storage_root(e) == x);
}

TEST_CASE("views: cat of slices and transposes reads the original tensors") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Float32, {3, 5, 4}, "x");
  const int a = lower_tensor(g, "aten::slice", {T(x), I(1), I(1), I(3), I(1)});  // [3, 2, 4]
  const int t =
      lower_tensor(g, "aten::transpose",
                   {T(lower_tensor(g, "aten::flip", {T(x), ops::Operand::of_ints({1})})), I(1), I(2)});
  const int b =
      lower_tensor(g, "aten::transpose",
                   {T(lower_tensor(g, "aten::slice", {T(t), I(2), I(0), I(INT64_MAX), I(2)})), I(1), I(2)});
  const int c = lower_tensor(g, "aten::cat", {ops::Operand::of_tensors({a, b}), I(-2)});
  CHECK(g.value(c).shape == ir::Shape{3, 5, 4});
  g.outputs.push_back({c, "y"});
  passes::eliminate_dead_ops(g);
  REQUIRE(g.ops.size() == 1);
  CHECK(g.ops[0].kind == ir::kind::assemble);
  CHECK(g.ops[0].inputs == std::vector<int>{x});
  CHECK(g.ops[0].ints("piece_src_strides") == std::vector<int64_t>{20, 4, 1, 20, -8, 1});
}

TEST_CASE("views: split, chunk and unbind give lists of views") {
  ir::Graph g;
  const int x = g.add_input(ir::DType::Bool, {4, 7}, "x");
  const ops::Operand parts = lower(g, "aten::chunk", {T(x), I(3), I(1)});
  REQUIRE(parts.kind == ops::Operand::Kind::TensorList);
  REQUIRE(parts.tensors.size() == 3);
  CHECK(g.value(parts.tensors[0]).shape == ir::Shape{4, 3});
  CHECK(g.value(parts.tensors[2]).shape == ir::Shape{4, 1});
  const ops::Operand rows = lower(g, "aten::unbind", {T(x), I(0)});
  REQUIRE(rows.tensors.size() == 4);
  CHECK(g.value(rows.tensors[3]).storage == ir::Storage::Alias);  // rows are contiguous
  CHECK(g.value(rows.tensors[3]).alias_byte_offset == 21);
  CHECK_THROWS_AS(lower(g, "aten::split", {T(x), ops::Operand::of_ints({2, 2}), I(1)}), CompileError);
}
