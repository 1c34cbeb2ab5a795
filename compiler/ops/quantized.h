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

// A quantization scale as the int8 kernels use it: torch's kernels compute in float.
float scale_f32(double scale);

// One number quantized as torch.quantize_per_tensor does it to quint8.
int64_t quantize_number(double x, const ir::QuantParams& q);

// The requantization constants of a layer whose weights are w (rows of k int8 values, one
// row per output channel), read from an input of scale in_scale and zero point in_zero,
// written at out_scale: the IR constants behind QRequant's four arrays. w_zero is -1 when
// every weight zero point is 0.
struct RequantInputs {
  int acc_offset = -1, bias_over_scale = -1, multiplier = -1, w_zero = -1;
};
RequantInputs add_requant_constants(LowerContext& ctx, const QuantizedWeights& w, int64_t rows, int64_t k,
                                    const ir::QuantParams& in, double out_scale);

// "aotc::rt::QRequant rq{}; ..." for an op whose inputs first..first+3 are RequantInputs'
// constants in that order (w_zero -1 for none), with attributes out_zero and relu.
std::string requant_code(const EmitContext& e, const ir::Op& op, size_t first);

}  // namespace aotc::ops
