// fuse_activation: a clamp-like activation (relu, relu6, hardtanh, clamp) that is the
// only reader of a conv2d / conv3d / conv_transpose / gemm / channel_affine / group_norm
// result becomes that op's epilogue, saving one pass over memory.
#include <aotc/rt/kernels.h>

#include <algorithm>
#include <cmath>

#include "passes.h"

namespace aotc::passes {

void fuse_activation(ir::Graph& graph) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    ir::Op& act = graph.ops[i];
    if (act.kind != "unary") continue;
    const auto kind = static_cast<rt::UnaryOp>(act.i("op"));
    double lo, hi;
    if (kind == rt::UnaryOp::Relu)
      lo = 0, hi = INFINITY;
    else if (kind == rt::UnaryOp::Clamp)
      lo = act.f("a"), hi = act.f("b");
    else
      continue;
    const int p = producer_of(graph, act.inputs[0]);
    if (p < 0) continue;
    ir::Op& producer = graph.ops[static_cast<size_t>(p)];
    if (producer.kind != "conv2d" && producer.kind != "gemm" && producer.kind != "batched_gemm" &&
        producer.kind != "channel_affine" && producer.kind != "conv3d" && producer.kind != "conv_transpose" &&
        producer.kind != "group_norm")
      continue;
    if (readers_of_storage(graph, act.inputs[0]).size() != 1) continue;
    if (graph.value(producer.outputs[0]).bytes() != graph.value(act.outputs[0]).bytes()) continue;
    // Composing clamps: clamp(clamp(x, a, b), c, d) = clamp(x, max(a, c), min(b, d)) when
    // the intervals overlap, which holds for every activation listed above after a fresh op.
    producer.attrs["clamp_lo"] = std::max(producer.f("clamp_lo"), lo);
    producer.attrs["clamp_hi"] = std::min(producer.f("clamp_hi"), hi);
    producer.outputs[0] = act.outputs[0];
    graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(i));
    --i;
  }
}

}  // namespace aotc::passes
