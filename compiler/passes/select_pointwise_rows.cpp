// select_pointwise_rows (CPU target only, after fuse_expand_depthwise): a 1x1 stride-1
// conv2d with a constant weight on a small plane (rt::conv2d_pointwise_rows_prefers) is
// computed with the output positions as the tile's rows (conv2d_pointwise_rows.cpp): its
// weight input becomes the weight transposed and packed in groups of 32 output channels
// (rt::conv2d_pointwise_rows_pack), computed here once, and the op's attribute
// "pointwise_rows" tells its generator. The op then needs no scratch. The memory plan must
// be made again after it.
//
// Only for a host where that kernel is the faster one (host_prefers_pointwise_rows; the
// default target is the host). Its AVX2 tiles (5 x 16) were slower than the implicit GEMM
// on these layers (bench/pointwise_rows.cpp, bench/results_cpu.md), so it needs AVX-512
// (tiles of 7 positions x 32 channels). There it won on an AMD Zen 4, whose 512-bit
// instructions run as two 256-bit halves, and lost on an Intel Xeon with two full-width FMA
// units, at every thread count from 1 to 16. Elsewhere, and for cross targets, nothing
// changes. A library built here and run on a machine without AVX-512 still runs these
// layers correctly, on the AVX2 tiles.
#include <aotc/rt/kernels.h>

#include <cstdlib>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

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

bool host_prefers_pointwise_rows() {
  if (const char* env = std::getenv("AOTC_CPU_POINTWISE_ROWS"); env && *env) return std::string(env) != "0";
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
  const bool amd = ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163;  // "AuthenticAMD"
  if (!amd || !__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  unsigned family = (eax >> 8) & 0xf;
  if (family == 0xf) family += (eax >> 20) & 0xff;
  // Family 0x19 is Zen 3 and Zen 4; of them only Zen 4 has AVX-512. Zen 5 (0x1a) has
  // full-width units on its server and desktop parts and was not measured.
  return family == 0x19;
#else
  return false;
#endif
}

void select_pointwise_rows(ir::Graph& graph, bool pointwise_rows_target, int cpu_threads) {
  if (!pointwise_rows_target) return;
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
