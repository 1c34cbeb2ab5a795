// IR "copy": a strided copy of any rank (permute, transpose, expand) -> copy_strided.
#include "op_helpers.h"

namespace aotc::ops {
namespace {

std::string emit_copy(const EmitContext& e, const ir::Op& op) {
  const auto& dims = op.ints("dims");
  ParamsCode p("aotc::rt::CopyParams");
  p.set("rank", static_cast<int64_t>(dims.size()))
      .set("elem_size", op.i("elem_size"))
      .set_array("dims", dims)
      .set_array("src_strides", op.ints("src_strides"))
      .set_array("dst_strides", op.ints("dst_strides"));
  return kernel_call(
      op, p.str(),
      "aotc::rt::copy_strided(pool, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) + ");");
}

}  // namespace

void register_copy(Registry& r) { r.add_ir_op("copy", emit_copy); }

}  // namespace aotc::ops
