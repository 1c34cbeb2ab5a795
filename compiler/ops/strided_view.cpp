#include "strided_view.h"

namespace aotc::ops {
namespace {

StridedView dense_view(const ir::Graph& graph, int id) {
  const ir::Value& v = graph.value(id);
  return {id, 0, v.shape, dense_strides(v.shape)};
}

// The op that materialised view value id (an IR "copy" with a src_offset, which only
// materialize() emits), or nullptr.
const ir::Op* view_copy_of(const ir::Graph& graph, int id) {
  for (size_t i = graph.ops.size(); i-- > 0;) {
    const ir::Op& op = graph.ops[i];
    if (op.outputs.size() == 1 && op.outputs[0] == id)
      return op.kind == ir::kind::copy && op.has("src_offset") ? &op : nullptr;
  }
  return nullptr;
}

}  // namespace

bool is_contiguous(const StridedView& v) {
  int64_t expect = 1;
  for (size_t d = v.sizes.size(); d-- > 0;) {
    if (v.sizes[d] == 1) continue;
    if (v.strides[d] != expect) return false;
    expect *= v.sizes[d];
  }
  return true;
}

StridedView view_of(const ir::Graph& graph, int id) {
  const ir::Value& v = graph.value(id);
  // contiguous() and detach() of a materialised view are same-shape aliases of it.
  if (v.storage == ir::Storage::Alias && v.alias_byte_offset == 0 && graph.value(v.alias_of).shape == v.shape)
    return view_of(graph, v.alias_of);
  if (v.view_of >= 0 && v.storage == ir::Storage::Arena) {
    if (const ir::Op* copy = view_copy_of(graph, id))
      return {copy->inputs[0], copy->i("src_offset"), copy->ints("dims"), copy->ints("src_strides")};
  }
  return dense_view(graph, id);
}

int materialize(LowerContext& ctx, const StridedView& view, int viewed) {
  ir::Graph& g = ctx.graph;
  const ir::DType dtype = g.value(view.base).dtype;
  const int64_t elem = ir::dtype_size(dtype);
  if (view.rank() > 8) ctx.fail("views of tensors with more than 8 dimensions are not supported");
  if (ir::numel(view.sizes) > 0 && is_contiguous(view))
    return g.add_alias(view.base, view.sizes, view.offset * elem);
  const int out = ctx.new_value(dtype, view.sizes);
  g.value(out).view_of = viewed;
  ir::Op& op = ctx.add_op(ir::kind::copy, {view.base}, {out});
  op.attrs = {{"dims", view.sizes},
              {"src_strides", view.strides},
              {"dst_strides", dense_strides(view.sizes)},
              {"elem_size", elem},
              {"src_offset", view.offset}};
  return out;
}

StridedView permute_view(const StridedView& v, const std::vector<int64_t>& order) {
  StridedView r = v;
  for (size_t i = 0; i < order.size(); ++i) {
    r.sizes[i] = v.sizes[static_cast<size_t>(order[i])];
    r.strides[i] = v.strides[static_cast<size_t>(order[i])];
  }
  return r;
}

StridedView slice_view(const StridedView& v, int64_t dim, int64_t start, int64_t count, int64_t step) {
  StridedView r = v;
  const size_t d = static_cast<size_t>(dim);
  if (count > 0) r.offset += start * v.strides[d];
  r.sizes[d] = count;
  r.strides[d] = v.strides[d] * step;
  return r;
}

StridedView select_view(const StridedView& v, int64_t dim, int64_t index) {
  StridedView r = v;
  const size_t d = static_cast<size_t>(dim);
  r.offset += index * v.strides[d];
  r.sizes.erase(r.sizes.begin() + dim);
  r.strides.erase(r.strides.begin() + dim);
  return r;
}

StridedView unsqueeze_view(const StridedView& v, int64_t dim) {
  StridedView r = v;
  const size_t d = static_cast<size_t>(dim);
  // Any stride serves a size-1 dim; this one keeps a contiguous view contiguous.
  const int64_t stride = d < v.sizes.size() ? v.sizes[d] * v.strides[d] : 1;
  r.sizes.insert(r.sizes.begin() + dim, 1);
  r.strides.insert(r.strides.begin() + dim, stride);
  return r;
}

StridedView flip_view(const StridedView& v, int64_t dim) {
  StridedView r = v;
  const size_t d = static_cast<size_t>(dim);
  if (v.sizes[d] > 1) {
    r.offset += (v.sizes[d] - 1) * v.strides[d];
    r.strides[d] = -v.strides[d];
  }
  return r;
}

StridedView expand_view(const StridedView& v, const ir::Shape& sizes) {
  StridedView r;
  r.base = v.base;
  r.offset = v.offset;
  r.sizes = sizes;
  r.strides.assign(sizes.size(), 0);
  const size_t lead = sizes.size() - v.sizes.size();
  for (size_t i = 0; i < v.sizes.size(); ++i)
    r.strides[lead + i] = v.sizes[i] == sizes[lead + i] ? v.strides[i] : 0;
  return r;
}

int64_t clamp_slice(int64_t size, int64_t& start, int64_t end, int64_t step) {
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = start < 0 ? 0 : (start > size ? size : start);
  end = end < start ? start : (end > size ? size : end);
  return (end - start + step - 1) / step;
}

void set_view_output(LowerContext& ctx, const StridedView& view) {
  ctx.set_tensor_output(0, materialize(ctx, view, ctx.tensor(0)));
}

}  // namespace aotc::ops
