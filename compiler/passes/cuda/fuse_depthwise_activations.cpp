// fuse_depthwise_activations: the activations around an NHWC depthwise convolution
// ("depthwise_conv2d_nhwc") move into it, each pass over the expanded tensor gone:
//   - input: the unary op (SiLU, hardswish, ...) that alone reads the value the convolution
//     reads, or the clamp (relu6) of the GEMM convolution that alone feeds it where cuBLASLt
//     cannot take that clamp in its epilogue: the kernel applies it to each value it loads;
//   - output: the unary op that alone reads the convolution's result: applied after its
//     bias and clamp.
// EfficientNet's expansions and depthwise layers (SiLU after each), MobileNet's relu6 after
// each expansion. Activations of rt::unary_fusable only; the padding stays zero, as the
// kernel skips the taps that read it.
#include <aotc/rt/kernels.h>

#include <cmath>
#include <vector>

#include "../passes.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {
namespace {

bool fusable_unary(const ir::Graph& g, const ir::Op& op) {
  if (op.kind != ir::kind::unary || op.inputs.size() != 1 || op.outputs.size() != 1 ||
      !rt::unary_fusable(static_cast<rt::UnaryOp>(op.i("op"))))
    return false;
  const ir::Value& in = g.value(op.inputs[0]);
  const ir::Value& out = g.value(op.outputs[0]);
  return in.dtype == ir::DType::Float32 && out.dtype == ir::DType::Float32 && in.shape == out.shape;
}

std::vector<double> activation_of(const ir::Op& unary) {
  return {static_cast<double>(unary.i("op")), unary.has("a") ? unary.f("a") : 0.0,
          unary.has("b") ? unary.f("b") : 0.0};
}

bool has_clamp(const ir::Op& op) {
  return (op.has(ir::attr::clamp_lo) && op.f(ir::attr::clamp_lo) != -INFINITY) ||
         (op.has(ir::attr::clamp_hi) && op.f(ir::attr::clamp_hi) != INFINITY);
}

// The input side of depthwise op `d`; true when an op was removed (at index `removed`).
bool fuse_input(ir::Graph& g, size_t d, size_t& removed) {
  ir::Op& dw = g.ops[d];
  if (dw.has(ir::attr::input_activation)) return false;
  const int in = sole_whole_read(g, dw.inputs[0]);
  if (in < 0 || in != dw.inputs[0]) return false;
  const int p = producer_of(g, in);
  if (p < 0) return false;
  ir::Op& producer = g.ops[static_cast<size_t>(p)];
  if (fusable_unary(g, producer) && producer.outputs[0] == in) {
    dw.attrs[ir::attr::input_activation] = activation_of(producer);
    dw.inputs[0] = producer.inputs[0];
    removed = static_cast<size_t>(p);
    return true;
  }
  // A GEMM convolution's clamp other than relu (which cuBLASLt's epilogue takes for free).
  if (producer.kind == ir::kind::gemm && has_clamp(producer) && producer.outputs[0] == in) {
    const double lo = producer.f(ir::attr::clamp_lo), hi = producer.f(ir::attr::clamp_hi);
    if (lo == 0.0 && hi == INFINITY) return false;
    dw.attrs[ir::attr::input_activation] =
        std::vector<double>{static_cast<double>(rt::UnaryOp::Clamp), lo, hi};
    producer.attrs[ir::attr::clamp_lo] = -INFINITY;
    producer.attrs[ir::attr::clamp_hi] = INFINITY;
  }
  return false;
}

// The output side: true when the unary op that read the result was removed (at `removed`).
bool fuse_output(ir::Graph& g, size_t d, size_t& removed) {
  ir::Op& dw = g.ops[d];
  if (dw.has(ir::attr::output_activation)) return false;
  const int out = dw.outputs[0];
  const std::vector<int> readers = readers_of_storage(g, out);
  if (readers.size() != 1 || readers[0] < 0) return false;
  const ir::Op& unary = g.ops[static_cast<size_t>(readers[0])];
  if (!fusable_unary(g, unary) || unary.inputs[0] != out) return false;
  dw.attrs[ir::attr::output_activation] = activation_of(unary);
  dw.outputs[0] = unary.outputs[0];
  removed = static_cast<size_t>(readers[0]);
  return true;
}

}  // namespace

void fuse_depthwise_activations(ir::Graph& graph) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    if (graph.ops[i].kind != ir::kind::depthwise_conv2d_nhwc) continue;
    size_t removed = 0;
    if (fuse_input(graph, i, removed)) {
      graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(removed));
      if (removed < i) --i;
    }
    if (fuse_output(graph, i, removed))
      graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(removed));
  }
}

}  // namespace aotc::passes::cuda
