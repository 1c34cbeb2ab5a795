// cuda_passes.h - the CUDA target's passes (aotc --target cuda), one per file, and its
// pipeline (cuda_pipeline.cpp), which runs them in order after run_default_passes.
#pragma once

#include <aotc/rt/cuda/precision.h>

#include "../../ir/graph.h"

namespace aotc::passes::cuda {

// The CUDA target's pipeline: the default passes, then a check that every op has a CUDA
// generator and float32 operands (ops::cuda::check_cuda_support), then run_cuda_passes: a
// relu/clamp into the binary op (residual add) it follows and a GELU into the linear layer
// before it, a CNN in NHWC where that pays (its convolutions become GEMMs), chains of copies
// that only reorder rows (a Swin block's shift and windows) as one row order, at fp32 / tf32
// a squeeze-and-excitation gate's two layers and gate as one op, the other
// convolutions' paths for the precision (weights converted for fp16/bf16), the GEMMs'
// operands, residual adds into GEMMs and GEMM convolutions, a SiLU into the GEMM or depthwise
// convolution before it, a GEMM convolution's epilogue into the depthwise convolution reading
// it, at fp16 / bf16 the activations that only readers of 16-bit values read kept in the
// 16-bit type, a squeeze-and-excitation pooling into the depthwise convolution it reads;
// then each op's CUDA scratch (no per-thread
// CPU scratch) and the memory plan. verbose logs each step (as run_cpu_pipeline does) and the IR
// after the default passes and at the end.
// winograd: aotc --winograd (choose_conv3d_winograd runs).
void run_cuda_pipeline(ir::Graph& graph, rt::cuda::Precision precision, bool verbose, bool winograd = true);
// Its CUDA part, for a graph that ran the default passes and check_cuda_support.
void run_cuda_passes(ir::Graph& graph, rt::cuda::Precision precision, bool verbose, bool winograd = true);

// The passes it runs.
void convert_to_channels_last(ir::Graph& graph,
                              rt::cuda::Precision precision);                // convert_to_channels_last.cpp
void choose_conv2d_paths(ir::Graph& graph, rt::cuda::Precision precision);   // choose_conv2d_paths.cpp
void choose_gemm_operands(ir::Graph& graph, rt::cuda::Precision precision);  // choose_gemm_operands.cpp
void fuse_row_gathers(ir::Graph& graph);                                     // fuse_row_gathers.cpp
void fold_depthwise_input(ir::Graph& graph);                                 // fold_depthwise_input.cpp
void fuse_epilogue_silu(ir::Graph& graph);                                   // fuse_epilogue_silu.cpp
void fuse_depthwise_pool(ir::Graph& graph);                                  // fuse_depthwise_pool.cpp
void fuse_squeeze_excitation(ir::Graph& graph,
                             rt::cuda::Precision precision);                   // fuse_squeeze_excitation.cpp
void choose_conv3d_winograd(ir::Graph& graph, rt::cuda::Precision precision);  // choose_conv3d_winograd.cpp
void store_activations_16bit(ir::Graph& graph,
                             rt::cuda::Precision precision);  // store_activations_16bit.cpp

// Whether value id is a float32 constant of its own (no view of a larger one), and a new
// constant holding it in the 16-bit type of precision (fp16 or bf16), rounded to nearest
// even (weights_16bit.cpp).
bool is_whole_f32_constant(const ir::Graph& graph, int id);
int converted_constant(ir::Graph& graph, int id, rt::cuda::Precision precision);

}  // namespace aotc::passes::cuda
