// IR "assemble" (cat of views, stack, pad, roll, the *_like factories; see
// compiler/ops/assemble.h) on CUDA -> aotc::rt::cuda::fill, then one
// aotc::rt::cuda::copy_strided per piece, in order on the stream (a piece may read what an
// earlier one wrote into the output).
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

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

void register_assemble_cuda(CudaRegistry& r) { r.add("assemble", emit_assemble); }

}  // namespace aotc::ops::cuda
