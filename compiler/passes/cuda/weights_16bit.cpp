// weights_16bit: float32 constants converted at compile time to the 16-bit type of
// --precision fp16 / bf16 (round to nearest even), for the GEMM operands that are weights
// (choose_conv2d_paths.cpp, choose_gemm_operands.cpp).
#include <cmath>
#include <cstring>

#include "../../ops/cuda/cuda_registry.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {
namespace {

// IEEE binary16, round to nearest even, by hand: _Float16 is not available with every
// compiler this builds with (clang 14 on x86-64 has none).
uint16_t to_fp16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (abs < 0x38800000u) {  // below 2^-14, fp16's smallest normal: a subnormal (units of 2^-24) or 0
    if (abs <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25 rounds to 0 (a tie, to even)
    const uint32_t significand = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - (abs >> 23);  // value / 2^-24 = significand >> shift, 14..24
    uint32_t q = significand >> shift;
    const uint32_t rest = significand & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (q & 1u))) ++q;  // may carry into the smallest normal
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t h = (abs - 0x38000000u) >> 13;  // exponent rebiased from 127 to 15, 10 mantissa bits
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | h);
}

uint16_t to_bf16_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f)) return 0x7fc0;       // a quiet NaN (rounding could turn a NaN into infinity)
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even on the 16 dropped bits
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace

bool is_whole_f32_constant(const ir::Graph& graph, int id) {
  if (id < 0) return false;
  const ir::Value& v = graph.value(id);
  return v.storage == ir::Storage::Constant && v.dtype == ir::DType::Float32 &&
         static_cast<int64_t>(graph.constant_of(id).bytes.size()) == v.bytes();
}

int converted_constant(ir::Graph& graph, int id, rt::cuda::Precision precision) {
  const ir::DType dtype = precision == rt::cuda::Precision::Fp16 ? ir::DType::Float16 : ir::DType::BFloat16;
  const ir::Value& v = graph.value(id);
  const ir::Constant& c = graph.constant_of(id);
  const int64_t count = ir::numel(v.shape);
  auto convert = [&] {
    std::vector<uint8_t> bytes(static_cast<size_t>(count) * 2);
    for (int64_t i = 0; i < count; ++i) {
      float f;
      std::memcpy(&f, c.bytes.data() + i * 4, 4);
      const uint16_t h = dtype == ir::DType::Float16 ? to_fp16_bits(f) : to_bf16_bits(f);
      std::memcpy(bytes.data() + i * 2, &h, 2);
    }
    return bytes;
  };
  const ir::Shape shape = v.shape;
  const std::string name = v.name + (dtype == ir::DType::Float16 ? ".fp16" : ".bf16");
  return graph.add_derived_constant("weights_16bit", {id}, dtype, shape, convert, name);
}

}  // namespace aotc::passes::cuda
