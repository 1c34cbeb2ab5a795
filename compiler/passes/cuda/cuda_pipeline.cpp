// cuda_pipeline.cpp - the CUDA target's passes in order (run_cuda_pipeline, cuda_passes.h).
#include <aotc/rt/cuda/conv2d_plan.h>
#include <aotc/rt/kernels.h>

#include <cstdio>

#include "../../ops/cuda/cuda_registry.h"
#include "../passes.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {

void run_cuda_pipeline(ir::Graph& graph, rt::cuda::Precision precision, bool verbose, bool winograd) {
  if (verbose) std::fprintf(stderr, "aotc: IR after lowering:\n%s", graph.dump().c_str());
  run_default_passes(graph, verbose);
  if (verbose) std::fprintf(stderr, "aotc: IR after passes:\n%s", graph.dump().c_str());
  // The CUDA generators replace the CPU ones: every op needs one.
  ops::cuda::check_cuda_support(graph);
  run_cuda_passes(graph, precision, verbose, winograd);
  if (verbose) std::fprintf(stderr, "aotc: IR for CUDA:\n%s", graph.dump().c_str());
}

void run_cuda_passes(ir::Graph& graph, rt::cuda::Precision precision, bool verbose, bool winograd) {
  // relu / clamp reading only a binary op's result (the residual add of a ResNet block)
  // becomes that op's clamp epilogue: only the CUDA generator of "binary" reads it.
  run_step(graph, verbose, "fuse_activation(binary)", [](ir::Graph& g) {
    fuse_activation(g, [](const ir::Graph& gr, const ir::Op& producer, const ir::Op& act) {
      return producer.kind == ir::kind::binary && !producer.has(ir::attr::clamp_lo) &&
             gr.value(producer.outputs[0]).shape == gr.value(act.outputs[0]).shape;
    });
  });
  run_step(graph, verbose, "fuse_gemm_gelu", [](ir::Graph& g) { fuse_gemm_gelu(g, "AOTC_CUDA_FUSE_GELU"); });
  run_step(graph, verbose, "convert_to_channels_last",
           [precision](ir::Graph& g) { convert_to_channels_last(g, precision); });
  // Again: in NHWC a layer scale after a permute back scales the GEMM's own result.
  run_step(graph, verbose, "fold_gemm_channel_scale", fold_gemm_channel_scale);
  // Before the GEMM choices: the residual adds it takes are not left for fuse_conv_residual.
  run_step(graph, verbose, "fuse_row_gathers", fuse_row_gathers);
  // Before the GEMM choices, which would give its layers 16-bit weights.
  run_step(graph, verbose, "fuse_squeeze_excitation",
           [precision](ir::Graph& g) { fuse_squeeze_excitation(g, precision); });
  run_step(graph, verbose, "choose_conv2d_paths",
           [precision](ir::Graph& g) { choose_conv2d_paths(g, precision); });
  run_step(graph, verbose, "choose_gemm_operands",
           [precision](ir::Graph& g) { choose_gemm_operands(g, precision); });
  run_step(graph, verbose, "fuse_conv_residual", [](ir::Graph& g) {
    fuse_conv_residual(g, [](const ir::Op& conv) {
      if (conv.kind == ir::kind::gemm) return true;  // every GEMM path adds a residual in its epilogue
      if (!conv.has(ir::attr::cuda_path)) return false;
      const auto path = static_cast<rt::cuda::Conv2dPath>(conv.i(ir::attr::cuda_path));
      return path == rt::cuda::Conv2dPath::ImplicitGemm || path == rt::cuda::Conv2dPath::Pointwise ||
             path == rt::cuda::Conv2dPath::Im2colGemm;
    });
  });
  run_step(graph, verbose, "fuse_epilogue_silu", fuse_epilogue_silu);
  run_step(graph, verbose, "fold_depthwise_input", fold_depthwise_input);
  if (winograd)
    run_step(graph, verbose, "choose_conv3d_winograd",
             [precision](ir::Graph& g) { choose_conv3d_winograd(g, precision); });
  // Last of the choices: it reads every GEMM's operands and epilogue as they end up.
  run_step(graph, verbose, "store_activations_16bit",
           [precision](ir::Graph& g) { store_activations_16bit(g, precision); });
  // After it: the convolution writes its output in the type chosen there, the pooling float32.
  run_step(graph, verbose, "fuse_depthwise_pool", fuse_depthwise_pool);
  // Each op's scratch is its CUDA generator's, and another memory plan places it.
  const ops::cuda::CudaRegistry& r = ops::cuda::CudaRegistry::get();
  for (ir::Op& op : graph.ops) {
    const ops::cuda::CudaScratchFn* scratch = r.find_scratch(op.kind);
    op.scratch_bytes = scratch ? (*scratch)(op) : 0;
    // The CPU convolution's packing scratch is optional (it packs per thread without it);
    // every CUDA kernel needs the scratch it asks for.
    op.scratch_optional = false;
    op.thread_scratch_bytes = 0;  // CPU GEMM packing: not on the GPU
  }
  run_step(graph, verbose, "plan_memory", [](ir::Graph& g) { plan_memory(g); });
}

}  // namespace aotc::passes::cuda
