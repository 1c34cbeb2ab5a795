// IR "copy" (permute, transpose, expand) and "concat" (cat) on CUDA ->
// aotc::rt::cuda::copy_strided, one call per cat input into its slice of the output.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

// The source at the view's offset: a slice with a step, select or flip starts inside it.
CudaCode emit_copy(const EmitContext& e, const ir::Op& op, size_t) {
  return {"", kernel_call(op, copy_params_code(op).str(),
                          "aotc::rt::cuda::copy_strided(stream, p, " + copy_source(e, op) + ", " +
                              e.out(op.outputs[0]) + ");")};
}

CudaCode emit_concat(const EmitContext& e, const ir::Op& op, size_t) {
  const ir::Value& y = e.graph.value(op.outputs[0]);
  const size_t dim = static_cast<size_t>(op.i("dim"));
  const std::vector<int64_t> dst = dense_strides(y.shape);
  const int64_t elem = ir::dtype_size(y.dtype);
  CudaCode code;
  int64_t offset = 0;  // elements along dim already written
  for (int id : op.inputs) {
    const ir::Shape& s = e.graph.value(id).shape;
    ParamsCode p("aotc::rt::CopyParams");
    p.set("rank", static_cast<int64_t>(s.size()))
        .set("elem_size", elem)
        .set_array("dims", s)
        .set_array("src_strides", dense_strides(s))
        .set_array("dst_strides", dst);
    const std::string target = "reinterpret_cast<unsigned char*>(" + e.out(op.outputs[0]) + ") + " +
                               std::to_string(offset * dst[dim] * elem);
    code.launch += kernel_call(op, p.str(),
                               "aotc::rt::cuda::copy_strided(stream, p, " + e.in(id) + ", " + target + ");");
    offset += s[dim];
  }
  return code;
}

}  // namespace

void register_copy_cuda(CudaRegistry& r) {
  r.add(ir::kind::copy, emit_copy, nullptr, any_dtype);
  r.add(ir::kind::concat, emit_concat, nullptr, any_dtype);
}

}  // namespace aotc::ops::cuda
