// prepack_gemm_weights (CPU target only, after the default passes): a "gemm" whose right
// operand (the weight of a linear layer, or mm/addmm/matmul by a constant) is a float32
// constant gets that operand packed here, once, into the layout the runtime's micro-kernel
// reads (rt::gemm_prepack_weights: depth blocks of 16-column panels, alpha folded in), and is marked
// "prepacked" for its generator, which then calls rt::gemm_prepacked_f32: a run no longer
// packs the weight (Eigen did, on every run). The packed constant replaces the original,
// which stays in the weights only if something else reads it; its size is the original's
// with the columns rounded up to 16. A gemm whose weight is a run-time tensor keeps the
// Eigen path. The memory plan must be made again after it (the op needs no thread scratch).
#include <aotc/rt/kernels.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <tuple>

#include "../ops/gemm.h"
#include "passes.h"

namespace aotc::passes {

void prepack_gemm_weights(ir::Graph& graph) {
  // Ops sharing one weight (same view, same use) share its packed form.
  std::map<std::tuple<int, bool, int64_t, int64_t, int64_t, uint32_t>, int> packed_of;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& op = graph.ops[i];
    if (op.kind != ir::kind::gemm || op.has(ir::attr::prepacked) || op.inputs.size() < 2) continue;
    const rt::GemmParams p = ops::gemm_params_of(op);
    if (!rt::gemm_prepack_applies(p) || p.ldb < (p.trans_b ? p.k : p.n)) continue;
    // Where Eigen does not pack either (a matrix-vector product, e.g. a classifier at
    // batch 1, or a tiny one), it stays: its matrix-vector kernel was faster there
    // (bench/results_cpu.md).
    // With sizes that vary, m (rows of activations) is taken as large: one choice for all.
    if (!rt::gemm_block_packs(graph.sizes_vary ? std::max<int64_t>(p.m, 64) : p.m, p.n, p.k, p.alpha))
      continue;
    const int b = op.inputs[1];
    const int64_t rows = p.trans_b ? p.n : p.k, cols = p.trans_b ? p.k : p.n;  // as stored
    const float* data = constant_floats(graph, b, (rows - 1) * p.ldb + cols);
    if (!data) continue;
    uint32_t alpha_bits;
    std::memcpy(&alpha_bits, &p.alpha, sizeof alpha_bits);
    const auto key = std::make_tuple(b, p.trans_b, p.k, p.n, p.ldb, alpha_bits);
    auto found = packed_of.find(key);
    int packed_id;
    if (found != packed_of.end()) {
      packed_id = found->second;
    } else {
      // The packing sees only what its recipe names (m varies between aotc --dim's samples).
      rt::GemmParams pack;
      pack.k = p.k;
      pack.n = p.n;
      pack.trans_b = p.trans_b;
      pack.ldb = p.ldb;
      pack.alpha = p.alpha;
      const std::string recipe = "prepack_gemm_weights k=" + std::to_string(p.k) +
                                 " n=" + std::to_string(p.n) + " trans_b=" + std::to_string(p.trans_b) +
                                 " ldb=" + std::to_string(p.ldb) + " alpha=" + std::to_string(alpha_bits);
      packed_id = add_derived_f32_constant(
          graph, recipe, {b}, {p.k, (p.n + 15) / 16 * 16},
          [&] {
            std::vector<float> packed(static_cast<size_t>(rt::gemm_prepacked_floats(pack.n, pack.k)));
            rt::gemm_prepack_weights(pack, data, packed.data());
            return packed;
          },
          graph.value(b).name + ".packed");
      packed_of.emplace(key, packed_id);
    }
    ir::Op& gemm = graph.ops[i];
    gemm.inputs[1] = packed_id;
    gemm.attrs[ir::attr::prepacked] = int64_t{1};
    gemm.attrs["alpha"] = 1.0;  // folded into the packed weight
    gemm.thread_scratch_bytes = 0;
  }
}

}  // namespace aotc::passes
