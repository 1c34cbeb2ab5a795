// single_pixel_conv_to_gemm (CPU target only, first of the CPU passes): a 1x1 convolution
// (groups 1, no padding) of a 1x1 plane, such as a squeeze-and-excitation block's two
// layers on its pooled input, becomes the "gemm" it is: y (n x c_out) = x (n x c_in) W^T +
// bias, with the same input, weight, bias, clamp and output buffers (NCHW of one pixel is
// dense n x c). The convolution kernels put output positions along a vector's 16 lanes
// (the implicit GEMM) or along a tile's 7 or 14 rows (the positions-as-rows kernel), so one
// pixel kept one lane or one row of each busy; at one row the GEMM is Eigen's
// matrix-vector product. efficientnet_b0's 32 such layers took 0.30 ms of its 7.5 on 2
// threads as convolutions, 0.14 ms as GEMMs (bench/results_cpu.md). The later passes treat
// it as any gemm (an activation or a residual add fused into it, its weight prepacked
// where the rows make packing pay). AOTC_CPU_PIXEL_GEMM=0 (read when compiling) leaves them
// convolutions, for A/B runs.
#include <aotc/rt/kernels.h>

#include <cstdlib>
#include <string>

#include "../ops/gemm.h"
#include "../ops/spatial.h"
#include "passes.h"

namespace aotc::passes {

void single_pixel_conv_to_gemm(ir::Graph& graph) {
  if (const char* env = std::getenv("AOTC_CPU_PIXEL_GEMM"); env && std::string(env) == "0") return;
  for (ir::Op& op : graph.ops) {
    if (op.kind != ir::kind::conv2d || op.inputs.size() != 3 || op.outputs.size() != 1) continue;
    const rt::Conv2dParams p = ops::conv2d_params_of(op);
    if (p.groups != 1 || p.kernel_h != 1 || p.kernel_w != 1 || p.pad_h != 0 || p.pad_w != 0 || p.h_in != 1 ||
        p.w_in != 1 || p.h_out != 1 || p.w_out != 1 || p.n < 1 || p.c_in < 1 || p.c_out < 1 ||
        graph.value(op.inputs[0]).dtype != ir::DType::Float32 ||
        graph.value(op.inputs[1]).dtype != ir::DType::Float32 ||
        graph.value(op.outputs[0]).dtype != ir::DType::Float32)
      continue;
    ops::GemmShape s;
    s.m = p.n;
    s.n = p.c_out;
    s.k = p.c_in;
    s.trans_b = true;  // the weight, c_out x c_in x 1 x 1, is W stored n x k
    s.bias_kind = op.inputs[2] >= 0 ? rt::BiasKind::PerColumn : rt::BiasKind::None;
    op.kind = ir::kind::gemm;
    op.attrs = ops::gemm_attrs(s);
    op.attrs[ir::attr::clamp_lo] = static_cast<double>(p.clamp_lo);
    op.attrs[ir::attr::clamp_hi] = static_cast<double>(p.clamp_hi);
    rt::GemmParams g;
    g.m = s.m;
    g.n = s.n;
    g.k = s.k;
    op.scratch_bytes = 0;
    op.scratch_optional = false;
    op.thread_scratch_bytes = rt::gemm_thread_scratch_bytes(g);
  }
}

}  // namespace aotc::passes
