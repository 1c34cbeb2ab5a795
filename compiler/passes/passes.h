// passes.h - graph-to-graph transformations on aotc IR, one per file. Every target runs
// run_default_passes first; its pipeline then runs its own passes in order: the CPU's in
// cpu_pipeline.cpp (run_cpu_pipeline), CUDA's in cuda/cuda_pipeline.cpp
// (cuda/cuda_passes.h).
#pragma once

#include <aotc/rt/kernels.h>

#include <functional>
#include <string>
#include <vector>

#include "../ir/graph.h"

namespace aotc::passes {

// ---- the default passes, every target (run_default_passes, in this order) ----

// A batch norm (channel_affine) reading only a convolution's output is folded into the
// convolution's weights and bias.
void fold_batch_norm(ir::Graph& graph);
// relu / relu6 / hardtanh / clamp that alone read a conv, gemm, channel_affine or group
// norm result (producers whose kernels clamp on every target) become its clamp epilogue.
void fuse_activation(ir::Graph& graph);
// The same for the producers takes() accepts (a target's own, such as CUDA's binary op;
// the activation is the unary op that would go).
using TakesClamp = std::function<bool(const ir::Graph&, const ir::Op& producer, const ir::Op& activation)>;
void fuse_activation(ir::Graph& graph, const TakesClamp& takes);
// Removes ops whose results nobody reads.
void eliminate_dead_ops(ir::Graph& graph);
// An assemble whose one piece copies its input whole and in order (F.pad by zero) becomes an
// alias of the input; a piece that writes the whole output drops the fill before it
// (eliminate_identity_assembles.cpp).
void eliminate_identity_assembles(ir::Graph& graph);
// Linear layers that read the same input and feed only attention (separate query, key and
// value projections) become one GEMM with the weights stacked; the attention ops read its
// output through strides and offsets (merge_sibling_gemms.cpp).
void merge_sibling_gemms(ir::Graph& graph);
// A GEMM whose result alone is scaled per output column by a constant takes the scale into
// its weights and bias (fold_gemm_channel_scale.cpp).
void fold_gemm_channel_scale(ir::Graph& graph);
// Attention written out as its pieces (q @ k^T, scales, adds of constant masks, softmax, @ v:
// a Swin transformer's window attention) becomes one attention op reading q, k and v where
// they lie (fuse_attention.cpp).
void fuse_attention(ir::Graph& graph);
// An attention op whose output only a permuting copy reads (heads back side by side)
// writes it there through its out_strides; the copy goes (write_attention_permuted.cpp).
void write_attention_permuted(ir::Graph& graph);
// ---- every target, after its own passes ----

// Places every intermediate (and kernel scratch) in one arena by liveness; sets
// arena_offset, scratch_offset, graph.arena_bytes and graph.arena_lower_bound.
// order_search false keeps only the sorted placement orders (tests compare the two).
void plan_memory(ir::Graph& graph, bool order_search = true);
// One buffer of a planned arena: a value's bytes (value, its storage root) or an op's
// scratch (op), alive from op `first` to op `last` inclusive (a graph output to
// ops.size()), `size` bytes at `offset`.
struct PlannedBuffer {
  int value = -1;
  int op = -1;
  int first = 0, last = 0;
  int64_t size = 0;
  int64_t offset = -1;
};
// The buffers plan_memory placed in the graph's arena (after it ran), in no set order.
std::vector<PlannedBuffer> planned_buffers(const ir::Graph& graph);

// ---- the CPU target's passes (run_cpu_pipeline, in this order after the default ones) ----

// The CPU target's pipeline: run_default_passes, then select_winograd (where winograd),
// fuse_gemm_gelu, fuse_conv_residual, fuse_activation again, fuse_expand_depthwise,
// select_pointwise_rows and prepack_gemm_weights (cpu_pipeline.cpp). The caller plans the
// memory after it (a --dim build plans once per bucket). avx512_target: the target runs
// the runtime's AVX-512 kernels (a host build on a machine that has them:
// host_runs_avx512_kernels()); pointwise_rows_target: and it is a core where the
// positions-as-rows kernel beats the implicit GEMM (host_prefers_pointwise_rows()).
// verbose logs each step and the IR before and after the default passes.
struct CpuPipelineOptions {
  bool winograd = true;  // aotc --winograd on
  int cpu_threads = 0;   // aotc --cpu-threads: the threads the model will run on; 0: not said
  bool avx512_target = false;
  bool pointwise_rows_target = false;
  bool verbose = false;
};
void run_cpu_pipeline(ir::Graph& graph, const CpuPipelineOptions& options);

// CPU target only, after run_default_passes and before a new plan_memory: a 1x1
// convolution of a 1x1 plane (a squeeze-and-excitation layer) becomes a gemm, n x c_in
// times the weight transposed (single_pixel_conv_to_gemm.cpp). AOTC_CPU_PIXEL_GEMM=0 (read
// when compiling) leaves them convolutions, for comparisons.
void single_pixel_conv_to_gemm(ir::Graph& graph);
// CPU target only, after run_default_passes and before a new plan_memory: 3x3 stride-1
// convolutions with constant weights switch to Winograd F(2x2, 3x3) with weights
// transformed here (select_winograd.cpp).
void select_winograd(ir::Graph& graph);
// CPU target only, likewise: a gemm with a constant right operand gets it packed for the
// runtime's micro-kernel here instead of on every run (prepack_gemm_weights.cpp).
void prepack_gemm_weights(ir::Graph& graph);
// CPU target only, after the convolutions' epilogues are fused: a 1x1 expansion read only
// by a depthwise convolution becomes one op with it, conv2d_expand_depthwise, whose kernel
// never writes the expanded tensor (fuse_expand_depthwise.cpp), except where avx512_target
// (as for select_pointwise_rows) and the depthwise plane is narrow enough for the runtime's
// row-per-vector kernel (rt::conv2d_depthwise_rows_fits): apart, they are faster there.
// AOTC_CPU_FUSE_EXPAND_DEPTHWISE=0 (read when compiling) leaves them all apart, for comparisons.
void fuse_expand_depthwise(ir::Graph& graph, bool avx512_target);
// CPU target only, after fuse_expand_depthwise: a 1x1 stride-1 convolution with a constant
// weight on a small plane gets the positions as its tile's rows and its weight packed
// transposed here (select_pointwise_rows.cpp), when the target is a core where that kernel
// is the faster one (pointwise_rows_target: host_prefers_pointwise_rows() for the host
// target, false for a cross target) and the model runs on few threads (cpu_threads: aotc
// --cpu-threads, 0 when not said; rt::conv2d_pointwise_rows_prefers).
void select_pointwise_rows(ir::Graph& graph, bool pointwise_rows_target, int cpu_threads);
// This machine has AVX-512 (F and VL, as the runtime requires) and AOTC_CPU_AVX512 is not 0
// (select_pointwise_rows.cpp).
bool host_runs_avx512_kernels();
// For a host where host_runs_avx512_kernels() (the caller checks it): this machine is an AMD
// Zen 4, which runs each 512-bit instruction as two 256-bit halves: there the
// positions-as-rows kernel was measured ahead of the implicit GEMM, on an Intel Xeon with
// AVX-512 behind it (bench/results_cpu.md). AOTC_CPU_POINTWISE_ROWS (read when compiling):
// 0 never, 1 on any AVX-512 host, for comparisons (select_pointwise_rows.cpp).
bool host_prefers_pointwise_rows();

// After the target has chosen its convolution paths: conv2d (or gemm) -> add(skip) (-> the
// add's clamp) becomes one conv2d (gemm) with the skip as a 4th input, its residual, where
// takes_residual(op) says the target's path for that op adds one (fuse_conv_residual.cpp).
void fuse_conv_residual(ir::Graph& graph, const std::function<bool(const ir::Op&)>& takes_residual);

// A GELU that alone reads a linear layer's GEMM (no residual or clamp on it yet) becomes the
// GEMM's epilogue activation (fuse_gemm_gelu.cpp), unless the environment variable named
// off_switch is 0 when compiling (AOTC_CPU_FUSE_GELU, AOTC_CUDA_FUSE_GELU: for comparisons).
void fuse_gemm_gelu(ir::Graph& graph, const char* off_switch);

// A tensor quantized and then reordered to NHWC (a quantized convolution's input) becomes
// one quantize that writes NHWC (fuse_quantize_layout.cpp; the CPU targets).
void fuse_quantize_layout(ir::Graph& graph);

// The passes every target runs first; verbose prints what each pass did (run_step).
void run_default_passes(ir::Graph& graph, bool verbose);
// One step of a pipeline: runs pass, and with verbose logs its name and the op count before
// and after ("aotc: pass fuse_activation          212 -> 180 ops"), the same for every target.
void run_step(ir::Graph& graph, bool verbose, const char* name, const std::function<void(ir::Graph&)>& pass);

// Shared by the fusion passes: the ops that read value `id` or any alias of its storage,
// counting graph outputs as a reader (returned as -1).
std::vector<int> readers_of_storage(const ir::Graph& graph, int id);
// The arena value that an op's input `id` reads whole (the value itself, or a view of all of
// it, as fuse_activation leaves a relu's result), when that op is its only reader, graph
// outputs included; else -1. For fusions of a producer into its one consumer.
int sole_whole_read(const ir::Graph& graph, int id);
// The index of the op producing value id's storage root, or -1.
int producer_of(const ir::Graph& graph, int id);
// Shared by the activation fusions (fuse_gemm_gelu.cpp, cuda/fuse_epilogue_silu.cpp): each
// unary op that activation_of maps to an epilogue activation (None: not this one) and that
// alone reads a result of its shape, from an op that takes(producer, unary) accepts, becomes
// that op's "activation" attribute, applied after its bias; the op then writes the unary's
// output. Unless the environment variable named off_switch is 0 when compiling.
void fuse_unary_into_epilogue(ir::Graph& graph, const char* off_switch,
                              const std::function<rt::GemmActivation(rt::UnaryOp)>& activation_of,
                              const std::function<bool(const ir::Op& producer, const ir::Op& unary)>& takes);
// The first float of constant value id (following aliases and their byte offsets), or
// null when the bytes it views are not a float32 constant of at least `count` floats.
const float* constant_floats(const ir::Graph& graph, int id, int64_t count);
// Graph::add_derived_constant for float32 data: compute() gives the product's floats.
int add_derived_f32_constant(ir::Graph& graph, const std::string& recipe, const std::vector<int>& sources,
                             ir::Shape shape, const std::function<std::vector<float>()>& compute,
                             std::string name = {});

}  // namespace aotc::passes
