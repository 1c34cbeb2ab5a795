// fuse_expand_depthwise (CPU target only, after the convolutions' epilogues are fused and
// before the memory plan): a 1x1 stride-1 convolution (with its bias and clamp) whose
// result only a depthwise convolution reads becomes one "conv2d_expand_depthwise" op with
// it: inputs x, the 1x1 weight packed for the micro-kernel (rt::gemm_prepack_weights of its
// transpose, as conv2d_expand_depthwise_f32 reads it) and bias, the depthwise weight and
// bias; a silu between the two (efficientnet's blocks), whole and alone, goes in as well.
// The expanded tensor (mobilenet_v2's and efficientnet's inverted residual blocks:
// 4-6x the block's channels) then never goes through memory. The fused op takes the
// depthwise convolution's place; the 1x1 convolution's inputs exist before it.
// AOTC_CPU_FUSE_EXPAND_DEPTHWISE=0 (read when compiling) leaves every pair apart; so does
// a target with AVX-512 where the depthwise plane is narrow (rt::conv2d_depthwise_rows_fits).
#include <aotc/rt/kernels.h>

#include <cstdlib>
#include <string>

#include "../ops/spatial.h"
#include "passes.h"

namespace aotc::passes {
namespace {

// A float32 silu of one whole tensor (the IR's "unary" op with UnaryOp::Silu).
bool is_silu(const ir::Graph& graph, const ir::Op& op) {
  return op.kind == ir::kind::unary && op.inputs.size() == 1 && op.outputs.size() == 1 &&
         op.i("op") == static_cast<int64_t>(rt::UnaryOp::Silu) &&
         graph.value(op.inputs[0]).dtype == ir::DType::Float32 &&
         graph.value(op.inputs[0]).shape == graph.value(op.outputs[0]).shape;
}

}  // namespace

void fuse_expand_depthwise(ir::Graph& graph, bool avx512_target) {
  if (const char* env = std::getenv("AOTC_CPU_FUSE_EXPAND_DEPTHWISE"); env && std::string(env) == "0") return;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& dw_op = graph.ops[i];
    if (dw_op.kind != ir::kind::conv2d || dw_op.has(ir::attr::winograd) || dw_op.inputs.size() != 3) continue;
    const rt::Conv2dParams dw = ops::conv2d_params_of(dw_op);
    if (!rt::conv2d_is_depthwise(dw)) continue;
    // The value the depthwise convolution reads, whole and alone; through a silu that alone
    // reads the expansion (efficientnet), the silu goes into the fused op too.
    const int v = sole_whole_read(graph, dw_op.inputs[0]);
    int at = v < 0 ? -1 : producer_of(graph, v);
    int silu_at = -1;
    if (at >= 0 && static_cast<size_t>(at) < i && is_silu(graph, graph.ops[static_cast<size_t>(at)])) {
      const int e = sole_whole_read(graph, graph.ops[static_cast<size_t>(at)].inputs[0]);
      silu_at = at;
      at = e < 0 ? -1 : producer_of(graph, e);
      if (at >= silu_at) at = -1;
    }
    if (at < 0 || static_cast<size_t>(at) >= i) continue;
    const ir::Op& pw_op = graph.ops[static_cast<size_t>(at)];
    if (pw_op.kind != ir::kind::conv2d || pw_op.has(ir::attr::winograd) || pw_op.inputs.size() != 3) continue;
    const rt::Conv2dParams pw = ops::conv2d_params_of(pw_op);
    if (!rt::conv2d_expand_depthwise_applies(pw, dw)) continue;
    // On AVX-512 a narrow plane's depthwise runs a row per vector straight from NCHW, and
    // the two convolutions apart beat the fused op; on wider planes splitting gains nothing,
    // so they stay fused with the smaller arena (bench/results_cpu.md).
    if (avx512_target && rt::conv2d_depthwise_rows_fits(dw)) continue;
    const float* w1 = constant_floats(graph, pw_op.inputs[1], pw.c_out * pw.c_in);
    if (!w1) continue;
    rt::GemmParams g;  // W1^T: k = c_in, n = c_mid, W1 stored c_mid x c_in
    g.k = pw.c_in;
    g.n = pw.c_out;
    g.trans_b = true;
    g.ldb = pw.c_in;
    const std::string recipe = "fuse_expand_depthwise k=" + std::to_string(g.k) + " n=" + std::to_string(g.n);
    const int packed_id = add_derived_f32_constant(
        graph, recipe, {pw_op.inputs[1]}, {g.k, (g.n + 15) / 16 * 16},
        [&] {
          std::vector<float> packed(static_cast<size_t>(rt::gemm_prepacked_floats(g.n, g.k)));
          rt::gemm_prepack_weights(g, w1, packed.data());
          return packed;
        },
        graph.value(pw_op.inputs[1]).name + ".packed_t");

    ir::Op fused = graph.ops[i];  // the depthwise convolution's attributes and location
    const ir::Op& expand = graph.ops[static_cast<size_t>(at)];
    fused.kind = ir::kind::conv2d_expand_depthwise;
    fused.inputs = {expand.inputs[0], packed_id, expand.inputs[2], fused.inputs[1], fused.inputs[2]};
    fused.attrs[ir::attr::expand_c_in] = pw.c_in;
    fused.attrs[ir::attr::expand_clamp_lo] = expand.f(ir::attr::clamp_lo);
    fused.attrs[ir::attr::expand_clamp_hi] = expand.f(ir::attr::clamp_hi);
    if (silu_at >= 0) fused.attrs[ir::attr::expand_silu] = static_cast<int64_t>(1);
    fused.scratch_bytes = 0;
    fused.scratch_optional = false;
    fused.thread_scratch_bytes = rt::conv2d_expand_depthwise_thread_scratch_bytes(pw, dw);
    graph.ops[i] = std::move(fused);
    if (silu_at >= 0) {
      graph.ops.erase(graph.ops.begin() + silu_at);
      --i;
    }
    graph.ops.erase(graph.ops.begin() + at);
    --i;
  }
}

}  // namespace aotc::passes
