// fuse_squeeze_excitation: a squeeze-and-excitation block's gate, s = gate(fc2(act(fc1(x)))),
// becomes one "squeeze_excitation" op (squeeze_excitation.cu), where x is the block's pooled
// input (n x c), fc1 and fc2 its 1x1 convolutions (NHWC GEMMs of m = n rows, made by
// convert_to_channels_last.cpp), act a SiLU, a relu (the GEMM's clamp) or none, and gate a
// sigmoid or hardsigmoid. EfficientNet has 16 such blocks: each ran two cuBLAS products of
// one row an image, a split-K reduction for some, and the gate's pass, each a launch of a
// few microseconds on work of some thousands of multiply-adds. Float32 precisions only
// (fp32, tf32: the kernel computes in float32, at least as exact as tf32's products); at
// fp16 / bf16 the gate and its GEMMs stay in the 16-bit chain store_activations_16bit.cpp
// keeps. Before choose_gemm_operands, which would take the GEMMs' weights to 16 bits.
// AOTC_CUDA_FUSE_SE=0 (read when compiling) keeps the GEMMs and the gate's pass, for A/B
// (bench/results_gpu.md).
#include <aotc/rt/cuda/squeeze_excitation_plan.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "../../ops/gemm.h"
#include "../passes.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {
namespace {

const ir::Op* op_at(const ir::Graph& graph, int index) {
  return index < 0 ? nullptr : &graph.ops[static_cast<size_t>(index)];
}

// The op that writes value id itself (not a view of it), when that value's only reader is
// the op `reader` (graph outputs count as readers); else -1.
int sole_producer(const ir::Graph& graph, int id, const ir::Op& reader) {
  const int at = producer_of(graph, id);
  if (at < 0 || graph.ops[static_cast<size_t>(at)].outputs.size() != 1 ||
      graph.ops[static_cast<size_t>(at)].outputs[0] != id || graph.value(id).dtype != ir::DType::Float32)
    return -1;
  const std::vector<int> readers = readers_of_storage(graph, id);
  if (readers.size() != 1 || readers[0] < 0 || &graph.ops[static_cast<size_t>(readers[0])] != &reader)
    return -1;
  return at;
}

// A 1x1 convolution of one pixel an image as an NHWC GEMM: rows x (n x k weights)^T + a
// bias per column, dense, float32, no residual, activation or 16-bit operand; k and n are
// its input and output channels.
bool plain_layer(const ir::Graph& graph, const ir::Op& op, int64_t rows) {
  if (op.kind != ir::kind::gemm || op.inputs.size() < 3 || op.outputs.size() != 1 ||
      (op.inputs.size() > 3 && op.inputs[3] >= 0) || op.has(ir::attr::activation) ||
      op.has(ir::attr::conv_geometry) || (op.has(ir::attr::a_16bit) && op.b(ir::attr::a_16bit)) ||
      (op.has(ir::attr::weights_16bit) && op.b(ir::attr::weights_16bit)))
    return false;
  const rt::GemmParams p = ops::gemm_params_of(op);
  const bool bias = p.bias_kind == rt::BiasKind::PerColumn && op.inputs[2] >= 0;
  return p.m == rows && !p.trans_a && p.trans_b && p.lda == p.k && p.ldb == p.k && p.ldc == p.n &&
         p.alpha == 1.0f && (bias ? p.beta == 1.0f : p.bias_kind == rt::BiasKind::None || op.inputs[2] < 0) &&
         constant_floats(graph, op.inputs[1], p.n * p.k) &&
         (!bias || constant_floats(graph, op.inputs[2], p.n));
}

bool fuse_at(ir::Graph& graph, size_t gate_index) {
  const ir::Op& gate = graph.ops[gate_index];
  if (gate.kind != ir::kind::unary || gate.inputs.size() != 1 || gate.outputs.size() != 1) return false;
  const auto gate_op = static_cast<rt::UnaryOp>(gate.i("op"));
  if (gate_op != rt::UnaryOp::Sigmoid && gate_op != rt::UnaryOp::Hardsigmoid) return false;
  const ir::Op* fc2 = op_at(graph, sole_producer(graph, gate.inputs[0], gate));
  if (!fc2 || fc2->kind != ir::kind::gemm) return false;
  const int64_t n = ops::gemm_params_of(*fc2).m;
  if (!plain_layer(graph, *fc2, n)) return false;
  // fc2's input: fc1's result, or a SiLU of it.
  const ir::Op* between = op_at(graph, sole_producer(graph, fc2->inputs[0], *fc2));
  if (!between) return false;
  rt::GemmActivation act = rt::GemmActivation::None;
  const ir::Op* fc1 = between;
  if (between->kind == ir::kind::unary) {
    if (static_cast<rt::UnaryOp>(between->i("op")) != rt::UnaryOp::Silu) return false;
    act = rt::GemmActivation::Silu;
    fc1 = op_at(graph, sole_producer(graph, between->inputs[0], *between));
    if (!fc1) return false;
  }
  if (!plain_layer(graph, *fc1, n)) return false;
  const rt::GemmParams p1 = ops::gemm_params_of(*fc1), p2 = ops::gemm_params_of(*fc2);
  const int64_t c = p1.k, r = p1.n;
  const float lo = fc1->has(ir::attr::clamp_lo) ? fc1->f(ir::attr::clamp_lo) : -INFINITY;
  const float hi = fc1->has(ir::attr::clamp_hi) ? fc1->f(ir::attr::clamp_hi) : INFINITY;
  // A clamp after the SiLU would come after the unary op, not in fc1: fc1 clamps only alone.
  if (p2.k != r || p2.n != c || !rt::cuda::squeeze_excitation_fits(n, c, r) ||
      (act == rt::GemmActivation::Silu && (lo != -INFINITY || hi != INFINITY)) ||
      (fc2->has(ir::attr::clamp_lo) && fc2->f(ir::attr::clamp_lo) != -INFINITY) ||
      (fc2->has(ir::attr::clamp_hi) && fc2->f(ir::attr::clamp_hi) != INFINITY) ||
      graph.value(fc1->inputs[0]).dtype != ir::DType::Float32 ||
      graph.value(gate.outputs[0]).dtype != ir::DType::Float32)
    return false;

  ir::Op se = gate;  // its place in the order and its source line
  se.kind = ir::kind::squeeze_excitation;
  const int w2 = fc2->inputs[1];
  const int w2t = add_derived_f32_constant(
      graph, "squeeze-excitation transpose r=" + std::to_string(r) + " c=" + std::to_string(c), {w2}, {r, c},
      [&graph, w2, r, c] {
        const float* src = constant_floats(graph, w2, r * c);  // c x r
        std::vector<float> t(static_cast<size_t>(r * c));
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t j = 0; j < r; ++j) t[static_cast<size_t>(j * c + ch)] = src[ch * r + j];
        return t;
      },
      graph.value(w2).name + "_t");
  const auto bias_of = [](const ir::Op& fc, const rt::GemmParams& p) {
    return p.bias_kind == rt::BiasKind::PerColumn ? fc.inputs[2] : -1;
  };
  // (fc1 and fc2 stay valid: add_derived_f32_constant adds values, not ops.)
  se.inputs = {fc1->inputs[0], fc1->inputs[1], bias_of(*fc1, p1), w2t, bias_of(*fc2, p2)};
  se.attrs = {{"n", n},
              {"c", c},
              {"r", r},
              {ir::attr::activation, static_cast<int64_t>(act)},
              {ir::attr::clamp_lo, static_cast<double>(lo)},
              {ir::attr::clamp_hi, static_cast<double>(hi)},
              {"gate", static_cast<int64_t>(gate_op)}};
  const ir::Op* removed[] = {fc1, between == fc1 ? nullptr : between, fc2};
  std::vector<ir::Op> kept;
  kept.reserve(graph.ops.size());
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op* op = &graph.ops[i];
    if (op == removed[0] || op == removed[1] || op == removed[2]) continue;
    kept.push_back(i == gate_index ? se : *op);
  }
  graph.ops = std::move(kept);
  return true;
}

}  // namespace

void fuse_squeeze_excitation(ir::Graph& graph, rt::cuda::Precision precision) {
  if (const char* env = std::getenv("AOTC_CUDA_FUSE_SE"); env && std::string(env) == "0") return;
  if (precision != rt::cuda::Precision::Fp32 && precision != rt::cuda::Precision::Tf32) return;
  for (size_t i = 0; i < graph.ops.size(); ++i)
    if (fuse_at(graph, i)) i = 0;  // ops before it went: look again from the start
}

}  // namespace aotc::passes::cuda
