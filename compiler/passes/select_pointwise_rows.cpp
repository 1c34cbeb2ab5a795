// select_pointwise_rows (CPU target only, after fuse_expand_depthwise): a 1x1 stride-1
// conv2d with a constant weight on a small plane (rt::conv2d_pointwise_rows_prefers) is
// computed with the output positions as the tile's rows (conv2d_pointwise_rows.cpp): its
// weight input becomes the weight transposed and packed in groups of 32 output channels
// (rt::conv2d_pointwise_rows_pack), computed here once, and the op's attribute
// "pointwise_rows" tells its generator. The op then needs no scratch.
// AOTC_CPU_POINTWISE_ROWS=0 (read when compiling) leaves every 1x1 convolution on the
// implicit GEMM, for comparisons. The memory plan must be made again after it.
//
// Only for a host with AVX-512 (the default target is the host): there the kernel's tiles
// are 7 positions x 32 channels. Its AVX2 tiles (5 x 16) were slower than the implicit GEMM
// on these layers (bench/pointwise_rows.cpp, bench/results_cpu.md), so without AVX-512, and
// for cross targets, nothing changes. A
// library built here and run on a machine without AVX-512 still runs these layers
// correctly, on the AVX2 tiles.
#include <aotc/rt/kernels.h>

#include <cstdlib>
#include <string>

#include "../ops/spatial.h"
#include "passes.h"

namespace aotc::passes {

bool host_runs_avx512_kernels() {
#if defined(__x86_64__)
  // The runtime's own switch (use_avx512 in kernel_util.h) turns AVX-512 off the same way.
  if (const char* env = std::getenv("AOTC_CPU_AVX512"); env && std::string(env) == "0") return false;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

void select_pointwise_rows(ir::Graph& graph, bool avx512_target, int cpu_threads) {
  if (!avx512_target) return;
  if (const char* env = std::getenv("AOTC_CPU_POINTWISE_ROWS"); env && std::string(env) == "0") return;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& op = graph.ops[i];
    if (op.kind != ir::kind::conv2d || op.has(ir::attr::winograd) || op.has(ir::attr::pointwise_rows) ||
        op.inputs.size() < 3)
      continue;
    const rt::Conv2dParams p = ops::conv2d_params_of(op);
    if (!rt::conv2d_pointwise_rows_prefers(p, cpu_threads)) continue;
    const float* w = constant_floats(graph, op.inputs[1], p.c_out * p.c_in);
    if (!w) continue;
    // The packing sees only what its recipe names (the planes vary between aotc --dim's samples).
    rt::Conv2dParams pack;
    pack.c_out = p.c_out;
    pack.c_in = p.c_in;
    const std::string recipe =
        "select_pointwise_rows c_out=" + std::to_string(p.c_out) + " c_in=" + std::to_string(p.c_in);
    const int packed_id = add_derived_f32_constant(
        graph, recipe, {op.inputs[1]}, {p.c_in, (p.c_out + 15) / 16 * 16},
        [&] {
          std::vector<float> packed(static_cast<size_t>(rt::conv2d_pointwise_rows_packed_floats(pack)));
          rt::conv2d_pointwise_rows_pack(pack, w, packed.data());
          return packed;
        },
        graph.value(op.inputs[1]).name + ".packed_rows");
    ir::Op& conv = graph.ops[i];
    conv.inputs[1] = packed_id;
    conv.attrs[ir::attr::pointwise_rows] = int64_t{1};
    conv.scratch_bytes = 0;
    conv.scratch_optional = false;
    conv.thread_scratch_bytes = 0;
  }
}

}  // namespace aotc::passes
