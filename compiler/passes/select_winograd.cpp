// select_winograd (CPU target only, after the default passes): a 3x3 stride-1 conv2d with a
// constant weight (conv2d_winograd_applies) is computed by Winograd F(t x t, 3x3) with the
// output tile t that rt::conv2d_winograd_tile picks (2 or 4): its weight input becomes the
// transformed U = G g G^T ((t + 2)^2 x c_out x c_in, rt::conv2d_winograd_weights), computed
// here once instead of on every run, and the op's attribute "winograd" = t tells its
// generator. The memory plan must be made again after it (the op's scratch changes).
#include <aotc/rt/kernels.h>

#include <algorithm>
#include <string>

#include "../ops/spatial.h"
#include "passes.h"

namespace aotc::passes {

void select_winograd(ir::Graph& graph) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    if (graph.ops[i].kind != ir::kind::conv2d) continue;
    const ir::Op& op = graph.ops[i];
    const rt::Conv2dParams p = ops::conv2d_params_of(op);
    if (!rt::conv2d_winograd_applies(p) || !graph.is_constant(op.inputs[1])) continue;
    const ir::Constant& w = graph.constant_of(op.inputs[1]);
    if (ir::numel(w.shape) != p.c_out * p.c_in * 9) continue;
    // With sizes that vary (aotc --dim), the batch is taken as large: one tile for all.
    rt::Conv2dParams choice = p;
    if (graph.sizes_vary) choice.n = std::max<int64_t>(p.n, 64);
    const int64_t tile = rt::conv2d_winograd_tile(choice), points = rt::conv2d_winograd_points(tile);
    // The transform sees only what its recipe names (the batch varies between aotc --dim's samples).
    rt::Conv2dParams transform;
    transform.c_out = p.c_out;
    transform.c_in = p.c_in;
    const std::string recipe = "select_winograd c_out=" + std::to_string(p.c_out) +
                               " c_in=" + std::to_string(p.c_in) + " tile=" + std::to_string(tile);
    const int u_id = add_derived_f32_constant(graph, recipe, {op.inputs[1]}, {points, p.c_out, p.c_in}, [&] {
      std::vector<float> u(static_cast<size_t>(points * transform.c_out * transform.c_in));
      rt::conv2d_winograd_weights(transform, tile, w.f32(), u.data());
      return u;
    });
    ir::Op& conv = graph.ops[i];  // adding a constant may not move ops, but be safe
    conv.inputs[1] = u_id;
    conv.attrs[ir::attr::winograd] = tile;
    conv.scratch_bytes = rt::conv2d_winograd_scratch_bytes(p, tile);
    conv.scratch_optional = false;
    conv.thread_scratch_bytes = rt::conv2d_winograd_thread_scratch_bytes(p, tile);
  }
}

}  // namespace aotc::passes
