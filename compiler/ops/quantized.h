// quantized.h - what the quantized op files share: quantized IR values and their layout
// (NCHW, or NHWC where torch's own tensor is channels_last), and the constants that
// requantize a convolution's or linear layer's int32 sums (aotc::rt::QRequant).
#pragma once

#include "op_helpers.h"

namespace aotc::ops {

// A new UInt8 value of this shape with these quantization parameters.
int new_quantized_value(LowerContext& ctx, ir::Shape shape, const ir::QuantParams& q);

// The quantized value `id` with its bytes in the asked layout (only rank-4 values can be
// channels_last): id itself, an alias where both layouts are the same bytes (one channel,
// or one pixel per channel), else a copy.
int quantized_in_layout(LowerContext& ctx, int id, bool channels_last);

// y = table[x] for every integer of the quantized value x (256 entries: an element-wise
// op that torch computed for each possible input): IR "qlookup", output quantized as out.
int add_quantized_lookup(LowerContext& ctx, int x, std::vector<uint8_t> table, const ir::QuantParams& out);

// n bytes at data as a constant's contents.
std::vector<uint8_t> bytes_of(const void* data, size_t n);

// A quantization scale as the int8 kernels use it: torch's kernels compute in float.
float scale_f32(double scale);

// One number quantized as torch.quantize_per_tensor does it to quint8.
int64_t quantize_number(double x, const ir::QuantParams& q);

// The IR constant of a linear layer's int8 weights (IR constant `weight`, torch's [n][k]) packed
// by rt::qlinear_pack_weights for qlinear_u8 and qlinear_dynamic_f32.
int add_qlinear_packed_weights(LowerContext& ctx, int weight, int64_t n, int64_t k);

// Entry j of a per-tensor (one value) or per-channel list of quantization parameters.
template <class T>
T per_row(const std::vector<T>& values, size_t j) {
  return values.size() == 1 ? values[0] : values[j];
}

// The sum of each of `rows` rows of k int8 weights.
std::vector<int64_t> weight_row_sums(const int8_t* q, int64_t rows, int64_t k);

// The weights' zero points as an int32 IR constant of `rows` entries, or -1 when every one
// is 0 (the kernels then skip that term).
int add_weight_zero_points(LowerContext& ctx, const QuantizedWeights& w, int64_t rows);

// The requantization constants of a layer whose weights are w (rows of k int8 values, one
// row per output channel), read from an input of scale in_scale and zero point in_zero,
// written at out_scale: the IR constants behind QRequant's five arrays, in fbgemm's form or
// (onednn) in oneDNN's (QRequant::acc_scale). w_zero is -1 when every weight zero point is
// 0, acc_scale -1 in fbgemm's form.
struct RequantInputs {
  int acc_offset = -1, bias_over_scale = -1, multiplier = -1, w_zero = -1, acc_scale = -1;
};
RequantInputs add_requant_constants(LowerContext& ctx, const QuantizedWeights& w, int64_t rows, int64_t k,
                                    const ir::QuantParams& in, double out_scale, bool onednn);

// Whether torch's engine "x86" runs this convolution on oneDNN (on CPUs with AVX512-VNNI,
// as torch 2.11's should_use_onednn_quant decides): every weight zero point 0, at most 100
// groups. Only where the graph reproduces that engine (ir::QuantizedEngine::X86).
bool runs_on_onednn(const LowerContext& ctx, const QuantizedWeights& w);

// "aotc::rt::QRequant rq{}; ..." for an op whose inputs first..first+4 are RequantInputs'
// constants in that order (-1 for none), with attributes out_zero and relu.
std::string requant_code(const EmitContext& e, const ir::Op& op, size_t first);

}  // namespace aotc::ops
