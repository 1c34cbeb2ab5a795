// fuse_depthwise_pool: the global average pooling of a squeeze-and-excitation block, when it
// reads an NHWC depthwise convolution's result directly, becomes that convolution's second
// output (DepthwiseNhwcIo::pool). EfficientNet's blocks pool the depthwise output for the
// gate, then multiply it by the gate: the pooling read the block's widest tensor once more,
// behind the convolution that had just written it. With the input-SiLU tiles
// (fold_depthwise_input.cpp) each block adds its outputs per channel as it stores them and a
// small second step adds the tiles' sums; where those tiles do not run (grids too small to
// fill the GPU, as at batch 1) the function pools after the convolution, as the pooling op
// did. Only convolutions that take the input SiLU, so only where the tiles may run.
// AOTC_CUDA_FUSE_DEPTHWISE_POOL=0 (read when compiling) keeps the pooling an op of its own,
// for comparisons.
#include <aotc/rt/cuda/conv2d_plan.h>

#include <cstdlib>
#include <string>

#include "../../ops/spatial.h"
#include "../passes.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {
namespace {

bool global_nhwc_pool(const ir::Op& op) {
  return op.kind == ir::kind::adaptive_avg_pool2d && op.has(ir::attr::channels_last) &&
         op.b(ir::attr::channels_last) && op.i("h_out") == 1 && op.i("w_out") == 1 && op.inputs.size() == 1 &&
         op.outputs.size() == 1;
}

// A depthwise convolution taking an input SiLU, with no second output yet, whose output is
// value id itself and the pooling's whole input.
bool pools_in_tiles(const ir::Graph& graph, const ir::Op& dw, const ir::Op& pool) {
  if (dw.kind != ir::kind::depthwise_conv2d_nhwc || dw.outputs.size() != 1 ||
      dw.outputs[0] != pool.inputs[0] || !dw.has(ir::attr::input_activation) ||
      static_cast<rt::GemmActivation>(dw.i(ir::attr::input_activation)) != rt::GemmActivation::Silu)
    return false;
  const rt::Conv2dParams p = ops::conv2d_params_of(dw);
  const ir::Value& pooled = graph.value(pool.outputs[0]);
  return rt::cuda::depthwise_pools_in_tiles(p) && pool.i("n") == p.n && pool.i("c") == p.c_out &&
         pool.i("h_in") == p.h_out && pool.i("w_in") == p.w_out && pooled.dtype == ir::DType::Float32;
}

}  // namespace

void fuse_depthwise_pool(ir::Graph& graph) {
  if (const char* env = std::getenv("AOTC_CUDA_FUSE_DEPTHWISE_POOL"); env && std::string(env) == "0") return;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& pool = graph.ops[i];
    if (!global_nhwc_pool(pool)) continue;
    const int at = producer_of(graph, pool.inputs[0]);
    if (at < 0 || !pools_in_tiles(graph, graph.ops[static_cast<size_t>(at)], pool)) continue;
    // The convolution comes first in the op order; the pooled value is now written there.
    graph.ops[static_cast<size_t>(at)].outputs.push_back(pool.outputs[0]);
    graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(i));
    --i;
  }
}

}  // namespace aotc::passes::cuda
