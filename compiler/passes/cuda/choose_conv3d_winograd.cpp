// choose_conv3d_winograd: a stride-1 3x3x3 or 1x3x3 conv3d with a constant weight
// (rt::cuda::conv3d_winograd_applies, one image's transformed input within the scratch
// budget) runs by Winograd (runtime/cuda/kernels/conv3d_winograd.cu): its weight input
// becomes U (points x c_out x c_in, rt::cuda::conv3d_winograd_weights), transformed here once
// instead of on every run, and the op's attribute "winograd" holds the output tile, which
// its CUDA generator (compiler/ops/cuda/conv3d_cuda.cpp) reads.
//
// The tile: F(4, 3) (1/8 of the direct product's multiplies in 3-d) at fp32; F(2, 3) where
// the products round to tf32 or 16 bits, since F(4, 3)'s transforms scale values by up to
// 10x and magnify that rounding with them. AOTC_CUDA_CONV3D_WINOGRAD=2|4|off overrides the
// choice (for A/B timings).
#include <aotc/rt/cuda/conv3d_winograd_plan.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "../../ops/spatial.h"
#include "../passes.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {

void choose_conv3d_winograd(ir::Graph& graph, rt::cuda::Precision precision) {
  int64_t tile = precision == rt::cuda::Precision::Fp32 ? 4 : 2;
  if (const char* env = std::getenv("AOTC_CUDA_CONV3D_WINOGRAD")) {
    if (std::strcmp(env, "off") == 0) return;
    if (std::strcmp(env, "2") == 0 || std::strcmp(env, "4") == 0) tile = env[0] - '0';
  }
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    if (graph.ops[i].kind != ir::kind::conv3d || graph.ops[i].inputs.size() < 2) continue;
    const ir::Op& op = graph.ops[i];
    // With sizes that vary (aotc --dim), p has the largest: one image of them within the
    // scratch budget is what the rule needs, and smaller ones fit as well.
    const rt::ConvNdParams p = ops::conv_nd_params_of(op);
    if (!rt::cuda::conv3d_winograd_applies(p) || rt::cuda::conv3d_winograd_chunk_images(p, tile) <= 0)
      continue;
    const int64_t taps = p.kernel[0] * 9, points = rt::cuda::conv3d_winograd_points(p, tile);
    const float* const w = constant_floats(graph, op.inputs[1], p.c_out * p.c_in * taps);
    if (!w || ir::numel(graph.value(op.inputs[1]).shape) != p.c_out * p.c_in * taps) continue;
    // The transform sees only what its recipe names (the batch varies between aotc --dim's samples).
    rt::ConvNdParams transform;
    transform.c_out = p.c_out;
    transform.c_in = p.c_in;
    transform.kernel[0] = p.kernel[0];
    transform.kernel[1] = transform.kernel[2] = 3;
    const std::string recipe = "choose_conv3d_winograd c_out=" + std::to_string(p.c_out) +
                               " c_in=" + std::to_string(p.c_in) +
                               " kernel_d=" + std::to_string(p.kernel[0]) + " tile=" + std::to_string(tile);
    const int u_id = add_derived_f32_constant(graph, recipe, {op.inputs[1]}, {points, p.c_out, p.c_in}, [&] {
      std::vector<float> u(static_cast<size_t>(points * p.c_out * p.c_in));
      rt::cuda::conv3d_winograd_weights(transform, tile, w, u.data());
      return u;
    });
    ir::Op& conv = graph.ops[i];
    conv.inputs[1] = u_id;
    conv.attrs[ir::attr::winograd] = tile;
  }
}

}  // namespace aotc::passes::cuda
