// fuse_quantize_layout: a tensor quantized and then reordered from NCHW to NHWC for the
// quantized convolution that reads it (a model's input: IR "quantize", then a "copy" that
// is its only reader) becomes one "quantize" that writes NHWC (quantize_to_nhwc_u8), saving
// a pass over the bytes with 1-byte strided accesses.
#include "passes.h"

namespace aotc::passes {

void fuse_quantize_layout(ir::Graph& graph) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    ir::Op& copy = graph.ops[i];
    if (copy.kind != ir::kind::copy) continue;
    const int p = producer_of(graph, copy.inputs[0]);
    if (p < 0) continue;
    ir::Op& quantize = graph.ops[static_cast<size_t>(p)];
    if (quantize.kind != ir::kind::quantize || quantize.has("nhwc")) continue;
    // Not every copy has every attribute (src_offset is optional): read them only now.
    if (!copy.has("elem_size") || copy.i("elem_size") != 1 ||
        (copy.has("src_offset") && copy.i("src_offset") != 0))
      continue;
    const int source = quantize.outputs[0];
    if (graph.storage_root(copy.inputs[0]) != source || graph.root_byte_offset(copy.inputs[0]) != 0) continue;
    if (readers_of_storage(graph, source).size() != 1) continue;
    // The copy of an NCHW [n, c, h, w] into NHWC: dims [n, h, w, c] read at strides
    // [c*h*w, w, 1, h*w], written densely.
    const std::vector<int64_t>& dims = copy.ints("dims");
    if (dims.size() != 4) continue;
    const int64_t n = dims[0], h = dims[1], w = dims[2], c = dims[3];
    if (copy.ints("src_strides") != std::vector<int64_t>{c * h * w, w, 1, h * w} ||
        copy.ints("dst_strides") != std::vector<int64_t>{h * w * c, w * c, c, 1} ||
        quantize.i("count") != n * c * h * w)
      continue;
    quantize.attrs["nhwc"] = std::vector<int64_t>{n, c, h * w};
    quantize.outputs[0] = copy.outputs[0];
    graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(i));
    --i;
  }
}

}  // namespace aotc::passes
