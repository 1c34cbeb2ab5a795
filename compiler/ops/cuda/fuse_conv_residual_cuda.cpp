// fuse_conv_residual_cuda: the residual add of a ResNet block, y = conv(x) + skip (and the
// relu that fuse_binary_clamp put on the add), becomes the epilogue of that convolution when
// it takes a GEMM path (cuBLASLt's C operand or the epilogue pass adds the residual, the
// implicit-GEMM kernel as it writes): the block's output is written once, not read back and
// written again by an add. The fused op takes the add's place in
// the op order, because `skip` may be computed after the convolution (the downsample
// branch); everything the convolution reads exists by then.
#include <aotc/rt/cuda/conv2d_plan.h>
#include <aotc/rt/kernels.h>

#include <cmath>

#include "../../passes/passes.h"
#include "cuda_registry.h"

namespace aotc::ops::cuda {
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

void fuse_conv_residual(ir::Graph& graph) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& add = graph.ops[i];
    if (add.kind != "binary" || static_cast<rt::BinaryOp>(add.i("op")) != rt::BinaryOp::Add ||
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
      const int p = passes::producer_of(graph, conv_out);
      if (p < 0 || static_cast<size_t>(p) >= i) continue;
      const ir::Op& conv = graph.ops[static_cast<size_t>(p)];
      // The add may read the convolution's result through a view of all of it (the
      // frontend's alias: torchvision's `out += identity` reads one).
      if (conv.kind != "conv2d" || !conv.has("cuda_path") ||
          !whole_view_of(graph, conv_out, conv.outputs[0]) || conv.inputs.size() > 3)
        continue;
      const auto path = static_cast<rt::cuda::Conv2dPath>(conv.i("cuda_path"));
      if (path != rt::cuda::Conv2dPath::ImplicitGemm && path != rt::cuda::Conv2dPath::Pointwise &&
          path != rt::cuda::Conv2dPath::Im2colGemm)
        continue;
      // The convolution's result must be read by the add alone, and carry no clamp of its
      // own (the clamp comes after the add).
      if (passes::readers_of_storage(graph, conv_out).size() != 1) continue;
      if (conv.f("clamp_lo") != -INFINITY || conv.f("clamp_hi") != INFINITY) continue;
      ir::Op fused = conv;
      fused.inputs.resize(4, -1);
      fused.inputs[3] = skip;
      fused.outputs[0] = add.outputs[0];
      if (add.has("clamp_lo")) {
        fused.attrs["clamp_lo"] = add.f("clamp_lo");
        fused.attrs["clamp_hi"] = add.f("clamp_hi");
      }
      fused.loc = add.loc;
      graph.ops[i] = fused;
      graph.ops.erase(graph.ops.begin() + p);
      --i;
      break;
    }
  }
}

}  // namespace aotc::ops::cuda
