// select_winograd (CPU target only, after the default passes): a 3x3 stride-1 conv2d with a
// constant weight (conv2d_winograd_applies) is computed by Winograd F(2x2, 3x3): its weight
// input becomes the transformed U = G g G^T (16 x c_out x c_in, rt::conv2d_winograd_weights),
// computed here once instead of on every run, and the op is marked "winograd" for its
// generator. The memory plan must be made again after it (the op's scratch changes).
#include <aotc/rt/kernels.h>

#include "../ops/spatial.h"
#include "passes.h"

namespace aotc::passes {

void select_winograd(ir::Graph& graph) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    if (graph.ops[i].kind != "conv2d") continue;
    const ir::Op& op = graph.ops[i];
    const rt::Conv2dParams p = ops::conv2d_params_of(op);
    if (!rt::conv2d_winograd_applies(p) || !graph.is_constant(op.inputs[1])) continue;
    const ir::Constant& w = graph.constant_of(op.inputs[1]);
    if (ir::numel(w.shape) != p.c_out * p.c_in * 9) continue;
    std::vector<float> u(static_cast<size_t>(16 * p.c_out * p.c_in));
    rt::conv2d_winograd_weights(p, w.f32(), u.data());
    const int u_id = graph.add_f32_constant({16, p.c_out, p.c_in}, std::move(u));
    ir::Op& conv = graph.ops[i];  // add_f32_constant may not move ops, but be safe
    conv.inputs[1] = u_id;
    conv.attrs["winograd"] = int64_t{1};
    conv.scratch_bytes = rt::conv2d_winograd_scratch_bytes(p);
    conv.thread_scratch_bytes = rt::conv2d_winograd_thread_scratch_bytes(p);
  }
}

}  // namespace aotc::passes
