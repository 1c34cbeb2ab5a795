// store_activations_16bit: at --precision fp16 / bf16, an activation whose every reader
// takes it as a 16-bit value is written in the 16-bit type by the op that makes it, instead
// of in float32 and rounded again by each reader. Readers that qualify: a GEMM reading it
// as its rounded A operand (choose_gemm_operands.cpp: a linear layer, a 1x1 convolution in
// NHWC), an unfolding into 16-bit columns (convert_to_channels_last.cpp: a 3x3
// convolution's im2col_nhwc), a GEMM adding it as its residual where that GEMM's own output
// is kept 16-bit too (cuBLASLt's C and D share a type), an NHWC depthwise convolution of a
// window under 7 wide or a 7x7 one at stride 1 whose output is kept too (its kernels read
// 16 bits into 16 bits or float32 into either), an NHWC average pooling, a float binary op
// and a layer norm without statistics reading no sum (which widen what they read). In a
// ResNet that is every convolution's output but the last block's and the stem's: the
// rounding passes before the 1x1 layers go, and the GEMMs write half the bytes. In an
// EfficientNet or a MobileNet it is every tensor of a block, expansion, depthwise
// convolution and squeeze-and-excitation gate: the blocks' widest tensors move in half the
// bytes. In a ConvNeXt it is also the 7x7 depthwise convolutions' outputs and the stem's,
// which layer norms read, and the residual stream the depthwise convolutions read and the
// second linear layers add to (but for each stage's last sum, which a layer norm reads).
//
// Writers: a GEMM whose epilogue gemm_16bit_output takes (a bias per column, converted to
// the type here: cuBLASLt reads the bias in C's type; an activation, which its pass applies
// before rounding; a residual; no clamp or a relu), a layer norm without statistics
// (layer_norm_16bit), an attention without weights (attention_16bit_output), an NHWC
// depthwise convolution (whose input is kept too where it has an input epilogue), and a
// float binary op (a gate or a sum, rounded as it is written): a pre-norm transformer's
// normalised rows, which only the next attention's or MLP's first linear layer reads, a
// GELU'd MLP activation, which only its second reads, and the attention's output, which
// only its projection reads, stop being written in float32 and rounded in a pass of their
// own. The set is found as a fixed point, since a GEMM adding a residual can keep its
// output 16-bit only if the residual is kept so, and the other way, and a depthwise
// convolution's input only with its output. Rounding happens once per value, as before, but
// now before the residual adds and clamps that read it, at the precision torch's own fp16 /
// bf16 models compute them in.
// AOTC_CUDA_16BIT_ACTIVATIONS=0 when compiling keeps every activation float32, and
// AOTC_CUDA_16BIT_NORM_INPUT=0 every layer norm's input, for comparisons.
#include <aotc/rt/cuda/conv2d_plan.h>
#include <aotc/rt/kernels.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "../../ops/cuda/cuda_registry.h"
#include "../../ops/spatial.h"
#include "../passes.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {
namespace {

bool gemm_with_16bit_operands(const ir::Op& op, rt::cuda::Precision precision) {
  return op.kind == ir::kind::gemm && !op.has(ir::attr::conv_geometry) && ops::cuda::has_16bit_operand(op) &&
         op.has(ir::attr::precision) && op.i(ir::attr::precision) == static_cast<int64_t>(precision);
}

// The value that must be kept 16-bit with the output of `writer`: a GEMM's residual (C and
// D of cuBLASLt share a type), the input of a depthwise convolution with an input epilogue
// (its kernels for those read and write one type); -1 if none.
int partner_of_writer(const ir::Graph& g, const ir::Op& writer) {
  if (writer.kind == ir::kind::gemm && writer.inputs.size() > 3 && writer.inputs[3] >= 0)
    return g.storage_root(writer.inputs[3]);
  if (writer.kind == ir::kind::depthwise_conv2d_nhwc && writer.has(ir::attr::input_clamp_lo))
    return g.storage_root(writer.inputs[0]);
  return -1;
}

// AOTC_CUDA_16BIT_NORM_INPUT=0 when compiling: layer norms read float32 only, as before they
// took 16-bit rows (for comparisons).
bool norms_read_16bit() {
  const char* env = std::getenv("AOTC_CUDA_16BIT_NORM_INPUT");
  return !(env && std::strcmp(env, "0") == 0);
}

// A sum (a GEMM adding a residual, a binary op adding two tensors) stays float32 where a
// layer norm reads it: in a transformer that is the residual stream, which kept 16-bit
// measured slower (vit_b_16 at batch 1, where cuBLASLt's C and D become 16-bit,
// bench/results_gpu.md). Not a stream that depthwise convolutions read
// (carries_depthwise_stream).
bool writes_sum(const ir::Op& op) {
  if (op.kind == ir::kind::gemm) return op.inputs.size() > 3 && op.inputs[3] >= 0;
  return op.kind == ir::kind::binary && (static_cast<rt::BinaryOp>(op.i("op")) == rt::BinaryOp::Add ||
                                         static_cast<rt::BinaryOp>(op.i("op")) == rt::BinaryOp::Sub);
}

bool float_binary(const ir::Op& op) {
  return op.kind == ir::kind::binary && !rt::binary_op_gives_bool(static_cast<rt::BinaryOp>(op.i("op")));
}

// An NHWC depthwise convolution whose input epilogue, if any, 16-bit inputs take: an upper
// bound alone (depthwise_conv2d_nhwc).
bool depthwise_16bit_capable(const ir::Op& op) {
  if (op.kind != ir::kind::depthwise_conv2d_nhwc) return false;
  if (!op.has(ir::attr::input_clamp_lo)) return true;
  return op.f(ir::attr::input_clamp_lo) == -INFINITY && !(op.inputs.size() > 3 && op.inputs[3] >= 0);
}

// Whether a depthwise convolution reads its input 16-bit where it can: windows under 7 wide,
// and those the taps kernel takes (a 7x7 window at stride 1: ConvNeXt's), which widens each
// value it loads once. Other windows 7 or more wide read float32: the register-tiled kernel,
// bound by instructions (49 FMAs an output), widens 17.5 loaded values an output, which cost
// more than the bytes saved (bench/results_gpu.md); their output is still written 16-bit.
// AOTC_CUDA_DEPTHWISE_NO_TAPS=1 when compiling reads float32 into every 7x7 layer, as before
// the taps kernel (for comparisons; the runtime reads it too).
bool depthwise_reads_16bit(const ir::Op& op) {
  if (!depthwise_16bit_capable(op)) return false;
  if (op.ints("kernel")[1] < 7) return true;
  const bool activation = op.has(ir::attr::activation) &&
                          op.i(ir::attr::activation) != static_cast<int64_t>(rt::GemmActivation::None);
  return rt::cuda::depthwise_taps_kernel_applies(ops::conv2d_params_of(op), activation,
                                                 op.has(ir::attr::input_clamp_lo)) &&
         !std::getenv("AOTC_CUDA_DEPTHWISE_NO_TAPS");
}

// Whether a depthwise convolution reading 16 bits reads the sum v or a residual it carries
// forward (v's GEMM added a residual whose own GEMM added one, and so on): a ConvNeXt
// stage's residual stream, whose 7x7 layers read it and whose last sum a layer norm reads.
// cuBLASLt's C and D share a type, so such a stream is 16-bit whole, that layer norm
// reading 16 bits, or float32 whole; kept, its GEMMs and depthwise layers move half the
// bytes (bench/results_gpu.md).
bool carries_depthwise_stream(const ir::Graph& g, int v) {
  for (size_t steps = 0; v >= 0 && steps < g.ops.size(); ++steps) {
    for (int r : readers_of_storage(g, v))
      if (r >= 0 && depthwise_reads_16bit(g.ops[static_cast<size_t>(r)])) return true;
    const int w = producer_of(g, v);
    if (w < 0) return false;
    const ir::Op& op = g.ops[static_cast<size_t>(w)];
    if (op.kind != ir::kind::gemm || !writes_sum(op)) return false;
    v = g.storage_root(op.inputs[3]);
  }
  return false;
}

// A float32 arena tensor of its own (not a view), written whole.
bool plain_f32_output(const ir::Graph& g, int v) {
  const ir::Value& y = g.value(v);
  return y.dtype == ir::DType::Float32 && y.storage == ir::Storage::Arena && g.storage_root(y.id) == y.id;
}

// Whether the op can write its output in the 16-bit type: a layer norm (layer_norm_16bit),
// an attention (attention_16bit_output), a depthwise convolution, a float binary op, or a
// GEMM whose epilogue gemm_16bit_output takes.
bool can_write_16bit(const ir::Graph& g, const ir::Op& op, rt::cuda::Precision precision) {
  if (depthwise_16bit_capable(op))
    return op.outputs.size() == 1 && g.value(op.inputs[0]).dtype == ir::DType::Float32 &&
           plain_f32_output(g, op.outputs[0]);
  if (float_binary(op))
    return op.outputs.size() == 1 && g.value(op.inputs[0]).dtype == ir::DType::Float32 &&
           g.value(op.inputs[1]).dtype == ir::DType::Float32 && plain_f32_output(g, op.outputs[0]);
  if (op.kind == ir::kind::layer_norm)
    return op.outputs.size() == 1 && g.value(op.inputs[0]).dtype == ir::DType::Float32 &&
           plain_f32_output(g, op.outputs[0]);
  if (op.kind == ir::kind::attention)  // without weights (one output)
    return op.outputs.size() == 1 && plain_f32_output(g, op.outputs[0]);
  if (!gemm_with_16bit_operands(op, precision) || op.outputs.size() != 1) return false;
  const double lo = op.f(ir::attr::clamp_lo), hi = op.f(ir::attr::clamp_hi);
  if (!(hi == INFINITY && (lo == -INFINITY || lo == 0.0))) return false;
  const auto bias_kind = static_cast<rt::BiasKind>(op.i("bias_kind"));
  const int bias = op.inputs.size() > 2 ? op.inputs[2] : -1;
  if (bias >= 0 && bias_kind != rt::BiasKind::None &&
      (bias_kind != rt::BiasKind::PerColumn || op.f("beta") != 1.0 || !is_whole_f32_constant(g, bias)))
    return false;
  return plain_f32_output(g, op.outputs[0]) &&
         ir::numel(g.value(op.outputs[0]).shape) == op.i("m") * op.i("n") && op.i("ldc") == op.i("n");
}

// Whether every value viewing v's bytes views all of them from the start (a reshape, which
// stays one when the element type changes), so that they can change type with v.
bool only_whole_views(const ir::Graph& g, int v) {
  for (const ir::Value& w : g.values)
    if (w.id != v && w.storage == ir::Storage::Alias && g.storage_root(w.id) == v &&
        (g.root_byte_offset(w.id) != 0 || ir::numel(w.shape) != ir::numel(g.value(v).shape)))
      return false;
  return true;
}

// Operand: a GEMM's A operand; Residual: a GEMM's residual (its output kept too);
// Columns: an unfolding into 16-bit columns; Coupled: a depthwise convolution's input (its
// output kept too); Widened: read into float32 arithmetic (a pooling, a binary op, a layer
// norm).
enum class Read { Operand, Residual, Columns, Coupled, Widened, Other };

// How `reader` reads value v: as one input, itself or a whole view of it (only_whole_views).
Read read_of(const ir::Graph& g, const ir::Op& reader, int v, rt::cuda::Precision precision) {
  int position = -1, count = 0;
  for (size_t i = 0; i < reader.inputs.size(); ++i)
    if (reader.inputs[i] >= 0 && g.storage_root(reader.inputs[i]) == v) {
      position = static_cast<int>(i);
      ++count;
    }
  if (count != 1) return Read::Other;
  if (reader.kind == ir::kind::gemm && gemm_with_16bit_operands(reader, precision)) {
    if (position == 0 && !reader.b(ir::attr::a_16bit)) return Read::Operand;
    if (position == 3) return Read::Residual;
  }
  if (reader.kind == ir::kind::im2col_nhwc && position == 0 && !reader.b(ir::attr::nchw_input) &&
      reader.i(ir::attr::precision) == static_cast<int64_t>(precision))
    return Read::Columns;
  if (position == 0 && depthwise_reads_16bit(reader)) return Read::Coupled;
  if (position == 0 && reader.kind == ir::kind::adaptive_avg_pool2d && reader.has(ir::attr::channels_last) &&
      reader.b(ir::attr::channels_last))
    return Read::Widened;
  if (position == 0 && reader.kind == ir::kind::layer_norm && reader.outputs.size() == 1 &&  // no statistics
      norms_read_16bit())
    return Read::Widened;
  if (float_binary(reader) && g.value(reader.inputs[0]).dtype == ir::DType::Float32 &&
      g.value(reader.inputs[1]).dtype == ir::DType::Float32)
    return Read::Widened;
  return Read::Other;
}

}  // namespace

void store_activations_16bit(ir::Graph& graph, rt::cuda::Precision precision) {
  if (precision != rt::cuda::Precision::Fp16 && precision != rt::cuda::Precision::Bf16) return;
  if (const char* env = std::getenv("AOTC_CUDA_16BIT_ACTIVATIONS"); env && std::strcmp(env, "0") == 0) return;
  // Candidates: each value a qualifying op writes, with its writer and its readers.
  std::map<int, int> writer;                // value -> op index (a GEMM, layer norm or attention)
  std::map<int, std::vector<int>> readers;  // value -> op indices
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& op = graph.ops[i];
    if (!can_write_16bit(graph, op, precision)) continue;
    const int v = op.outputs[0];
    std::vector<int> r = readers_of_storage(graph, v);
    bool ok = !r.empty() && only_whole_views(graph, v);
    for (int reader : r)
      ok = ok && reader >= 0 &&
           read_of(graph, graph.ops[static_cast<size_t>(reader)], v, precision) != Read::Other &&
           !(writes_sum(op) && graph.ops[static_cast<size_t>(reader)].kind == ir::kind::layer_norm &&
             !carries_depthwise_stream(graph, v));
    if (!ok) continue;
    writer[v] = static_cast<int>(i);
    readers[v] = std::move(r);
  }
  std::set<int> kept;
  for (const auto& [v, op] : writer) kept.insert(v);
  // A residual and the output of the GEMM adding it are both kept or neither; a depthwise
  // convolution's input only with its output, and with an input epilogue both or neither.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = kept.begin(); it != kept.end();) {
      const int v = *it;
      bool ok = true;
      const int partner = partner_of_writer(graph, graph.ops[static_cast<size_t>(writer[v])]);
      if (partner >= 0 && !kept.count(partner)) ok = false;
      for (int reader : readers[v]) {
        const ir::Op& r = graph.ops[static_cast<size_t>(reader)];
        const Read read = read_of(graph, r, v, precision);
        if ((read == Read::Residual || read == Read::Coupled) && !kept.count(r.outputs[0])) ok = false;
      }
      if (ok) {
        ++it;
      } else {
        it = kept.erase(it);
        changed = true;
      }
    }
  }
  const ir::DType type = precision == rt::cuda::Precision::Fp16 ? ir::DType::Float16 : ir::DType::BFloat16;
  for (const int v : kept) {
    for (ir::Value& w : graph.values)
      if (graph.storage_root(w.id) == v) w.dtype = type;  // v and its whole views
    ir::Op& op = graph.ops[static_cast<size_t>(writer[v])];
    // The generators of the depthwise convolution and the binary op go by their values' types.
    if (op.kind == ir::kind::gemm || op.kind == ir::kind::layer_norm || op.kind == ir::kind::attention)
      op.attrs[ir::attr::c_16bit] = true;
    if (op.kind == ir::kind::gemm && op.inputs.size() > 2 && op.inputs[2] >= 0 &&
        static_cast<rt::BiasKind>(op.i("bias_kind")) != rt::BiasKind::None)
      op.inputs[2] = converted_constant(graph, op.inputs[2], precision);
    for (int reader : readers[v]) {
      ir::Op& r = graph.ops[static_cast<size_t>(reader)];
      if (read_of(graph, r, v, precision) == Read::Operand) r.attrs[ir::attr::a_16bit] = true;
    }
  }
}

}  // namespace aotc::passes::cuda
