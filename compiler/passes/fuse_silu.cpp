// fuse_silu (CPU target): a SiLU (x * sigmoid(x)) that is the only reader of a convolution's
// result becomes that convolution's last epilogue step (Conv2dParams::silu), applied while
// the output tile is in cache instead of by a pass over memory that reads and writes it
// again. EfficientNet's blocks have one after every expansion and depthwise convolution.
// Winograd convolutions keep theirs (their output transform has no SiLU), and so does a
// convolution with a clamp (clamp then SiLU is not what the kernel does in one op order).
#include <aotc/rt/kernels.h>

#include <cmath>

#include "passes.h"

namespace aotc::passes {

void fuse_silu(ir::Graph& graph) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& act = graph.ops[i];
    if (act.kind != "unary" || static_cast<rt::UnaryOp>(act.i("op")) != rt::UnaryOp::Silu) continue;
    const int p = producer_of(graph, act.inputs[0]);
    if (p < 0) continue;
    ir::Op& conv = graph.ops[static_cast<size_t>(p)];
    if (conv.kind != "conv2d" || (conv.has("winograd") && conv.i("winograd") != 0) ||
        (conv.has("silu") && conv.i("silu") != 0))
      continue;
    if (conv.f("clamp_lo") != -INFINITY || conv.f("clamp_hi") != INFINITY) continue;
    if (graph.value(conv.outputs[0]).dtype != ir::DType::Float32) continue;
    if (readers_of_storage(graph, act.inputs[0]).size() != 1) continue;
    if (graph.value(conv.outputs[0]).bytes() != graph.value(act.outputs[0]).bytes()) continue;
    conv.attrs["silu"] = int64_t{1};
    conv.outputs[0] = act.outputs[0];
    graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(i));
    --i;
  }
}

}  // namespace aotc::passes
