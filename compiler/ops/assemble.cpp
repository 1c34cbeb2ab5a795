// IR "assemble" (see assemble.h) -> aotc::rt::fill, then one copy_strided per piece.
#include "assemble.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace aotc::ops {
namespace {

// float32 -> IEEE half, round to nearest even (overflow to inf, NaN stays NaN).
uint16_t half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {  // subnormal half (or zero): scale to units of 2^-24 and round
    const float scaled = std::nearbyint(std::fabs(f) * 16777216.0f);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(scaled));
  }
  const uint32_t mant = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even on bit 13
  return static_cast<uint16_t>(sign | ((mant - 0x38000000u) >> 13));
}

// float32 -> bfloat16, round to nearest even (NaN stays NaN).
uint16_t bfloat16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

template <class T>
std::vector<uint8_t> bytes_of(T v) {
  std::vector<uint8_t> b(sizeof(T));
  std::memcpy(b.data(), &v, sizeof(T));
  return b;
}

std::string emit_assemble(const EmitContext& e, const ir::Op& op) {
  return assemble_calls(e, op, "aotc::rt::", "pool");
}

}  // namespace

std::string assemble_calls(const EmitContext& e, const ir::Op& op, const std::string& kernel_namespace,
                           const std::string& executor) {
  const int out = op.outputs[0];
  const ir::Value& y = e.graph.value(out);
  const int64_t elem = ir::dtype_size(y.dtype);
  const std::string out_bytes = "reinterpret_cast<unsigned char*>(" + e.out(out) + ")";
  std::string code;
  if (op.has("fill")) {
    ParamsCode p("aotc::rt::FillParams");
    p.set("count", ir::numel(y.shape)).set("elem_size", elem).set_array("value", op.ints("fill"));
    code += kernel_call(op, p.str(), kernel_namespace + "fill(" + executor + ", p, " + e.out(out) + ");");
  }
  const auto& inputs = op.ints("piece_input");
  const auto& ranks = op.ints("piece_rank");
  const auto& src_offsets = op.ints("piece_src_offset");
  const auto& dst_offsets = op.ints("piece_dst_offset");
  const auto& dims = op.ints("piece_dims");
  const auto& src_strides = op.ints("piece_src_strides");
  const auto& dst_strides = op.ints("piece_dst_strides");
  size_t at = 0;  // into the flattened per-dim lists
  for (size_t k = 0; k < inputs.size(); ++k) {
    const size_t rank = static_cast<size_t>(ranks[k]);
    auto part = [&](const std::vector<int64_t>& v) {
      return std::vector<int64_t>(v.begin() + static_cast<std::ptrdiff_t>(at),
                                  v.begin() + static_cast<std::ptrdiff_t>(at + rank));
    };
    ParamsCode p("aotc::rt::CopyParams");
    p.set("rank", static_cast<int64_t>(rank))
        .set("elem_size", elem)
        .set_array("dims", part(dims))
        .set_array("src_strides", part(src_strides))
        .set_array("dst_strides", part(dst_strides));
    at += rank;
    const std::string src_base = inputs[k] < 0 ? "static_cast<const unsigned char*>(" + out_bytes + ")"
                                               : "reinterpret_cast<const unsigned char*>(" +
                                                     e.in(op.inputs[static_cast<size_t>(inputs[k])]) + ")";
    const std::string src = src_base + " + " + std::to_string(src_offsets[k] * elem);
    const std::string dst = out_bytes + " + " + std::to_string(dst_offsets[k] * elem);
    code += kernel_call(op, p.str(),
                        kernel_namespace + "copy_strided(" + executor + ", p, " + src + ", " + dst + ");");
  }
  return code;
}

int add_assembly(LowerContext& ctx, const Assembly& a) {
  std::vector<int> inputs;
  std::vector<int64_t> piece_input, ranks, src_offsets, dst_offsets, dims, src_strides, dst_strides;
  for (const Piece& piece : a.pieces) {
    if (ir::numel(piece.src.sizes) == 0) continue;
    if (piece.src.rank() > 8) ctx.fail("tensors with more than 8 dimensions are not supported");
    int64_t index = -1;
    if (piece.src.base != kOutput) {
      if (ctx.graph.value(piece.src.base).dtype != a.dtype)
        ctx.fail("internal: assembly piece of another dtype");
      auto it = std::find(inputs.begin(), inputs.end(), piece.src.base);
      index = it - inputs.begin();
      if (it == inputs.end()) inputs.push_back(piece.src.base);
    }
    piece_input.push_back(index);
    ranks.push_back(piece.src.rank());
    src_offsets.push_back(piece.src.offset);
    dst_offsets.push_back(piece.dst_offset);
    dims.insert(dims.end(), piece.src.sizes.begin(), piece.src.sizes.end());
    src_strides.insert(src_strides.end(), piece.src.strides.begin(), piece.src.strides.end());
    dst_strides.insert(dst_strides.end(), piece.dst_strides.begin(), piece.dst_strides.end());
  }
  const int out = ctx.new_value(a.dtype, a.shape);
  ir::Op& op = ctx.add_op(ir::kind::assemble, inputs, {out});
  op.attrs = {{"piece_input", piece_input},      {"piece_rank", ranks}, {"piece_src_offset", src_offsets},
              {"piece_dst_offset", dst_offsets}, {"piece_dims", dims},  {"piece_src_strides", src_strides},
              {"piece_dst_strides", dst_strides}};
  if (a.fill) op.attrs["fill"] = std::vector<int64_t>(a.fill->begin(), a.fill->end());
  return out;
}

Piece region_piece(const StridedView& src, const ir::Shape& shape, const std::vector<int64_t>& starts) {
  Piece p;
  p.src = src;
  p.dst_strides = dense_strides(shape);
  for (size_t d = 0; d < starts.size(); ++d) p.dst_offset += starts[d] * p.dst_strides[d];
  return p;
}

std::vector<uint8_t> scalar_bytes(const LowerContext& ctx, ir::DType dtype, const Operand& value) {
  if (!value.is_number()) ctx.fail("expected a number known at compile time, got " + value.describe());
  const bool is_int = value.kind != Operand::Kind::Double;
  const int64_t i = value.kind == Operand::Kind::Bool ? (value.b ? 1 : 0) : value.i;
  const double d = is_int ? static_cast<double>(i) : value.d;
  auto to_int = [&]() -> int64_t {
    if (is_int) return i;
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18)
      ctx.fail("value " + std::to_string(d) + " cannot be converted to " + ir::dtype_name(dtype));
    return static_cast<int64_t>(d);  // truncates toward zero, as torch does
  };
  switch (dtype) {
    case ir::DType::Float32:
      return bytes_of(static_cast<float>(d));
    case ir::DType::Float16:
      return bytes_of(half_bits(static_cast<float>(d)));
    case ir::DType::BFloat16:
      return bytes_of(bfloat16_bits(static_cast<float>(d)));
    case ir::DType::Int64:
      return bytes_of(to_int());
    case ir::DType::Int32:
      return bytes_of(static_cast<int32_t>(to_int()));
    case ir::DType::Bool:
      return bytes_of(static_cast<uint8_t>(is_int ? i != 0 : d != 0.0));
    case ir::DType::UInt8:
    case ir::DType::Int8:
      break;  // quantized: no scalar fills them
  }
  ctx.fail(std::string("cannot make a ") + ir::dtype_name(dtype) + " tensor from a number");
}

ir::DType dtype_from_scalar_type(const LowerContext& ctx, int64_t code) {
  switch (code) {  // c10::ScalarType's numbering, stable in serialized TorchScript
    case 3:
      return ir::DType::Int32;
    case 4:
      return ir::DType::Int64;
    case 5:
      return ir::DType::Float16;
    case 6:
      return ir::DType::Float32;
    case 11:
      return ir::DType::Bool;
    case 15:
      return ir::DType::BFloat16;
    case 7:
      ctx.fail(
          "dtype float64 is not supported (aotc computes in float32, float16, bfloat16, int64, int32, bool)");
    default:
      ctx.fail("dtype code " + std::to_string(code) +
               " is not supported (aotc computes in float32, float16, bfloat16, int64, int32, bool)");
  }
}

void register_assemble(Registry& r) { r.add_ir_op(ir::kind::assemble, emit_assemble); }

}  // namespace aotc::ops
