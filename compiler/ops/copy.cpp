// IR "copy": a strided copy of any rank -> copy_strided. Made by the views that are not
// contiguous (strided_view.h: permute, slice with a step, select, expand, flip, ...) and by
// clone. Attributes: dims, src_strides, dst_strides (elements), elem_size, and for views
// src_offset, the element offset of the view's first element in the input (negative
// strides walk back from there).
#include "op_helpers.h"

namespace aotc::ops {

ParamsCode copy_params_code(const ir::Op& op) {
  const auto& dims = op.ints("dims");
  ParamsCode p("aotc::rt::CopyParams");
  p.set("rank", static_cast<int64_t>(dims.size()))
      .set("elem_size", op.i("elem_size"))
      .set_array("dims", dims)
      .set_array("src_strides", op.ints("src_strides"))
      .set_array("dst_strides", op.ints("dst_strides"));
  return p;
}

std::string copy_source(const EmitContext& e, const ir::Op& op) {
  std::string src = e.in(op.inputs[0]);
  const int64_t offset = op.has("src_offset") ? op.i("src_offset") * op.i("elem_size") : 0;
  if (offset != 0) src = "reinterpret_cast<const unsigned char*>(" + src + ") + " + std::to_string(offset);
  return src;
}

namespace {

std::string emit_copy(const EmitContext& e, const ir::Op& op) {
  return kernel_call(
      op, copy_params_code(op).str(),
      "aotc::rt::copy_strided(pool, p, " + copy_source(e, op) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_copy(Registry& r) { r.add_ir_op(ir::kind::copy, emit_copy); }

}  // namespace aotc::ops
