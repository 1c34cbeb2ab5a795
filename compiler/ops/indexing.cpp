// index_select, x[...] with index tensors (aten::index), masked_select -> IR "index_gather"
// (runtime index_gather: one memcpy per selected block). A boolean mask selects a number of
// elements that depends on its values: a constant mask becomes constant indices, a mask
// computed at run time is a compile error (aotc compiles static shapes).
#include "indexing.h"

#include <cstring>
#include <functional>

namespace aotc::ops {
namespace {

std::string emit_index_gather(const EmitContext& e, const ir::Op& op) {
  return kernel_call(
      op, index_gather_params_code(e, op),
      "aotc::rt::index_gather(pool, p, " + e.in(op.inputs[0]) + ", idx, " + e.out(op.outputs[0]) + ");");
}

[[noreturn]] void fail_dynamic_mask(const LowerContext& ctx) {
  ctx.fail(
      "indexing with a boolean mask computed at run time gives a result whose shape depends on the mask's "
      "values; aotc compiles static shapes (use torch.where, or multiply by the mask, instead)");
}

// index_select(self, dim, index): index is 1-d (or 0-d) int64/int32.
void lower_index_select(LowerContext& ctx) {
  const ir::Value& x = ctx.value(0);
  const ir::Value& index = ctx.value(2);
  check_dim_index(ctx, index);
  if (x.shape.empty()) {  // a 0-d input: the index must be 0 (or [0])
    return ctx.set_tensor_output(
        0, add_index_gather(ctx, ctx.graph.add_alias(ctx.tensor(0), {1}), 0, {ctx.tensor(2)}));
  }
  const int64_t dim = normalize_dim(ctx, ctx.int_arg(1), static_cast<int64_t>(x.shape.size()));
  int idx = ctx.tensor(2);
  if (index.shape.empty()) idx = ctx.graph.add_alias(idx, {1});  // a 0-d index keeps the dim (size 1)
  ctx.set_tensor_output(0, add_index_gather(ctx, ctx.tensor(0), dim, {idx}));
}

// aten::index(self, Tensor?[] indices): x[idx], x[:, idx], x[i, j], x[mask] (constant mask).
void lower_index(LowerContext& ctx) {
  const Operand& list = ctx.arg(1);
  if (list.kind != Operand::Kind::TensorList)
    ctx.fail("indices must be a list of tensors, got " + list.describe());
  int x = ctx.tensor(0);
  const ir::Shape x_shape = ctx.value(0).shape;
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  const std::vector<int> per_dim = index_tensors_per_dim(ctx, list, x_shape, [&] { fail_dynamic_mask(ctx); });
  std::vector<int64_t> indexed;
  for (int64_t d = 0; d < rank; ++d)
    if (per_dim[static_cast<size_t>(d)] >= 0) indexed.push_back(d);
  if (indexed.empty()) return ctx.set_tensor_output(0, ctx.graph.add_alias(x, x_shape));
  // The index tensors broadcast to one shape.
  ir::Shape bshape;
  for (int64_t d : indexed)
    bshape = broadcast_shapes(ctx, bshape, ctx.graph.value(per_dim[static_cast<size_t>(d)]).shape);
  std::vector<int> indices;
  for (int64_t d : indexed) {
    const int id = per_dim[static_cast<size_t>(d)];
    indices.push_back(ctx.graph.value(id).shape == bshape
                          ? id
                          : materialize(ctx, expand_view(view_of(ctx.graph, id), bshape), -1));
  }
  // Indexed dims that are not adjacent put the index shape first (torch's rule): move them
  // to the front, in order.
  const bool adjacent = indexed.back() - indexed.front() + 1 == static_cast<int64_t>(indexed.size());
  int64_t first = indexed.front();
  if (!adjacent) {
    std::vector<int64_t> order = indexed;
    for (int64_t d = 0; d < rank; ++d)
      if (per_dim[static_cast<size_t>(d)] < 0) order.push_back(d);
    x = materialize(ctx, permute_view(view_of(ctx.graph, x), order), -1);
    first = 0;
  }
  ctx.set_tensor_output(0, add_index_gather(ctx, x, first, indices));
}

// masked_select(self, mask): the elements where the (broadcast) mask is true, flattened.
void lower_masked_select(LowerContext& ctx) {
  const ir::Value& mask_value = ctx.value(1);
  if (mask_value.dtype != ir::DType::Bool) ctx.fail("the mask must be a bool tensor");
  auto mask = constant_int_values(ctx.graph, ctx.tensor(1));
  if (!mask)
    ctx.fail(
        "masked_select with a mask computed at run time gives a result whose shape depends on the mask's "
        "values; aotc compiles static shapes (use torch.where, or multiply by the mask, instead)");
  const ir::Shape shape = broadcast_shapes(ctx, ctx.value(0).shape, mask_value.shape);
  // The mask broadcast to `shape`, row-major.
  const std::vector<int64_t> mstrides = broadcast_strides(mask_value.shape, shape),
                             strides = dense_strides(shape);
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < ir::numel(shape); ++i) {
    int64_t rem = i, m = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      m += rem / strides[d] * mstrides[d];
      rem %= strides[d];
    }
    if ((*mask)[static_cast<size_t>(m)]) positions.push_back(i);
  }
  int x = ctx.tensor(0);
  if (ctx.value(0).shape != shape) x = materialize(ctx, expand_view(view_of(ctx.graph, x), shape), -1);
  x = ctx.graph.add_alias(x, {ir::numel(shape)});
  ctx.set_tensor_output(0, index_select_constant(ctx, x, 0, positions));
}

// take(self, index): self flattened, indexed by a tensor of any shape.
void lower_take(LowerContext& ctx) {
  const ir::Value& index = ctx.value(1);
  check_index_dtype(ctx, index.dtype);
  const int64_t n = ir::numel(ctx.value(0).shape);
  if (n == 0 && ir::numel(index.shape) > 0) ctx.fail("cannot take from an empty tensor");
  ctx.set_tensor_output(0,
                        add_index_gather(ctx, ctx.graph.add_alias(ctx.tensor(0), {n}), 0, {ctx.tensor(1)}));
}

}  // namespace

// The positions (row-major, in `shape`) where a constant bool mask is true, one index list
// per dim of the mask.
std::vector<std::vector<int64_t>> mask_positions(const ir::Shape& shape, const std::vector<int64_t>& mask) {
  std::vector<std::vector<int64_t>> per_dim(shape.size());
  const std::vector<int64_t> strides = dense_strides(shape);
  for (size_t i = 0; i < mask.size(); ++i) {
    if (!mask[i]) continue;
    int64_t rem = static_cast<int64_t>(i);
    for (size_t d = 0; d < shape.size(); ++d) {
      per_dim[d].push_back(rem / strides[d]);
      rem %= strides[d];
    }
  }
  return per_dim;
}

int int64_constant(ir::Graph& graph, const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * 8);
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return graph.add_constant(ir::DType::Int64, {static_cast<int64_t>(values.size())}, std::move(bytes));
}

bool is_index_dtype(ir::DType t) { return t == ir::DType::Int64 || t == ir::DType::Int32; }

void check_index_dtype(const LowerContext& ctx, ir::DType t) {
  if (!is_index_dtype(t)) ctx.fail(std::string("the index must be int64 or int32, got ") + ir::dtype_name(t));
}

void check_dim_index(const LowerContext& ctx, const ir::Value& index) {
  check_index_dtype(ctx, index.dtype);
  if (index.shape.size() > 1)
    ctx.fail("the index must be 0-d or 1-d, got shape " + ir::shape_str(index.shape));
}

std::vector<int> index_tensors_per_dim(LowerContext& ctx, const Operand& list, const ir::Shape& x_shape,
                                       const std::function<void()>& runtime_mask) {
  std::vector<int> per_dim;
  for (int id : list.tensors) {
    if (id < 0) {
      per_dim.push_back(-1);
      continue;
    }
    const ir::Value& v = ctx.graph.value(id);
    if (v.dtype == ir::DType::Bool) {
      const auto mask = constant_int_values(ctx.graph, id);
      if (!mask) {
        runtime_mask();
        ctx.fail("a boolean mask computed at run time is not supported here");
      }
      if (v.shape.empty()) ctx.fail("a 0-d boolean index (x[True]) is not supported");
      const size_t at = per_dim.size();
      for (size_t d = 0; d < v.shape.size(); ++d)
        if (at + d >= x_shape.size() || x_shape[at + d] != v.shape[d])
          ctx.fail("the mask's shape " + ir::shape_str(v.shape) +
                   " does not match the indexed tensor's shape " + ir::shape_str(x_shape) + " at dim " +
                   std::to_string(at + d));
      for (const auto& positions : mask_positions(v.shape, *mask))
        per_dim.push_back(int64_constant(ctx.graph, positions));
      continue;
    }
    if (!is_index_dtype(v.dtype))
      ctx.fail(std::string("tensors used as indices must be int64, int32 or bool, got ") +
               ir::dtype_name(v.dtype));
    per_dim.push_back(id);
  }
  if (per_dim.size() > x_shape.size())
    ctx.fail("too many indices (" + std::to_string(per_dim.size()) + ") for a tensor of rank " +
             std::to_string(x_shape.size()));
  per_dim.resize(x_shape.size(), -1);
  return per_dim;
}

std::string index_gather_params_code(const EmitContext& e, const ir::Op& op) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  const auto& sizes = op.ints("sizes");
  std::vector<int64_t> index_elem;
  std::string list;
  for (size_t k = 1; k < op.inputs.size(); ++k) {
    index_elem.push_back(ir::dtype_size(e.graph.value(op.inputs[k]).dtype));
    list += (k > 1 ? ", " : "") + e.in(op.inputs[k]);
  }
  ParamsCode p("aotc::rt::IndexGatherParams");
  p.set("outer", op.i("outer"))
      .set("count", op.i("count"))
      .set("inner", op.i("inner"))
      .set("elem_size", ir::dtype_size(y.dtype))
      .set("num_indices", static_cast<int64_t>(sizes.size()))
      .set_array("sizes", sizes)
      .set_array("index_elem_size", index_elem);
  return p.str() + " const void* const idx[] = {" + list + "};";
}

std::optional<std::vector<int64_t>> constant_int_values(const ir::Graph& graph, int id) {
  if (!graph.is_constant(id)) return std::nullopt;
  const ir::Value& v = graph.value(id);
  const int64_t offset = graph.root_byte_offset(id);
  const ir::Constant& c = graph.constant_of(id);
  const int64_t elem = ir::dtype_size(v.dtype), n = ir::numel(v.shape);
  if (offset + n * elem > static_cast<int64_t>(c.bytes.size())) return std::nullopt;
  std::vector<int64_t> out(static_cast<size_t>(n));
  const uint8_t* p = c.bytes.data() + offset;
  for (int64_t i = 0; i < n; ++i) {
    switch (v.dtype) {
      case ir::DType::Int64:
        std::memcpy(&out[static_cast<size_t>(i)], p + i * 8, 8);
        break;
      case ir::DType::Int32: {
        int32_t x;
        std::memcpy(&x, p + i * 4, 4);
        out[static_cast<size_t>(i)] = x;
        break;
      }
      case ir::DType::Bool:
        out[static_cast<size_t>(i)] = p[i] != 0;
        break;
      default:
        return std::nullopt;
    }
  }
  return out;
}

int add_index_gather(LowerContext& ctx, int x, int64_t first, const std::vector<int>& indices) {
  const ir::Value& xv = ctx.graph.value(x);
  const ir::Shape& index_shape = ctx.graph.value(indices.at(0)).shape;
  const size_t f = static_cast<size_t>(first), k = indices.size();
  if (indices.size() > 8) ctx.fail("at most 8 index tensors are supported");
  ir::Shape y(xv.shape.begin(), xv.shape.begin() + static_cast<std::ptrdiff_t>(f));
  y.insert(y.end(), index_shape.begin(), index_shape.end());
  y.insert(y.end(), xv.shape.begin() + static_cast<std::ptrdiff_t>(f + k), xv.shape.end());
  std::vector<int64_t> sizes(xv.shape.begin() + static_cast<std::ptrdiff_t>(f),
                             xv.shape.begin() + static_cast<std::ptrdiff_t>(f + k));
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < f; ++d) outer *= xv.shape[d];
  for (size_t d = f + k; d < xv.shape.size(); ++d) inner *= xv.shape[d];
  const int64_t count = ir::numel(index_shape);
  for (int64_t s : sizes)
    if (s == 0 && count > 0) ctx.fail("cannot index into a dimension of size 0");
  std::vector<int> inputs = {x};
  inputs.insert(inputs.end(), indices.begin(), indices.end());
  const int out = ctx.new_value(xv.dtype, y);
  ir::Op& op = ctx.add_op(ir::kind::index_gather, inputs, {out});
  op.attrs = {{"outer", outer}, {"count", count}, {"inner", inner}, {"sizes", sizes}};
  return out;
}

int index_select_constant(LowerContext& ctx, int x, int64_t dim, const std::vector<int64_t>& indices) {
  return add_index_gather(ctx, x, dim, {int64_constant(ctx.graph, indices)});
}

void register_indexing(Registry& r) {
  r.add_lowering("aten::index_select", lower_index_select);
  r.add_lowering("aten::index", lower_index);
  r.add_lowering("aten::masked_select", lower_masked_select);
  r.add_lowering("aten::take", lower_take);
  r.add_ir_op(ir::kind::index_gather, emit_index_gather);
}

}  // namespace aotc::ops
