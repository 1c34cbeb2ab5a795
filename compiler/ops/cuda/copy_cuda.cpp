// IR "copy" (permute, transpose, expand), "concat" (cat) and "assemble" (cat, stack, roll,
// pad, factories: an optional fill, then strided pieces) on CUDA ->
// aotc::rt::cuda::copy_strided, one call per piece into its place in the output.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_copy(const EmitContext& e, const ir::Op& op, size_t) {
  const auto& dims = op.ints("dims");
  ParamsCode p("aotc::rt::CopyParams");
  p.set("rank", static_cast<int64_t>(dims.size()))
      .set("elem_size", op.i("elem_size"))
      .set_array("dims", dims)
      .set_array("src_strides", op.ints("src_strides"))
      .set_array("dst_strides", op.ints("dst_strides"));
  return {"", kernel_call(op, p.str(),
                          "aotc::rt::cuda::copy_strided(stream, p, " + e.in(op.inputs[0]) + ", " +
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

// The CUDA twin of the CPU "assemble" (compiler/ops/assemble.cpp): same attributes, the
// fill and each piece launched in order on the stream, so a later piece (or one that reads
// the output itself, piece_input -1) sees the earlier ones.
CudaCode emit_assemble(const EmitContext& e, const ir::Op& op, size_t) {
  const int out = op.outputs[0];
  const ir::Value& y = e.graph.value(out);
  const int64_t elem = ir::dtype_size(y.dtype);
  const std::string out_bytes = "reinterpret_cast<unsigned char*>(" + e.out(out) + ")";
  CudaCode code;
  if (op.has("fill")) {
    ParamsCode p("aotc::rt::FillParams");
    p.set("count", ir::numel(y.shape)).set("elem_size", elem).set_array("value", op.ints("fill"));
    code.launch += kernel_call(op, p.str(), "aotc::rt::cuda::fill(stream, p, " + e.out(out) + ");");
  }
  const auto& inputs = op.ints("piece_input");
  const auto& ranks = op.ints("piece_rank");
  const auto& src_offsets = op.ints("piece_src_offset");
  const auto& dst_offsets = op.ints("piece_dst_offset");
  const auto& dims = op.ints("piece_dims");
  const auto& src_strides = op.ints("piece_src_strides");
  const auto& dst_strides = op.ints("piece_dst_strides");
  size_t at = 0;  // into the flattened per-dim lists
  for (size_t k = 0; k < inputs.size(); ++k) {
    const size_t rank = static_cast<size_t>(ranks[k]);
    auto part = [&](const std::vector<int64_t>& v) {
      return std::vector<int64_t>(v.begin() + static_cast<std::ptrdiff_t>(at),
                                  v.begin() + static_cast<std::ptrdiff_t>(at + rank));
    };
    ParamsCode p("aotc::rt::CopyParams");
    p.set("rank", static_cast<int64_t>(rank))
        .set("elem_size", elem)
        .set_array("dims", part(dims))
        .set_array("src_strides", part(src_strides))
        .set_array("dst_strides", part(dst_strides));
    at += rank;
    const std::string src_base = inputs[k] < 0 ? "static_cast<const unsigned char*>(" + out_bytes + ")"
                                               : "reinterpret_cast<const unsigned char*>(" +
                                                     e.in(op.inputs[static_cast<size_t>(inputs[k])]) + ")";
    const std::string src = src_base + " + " + std::to_string(src_offsets[k] * elem);
    const std::string dst = out_bytes + " + " + std::to_string(dst_offsets[k] * elem);
    code.launch +=
        kernel_call(op, p.str(), "aotc::rt::cuda::copy_strided(stream, p, " + src + ", " + dst + ");");
  }
  return code;
}

}  // namespace

void register_copy_cuda(CudaRegistry& r) {
  r.add("copy", emit_copy);
  r.add("concat", emit_concat);
  r.add("assemble", emit_assemble);
}

}  // namespace aotc::ops::cuda
