// fuse_activation: a clamp-like activation (relu, relu6, hardtanh, clamp) that is the
// only reader of an op's result becomes that op's epilogue, saving one pass over memory:
// by default conv2d / conv3d / conv_transpose / gemm / batched_gemm / channel_affine /
// group_norm results of the same bytes (every target's kernels for them clamp as they
// write); a target passes its own producers (the CUDA target: a binary op, the residual add
// of a ResNet block, whose generator reads the clamp).
#include <aotc/rt/kernels.h>

#include <algorithm>
#include <cmath>

#include "passes.h"

namespace aotc::passes {

void fuse_activation(ir::Graph& graph) {
  fuse_activation(graph, [](const ir::Graph& g, const ir::Op& producer, const ir::Op& act) {
    const std::string& k = producer.kind;
    return (k == ir::kind::conv2d || k == ir::kind::gemm || k == ir::kind::batched_gemm ||
            k == ir::kind::channel_affine || k == ir::kind::conv3d || k == ir::kind::conv_transpose ||
            k == ir::kind::group_norm) &&
           g.value(producer.outputs[0]).bytes() == g.value(act.outputs[0]).bytes();
  });
}

void fuse_activation(ir::Graph& graph, const TakesClamp& takes) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    ir::Op& act = graph.ops[i];
    if (act.kind != ir::kind::unary) continue;
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
    if (!takes(graph, producer, act)) continue;
    if (readers_of_storage(graph, act.inputs[0]).size() != 1) continue;
    // Composing clamps: clamp(clamp(x, a, b), c, d) = clamp(x, max(a, c), min(b, d)) when
    // the intervals overlap, which holds for every activation listed above after a fresh op.
    if (producer.has(ir::attr::clamp_lo)) {
      lo = std::max(producer.f(ir::attr::clamp_lo), lo);
      hi = std::min(producer.f(ir::attr::clamp_hi), hi);
    }
    producer.attrs[ir::attr::clamp_lo] = lo;
    producer.attrs[ir::attr::clamp_hi] = hi;
    producer.outputs[0] = act.outputs[0];
    graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(i));
    --i;
  }
}

}  // namespace aotc::passes
