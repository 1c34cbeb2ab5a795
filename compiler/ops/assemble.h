// assemble.h - the IR op "assemble": a dense output built from strided pieces, optionally
// after filling it with one value. Each piece is a copy_strided from a strided view of an
// input, or of the output itself (pad modes that mirror what is already written), into a
// strided region of the output. cat, stack, roll, pad and the *_like factories are
// assemblies; the inputs are read through view_of (strided_view.h), so cat of slices or of
// transposes reads the original tensors and needs no intermediate copies.
#pragma once

#include <optional>

#include "strided_view.h"

namespace aotc::ops {

struct Piece {
  StridedView src;  // src.base: an IR value, or kOutput for the output itself
  int64_t dst_offset = 0;
  std::vector<int64_t> dst_strides;  // same rank as src.sizes
};
constexpr int kOutput = -1;

struct Assembly {
  ir::DType dtype = ir::DType::Float32;
  ir::Shape shape;
  std::optional<std::vector<uint8_t>> fill;  // one element's bytes, written everywhere first
  std::vector<Piece> pieces;                 // copied in order
};

// Adds the op; returns the output value. Empty pieces are dropped.
int add_assembly(LowerContext& ctx, const Assembly& a);

// The generated calls of an "assemble" op: the fill, then one copy_strided per piece, in
// order. The CPU and CUDA targets differ only in where the kernels live and what they run
// on: ("aotc::rt::", "pool") or ("aotc::rt::cuda::", "stream").
std::string assemble_calls(const EmitContext& e, const ir::Op& op, const std::string& kernel_namespace,
                           const std::string& executor);

// The region of a dense tensor of `shape` that starts at `starts` and spans `sizes`
// (a destination for Piece).
Piece region_piece(const StridedView& src, const ir::Shape& shape, const std::vector<int64_t>& starts);

// One element of dtype holding value (an int, a float or a bool operand), as torch
// converts it: floats truncate toward zero for integer dtypes, anything non-zero is true.
std::vector<uint8_t> scalar_bytes(const LowerContext& ctx, ir::DType dtype, const Operand& value);

// A torch ScalarType code (the dtype= argument of factories) as an IR dtype; fails for the
// dtypes aotc does not compute in (float64, complex, ...).
ir::DType dtype_from_scalar_type(const LowerContext& ctx, int64_t code);

}  // namespace aotc::ops
