// fuse_conv_residual: the residual add of a ResNet block, y = conv(x) + skip (and the clamp
// that the CUDA pipeline's fuse_activation put on the add), becomes the epilogue of that
// convolution (or GEMM) when the target's path for it takes one (takes_residual): the
// block's output is written once, not read back and written again by an add. A linear
// layer's GEMM takes it the same way (a transformer block's add). On the CPU the GEMM
// convolutions and GEMMs start their accumulators from the residual (a GEMM with a GELU
// adds it after the GELU); on CUDA cuBLASLt's C operand, the epilogue pass or the
// implicit-GEMM kernel adds it. The fused op takes the add's place in the op order,
// because `skip` may be computed after the convolution (the downsample branch);
// everything the convolution reads exists by then.
#include <aotc/rt/kernels.h>

#include <cmath>

#include "passes.h"

namespace aotc::passes {
namespace {

// Whether id is value `of`, or an alias chain onto all of it (same shape, offset 0).
bool whole_view_of(const ir::Graph& graph, int id, int of) {
  const ir::Shape& shape = graph.value(of).shape;
  while (id != of) {
    const ir::Value& v = graph.value(id);
    if (v.alias_of < 0 || v.alias_byte_offset != 0 || v.shape != shape) return false;
    id = v.alias_of;
  }
  return true;
}

}  // namespace

void fuse_conv_residual(ir::Graph& graph, const std::function<bool(const ir::Op&)>& takes_residual) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& add = graph.ops[i];
    if (add.kind != ir::kind::binary || static_cast<rt::BinaryOp>(add.i("op")) != rt::BinaryOp::Add ||
        add.f("alpha") != 1.0 || add.inputs.size() != 2)
      continue;
    const ir::Value& out = graph.value(add.outputs[0]);
    if (out.dtype != ir::DType::Float32) continue;
    for (int side = 0; side < 2; ++side) {
      const int conv_out = add.inputs[static_cast<size_t>(side)];
      const int skip = add.inputs[static_cast<size_t>(1 - side)];
      if (graph.value(conv_out).shape != out.shape || graph.value(skip).shape != out.shape ||
          graph.value(skip).dtype != ir::DType::Float32 ||
          graph.storage_root(conv_out) == graph.storage_root(skip))
        continue;
      const int p = producer_of(graph, conv_out);
      if (p < 0 || static_cast<size_t>(p) >= i) continue;
      const ir::Op& conv = graph.ops[static_cast<size_t>(p)];
      // The add may read the convolution's result through a view of all of it (the
      // frontend's alias: torchvision's `out += identity` reads one).
      // A GEMM (a linear layer, or a convolution that convert_to_channels_last.cpp made one)
      // takes the residual densely, row after row of its dense result.
      const bool gemm = conv.kind == ir::kind::gemm && conv.i("ldc") == conv.i("n");
      if ((conv.kind != ir::kind::conv2d && !gemm) || !whole_view_of(graph, conv_out, conv.outputs[0]) ||
          conv.inputs.size() > 3 || !takes_residual(conv))
        continue;
      // The convolution's result must be read by the add alone, and carry no clamp of its
      // own (the clamp comes after the add).
      if (readers_of_storage(graph, conv_out).size() != 1) continue;
      if (conv.f(ir::attr::clamp_lo) != -INFINITY || conv.f(ir::attr::clamp_hi) != INFINITY) continue;
      ir::Op fused = conv;
      fused.inputs.resize(4, -1);
      fused.inputs[3] = skip;
      fused.outputs[0] = add.outputs[0];
      if (add.has(ir::attr::clamp_lo)) {
        fused.attrs[ir::attr::clamp_lo] = add.f(ir::attr::clamp_lo);
        fused.attrs[ir::attr::clamp_hi] = add.f(ir::attr::clamp_hi);
      }
      fused.loc = add.loc;
      graph.ops[i] = fused;
      graph.ops.erase(graph.ops.begin() + p);
      --i;
      break;
    }
  }
}

}  // namespace aotc::passes
