// gather_unfoldings_16bit: at --precision fp16 / bf16, a convolution's unfolding of a 16-bit
// NHWC activation (im2col_nhwc reading a value store_activations_16bit.cpp keeps 16-bit)
// into the GEMM that alone reads its columns, where that GEMM writes 16-bit too, becomes
// the GEMM's own gather: the GEMM gets the NHWC input and the convolution's
// "conv_geometry", as convert_to_channels_last.cpp gives the float32 and tf32 ones, and the
// columns become its scratch. The runtime (conv_gemm_nhwc_16bit) then takes the faster of
// the implicit convolution on Hopper's warpgroup MMA and the unfolding + GEMM, as timed in
// the context's tuning run: at batch 32 resnet50's 3x3 layers unfold 0.288 ms of columns
// that the GEMMs read back (bench/results_gpu.md). A slice of the gather is 64 channels of
// one tap: inputs of other channel counts keep the unfolding op. It runs after
// store_activations_16bit, which decides which inputs and outputs are 16-bit.
#include <aotc/rt/cuda/precision.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "../../ops/cuda/cuda_registry.h"
#include "../../ops/spatial.h"
#include "../passes.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {
namespace {

bool is_16bit(ir::DType t) { return t == ir::DType::Float16 || t == ir::DType::BFloat16; }

bool flag(const ir::Op& op, const char* name) { return op.has(name) && op.b(name); }

// An unfolding the GEMM can gather: a 16-bit NHWC input of whole 64-channel slices, rows of
// exactly the receptive field.
bool gatherable(const ir::Graph& g, const ir::Op& unfold, rt::cuda::Precision precision) {
  if (unfold.kind != ir::kind::im2col_nhwc || unfold.inputs.size() != 1 || unfold.outputs.size() != 1 ||
      unfold.b(ir::attr::nchw_input) || unfold.i(ir::attr::precision) != static_cast<int64_t>(precision) ||
      !is_16bit(g.value(unfold.inputs[0]).dtype) || unfold.i("groups") != 1)
    return false;
  const std::vector<int64_t>& kernel = unfold.ints("kernel");
  const int64_t c_in = unfold.i("c_in");
  return c_in % 64 == 0 && unfold.i("row_stride") == kernel[0] * kernel[1] * c_in;
}

// The GEMM that alone reads the columns as its 16-bit A operand and writes a 16-bit output
// (gemm_16bit_output's epilogue), or -1.
int gathering_gemm(const ir::Graph& g, const ir::Op& unfold) {
  const int columns = unfold.outputs[0];
  const std::vector<int> readers = readers_of_storage(g, columns);
  if (readers.size() != 1 || readers[0] < 0) return -1;
  const ir::Op& gemm = g.ops[static_cast<size_t>(readers[0])];
  if (gemm.kind != ir::kind::gemm || gemm.inputs.empty() || gemm.inputs[0] != columns ||
      gemm.has(ir::attr::conv_geometry) || !flag(gemm, ir::attr::a_16bit) || !flag(gemm, ir::attr::b_16bit) ||
      !flag(gemm, ir::attr::c_16bit) || gemm.b("trans_a") || !gemm.b("trans_b") ||
      gemm.i("lda") != gemm.i("k") || gemm.i("k") != unfold.i("row_stride") ||
      gemm.i("m") != unfold.i("n") * unfold.i("h_out") * unfold.i("w_out") || gemm.i("n") != unfold.i("c_out"))
    return -1;
  for (size_t i = 1; i < gemm.inputs.size(); ++i)
    if (gemm.inputs[i] >= 0 && g.storage_root(gemm.inputs[i]) == g.storage_root(columns)) return -1;
  return readers[0];
}

}  // namespace

void gather_unfoldings_16bit(ir::Graph& graph, rt::cuda::Precision precision) {
  if (precision != rt::cuda::Precision::Fp16 && precision != rt::cuda::Precision::Bf16) return;
  // AOTC_CUDA_GATHER_16BIT=0 when compiling keeps every unfolding an op (for comparisons).
  if (const char* env = std::getenv("AOTC_CUDA_GATHER_16BIT"); env && std::strcmp(env, "0") == 0) return;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& unfold = graph.ops[i];
    if (!gatherable(graph, unfold, precision)) continue;
    const int at = gathering_gemm(graph, unfold);
    if (at < 0) continue;
    ir::Op conv = unfold;  // the geometry as a convolution's (no bias, no clamp)
    conv.inputs = {unfold.inputs[0], -1, -1};
    conv.attrs[ir::attr::clamp_lo] = -INFINITY;
    conv.attrs[ir::attr::clamp_hi] = INFINITY;
    ir::Op& gemm = graph.ops[static_cast<size_t>(at)];
    gemm.inputs[0] = unfold.inputs[0];
    gemm.attrs[ir::attr::conv_geometry] = ops::cuda::conv_geometry_attr(ops::conv2d_params_of(conv));
    graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(i));  // the columns: the GEMM's scratch
    --i;
  }
}

}  // namespace aotc::passes::cuda
