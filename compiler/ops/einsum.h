// einsum.h - torch.einsum's contractions as IR ops, for aten::einsum and the products
// that are einsums with a fixed equation (tensor_products.cpp: dot, outer, mv, inner,
// tensordot, bilinear, trace).
#pragma once

#include <string>
#include <vector>

#include "op_registry.h"

namespace aotc::ops {

// The IR value of torch.einsum(equation, operands): float32 operands, torch's equation
// syntax (letters, "...", spaces, an optional "->"; without it the output is the labels
// that occur once, sorted, after the ellipsis dims). Fails on the context's op with what
// is wrong (a malformed equation, a size mismatch, a label with no input).
int einsum_of(LowerContext& ctx, const std::string& equation, const std::vector<int>& operands);

}  // namespace aotc::ops
