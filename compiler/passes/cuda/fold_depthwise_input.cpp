// fold_depthwise_input: a GEMM convolution's bias and clamp moved into the depthwise
// convolution that alone reads its result. In NCHW a GEMM convolution's per-channel bias
// and clamp are a pass after cuBLAS (conv2d.cu: cuBLASLt has no per-row bias for float32),
// one launch per layer; MobileNet's expansions (1x1 + bias + relu6) each feed a depthwise
// convolution, which now applies them to the values it loads (depthwise_conv2d_f32's input
// epilogue) and the pass disappears. The depthwise kernel skips the taps that read its zero
// padding, so padding stays zero, as it is after the clamp. Only where the depthwise kernel
// takes the whole tensor (depthwise_input_epilogue_fits) and nothing else reads the value.
// In NHWC (convert_to_channels_last.cpp) the expansion is a "gemm" whose per-column bias
// and relu cuBLASLt fuses, but not relu6's upper bound: that was a bias_clamp pass per layer
// after the product (17 in MobileNetV2). There only the upper bound moves, into
// depthwise_conv2d_nhwc's loads (one min a value: those kernels are near their arithmetic
// limit at batch 1); the GEMM keeps its bias and relu.
// EfficientNet's expansions end in a SiLU (fuse_epilogue_silu.cpp), which cuBLASLt lacks:
// behind the GEMM a pass read and wrote the block's widest tensor again to apply it. The
// SiLU moves into the depthwise convolution, which applies it once a value as it loads its
// shared-memory tiles; only for the windows those take (depthwise_silu_input_tiled), since
// elsewhere it would be computed once a value read, several times a value. (Where the tiles
// are too few to fill the GPU, as at batch 1, the kernel does compute it per value read; the
// choice is made at run time, so the generated code is the same for every batch size.) The
// GEMM keeps its bias, which cuBLASLt fuses.
// AOTC_CUDA_FOLD_DEPTHWISE=0 (read when compiling) leaves every epilogue where it is, for
// comparisons.
#include <aotc/rt/cuda/conv2d_plan.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "../../ops/cuda/cuda_registry.h"
#include "../../ops/gemm.h"
#include "../../ops/spatial.h"
#include "../passes.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {
namespace {

rt::cuda::Conv2dPath path_of(const ir::Op& op) {
  return static_cast<rt::cuda::Conv2dPath>(op.i(ir::attr::cuda_path));
}

bool nchw_conv(const ir::Op& op) {
  return op.kind == ir::kind::conv2d && op.has(ir::attr::cuda_path) &&
         !(op.has(ir::attr::channels_last) && op.b(ir::attr::channels_last));
}

// relu6's upper bound (a clamp from 0 or from nothing to a finite bound) of an NHWC "gemm"
// (a 1x1 convolution) moved into the depthwise convolution that alone reads its dense result.
void fold_into_nhwc_depthwise(ir::Graph& graph, ir::Op& dw) {
  if (dw.inputs.size() != 3) return;
  const int v = passes::sole_whole_read(graph, dw.inputs[0]);
  if (v < 0) return;
  const int at = passes::producer_of(graph, v);
  if (at < 0) return;
  ir::Op& gemm = graph.ops[static_cast<size_t>(at)];
  if (gemm.kind != ir::kind::gemm || gemm.inputs.size() != 3 ||
      (gemm.has(ir::attr::c_16bit) && gemm.b(ir::attr::c_16bit)))
    return;
  const rt::GemmParams p = ops::gemm_params_of(gemm);
  if (p.n != graph.value(v).shape.back() || p.ldc != p.n) return;
  if (gemm.has(ir::attr::activation)) {
    const bool silu =
        static_cast<rt::GemmActivation>(gemm.i(ir::attr::activation)) == rt::GemmActivation::Silu;
    if (!silu || p.clamp_lo != -INFINITY || p.clamp_hi != INFINITY ||
        !rt::cuda::depthwise_silu_input_tiled(ops::conv2d_params_of(dw)))
      return;
    dw.inputs.push_back(-1);  // no bias: the GEMM adds it
    dw.attrs[ir::attr::input_clamp_lo] = -INFINITY;
    dw.attrs[ir::attr::input_clamp_hi] = INFINITY;
    dw.attrs[ir::attr::input_activation] = static_cast<int64_t>(rt::GemmActivation::Silu);
    gemm.attrs.erase(ir::attr::activation);
    return;
  }
  if (!std::isfinite(p.clamp_hi) || !(p.clamp_lo == 0.0f || p.clamp_lo == -INFINITY)) return;
  dw.inputs.push_back(-1);  // no bias: the GEMM adds it
  dw.attrs[ir::attr::input_clamp_lo] = -INFINITY;
  dw.attrs[ir::attr::input_clamp_hi] = p.clamp_hi;
  gemm.attrs[ir::attr::clamp_hi] = INFINITY;
}

}  // namespace

void fold_depthwise_input(ir::Graph& graph) {
  if (const char* env = std::getenv("AOTC_CUDA_FOLD_DEPTHWISE"); env && std::string(env) == "0") return;
  for (ir::Op& dw : graph.ops) {
    if (dw.kind == ir::kind::depthwise_conv2d_nhwc) {
      fold_into_nhwc_depthwise(graph, dw);
      continue;
    }
    if (!nchw_conv(dw) || path_of(dw) != rt::cuda::Conv2dPath::Depthwise || dw.inputs.size() != 3 ||
        !rt::cuda::depthwise_input_epilogue_fits(ops::conv2d_params_of(dw)))
      continue;
    // The value the depthwise convolution reads, whole and alone (graph outputs count).
    const int v = passes::sole_whole_read(graph, dw.inputs[0]);
    if (v < 0) continue;
    const int at = passes::producer_of(graph, v);
    ir::Op* producer = at >= 0 ? &graph.ops[static_cast<size_t>(at)] : nullptr;
    if (!producer || !nchw_conv(*producer) || producer->inputs.size() != 3 ||
        (path_of(*producer) != rt::cuda::Conv2dPath::Pointwise &&
         path_of(*producer) != rt::cuda::Conv2dPath::Im2colGemm))
      continue;
    const rt::Conv2dParams p = ops::conv2d_params_of(*producer);
    if (!p.has_bias && std::isinf(p.clamp_lo) && std::isinf(p.clamp_hi)) continue;  // nothing to move
    dw.inputs.push_back(producer->inputs[2]);
    dw.attrs[ir::attr::input_clamp_lo] = producer->f(ir::attr::clamp_lo);
    dw.attrs[ir::attr::input_clamp_hi] = producer->f(ir::attr::clamp_hi);
    producer->inputs[2] = -1;
    producer->attrs[ir::attr::clamp_lo] = -INFINITY;
    producer->attrs[ir::attr::clamp_hi] = INFINITY;
  }
}

}  // namespace aotc::passes::cuda
