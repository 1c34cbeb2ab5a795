// cpu_pipeline.cpp - the CPU target's passes in order (run_cpu_pipeline, passes.h).
#include <aotc/rt/kernels.h>

#include <cstdio>

#include "../ops/spatial.h"
#include "passes.h"

namespace aotc::passes {

void run_cpu_pipeline(ir::Graph& graph, const CpuPipelineOptions& options) {
  const bool verbose = options.verbose;
  if (verbose) std::fprintf(stderr, "aotc: IR after lowering:\n%s", graph.dump().c_str());
  run_default_passes(graph, verbose);
  if (verbose) std::fprintf(stderr, "aotc: IR after passes:\n%s", graph.dump().c_str());
  // CPU only (the CUDA target makes every 1x1 convolution an NHWC GEMM of its own): before
  // the epilogue fusions, which then see a gemm.
  run_step(graph, verbose, "single_pixel_conv_to_gemm", single_pixel_conv_to_gemm);
  // CPU only: the CUDA generators read the convolutions' weights as they are.
  if (options.winograd) run_step(graph, verbose, "select_winograd", select_winograd);
  // Before the residual: the GELU comes first in the GEMM's epilogue (as on CUDA).
  run_step(graph, verbose, "fuse_gemm_gelu", [](ir::Graph& g) { fuse_gemm_gelu(g, "AOTC_CPU_FUSE_GELU"); });
  // A ResNet block's add (and the relu after it, fused again) into the convolution before
  // it: the GEMM and Winograd kernels add it as they write; depthwise has no such epilogue.
  // Likewise a transformer block's residual add into the linear layer before it (vit_b_16:
  // 24 adds of 197 x 768 floats), which both GEMM kernels start their sums from.
  run_step(graph, verbose, "fuse_conv_residual", [](ir::Graph& g) {
    fuse_conv_residual(g, [](const ir::Op& op) {
      if (op.kind == ir::kind::gemm) return true;
      return op.kind == ir::kind::conv2d && !rt::conv2d_is_depthwise(ops::conv2d_params_of(op));
    });
  });
  run_step(graph, verbose, "fuse_activation", [](ir::Graph& g) { fuse_activation(g); });
  run_step(graph, verbose, "fuse_quantize_layout", fuse_quantize_layout);
  // Both choose kernels that the runtime runs on AVX-512 only.
  const bool avx512 = options.avx512_target;
  run_step(graph, verbose, "fuse_expand_depthwise",
           [avx512](ir::Graph& g) { fuse_expand_depthwise(g, avx512); });
  run_step(graph, verbose, "select_pointwise_rows",
           [rows = options.pointwise_rows_target, threads = options.cpu_threads](ir::Graph& g) {
             select_pointwise_rows(g, rows, threads);
           });
  run_step(graph, verbose, "prepack_gemm_weights", prepack_gemm_weights);
}

}  // namespace aotc::passes
