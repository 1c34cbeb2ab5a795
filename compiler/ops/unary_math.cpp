// Math functions -> IR "unary": neg, abs, reciprocal, sqrt, rsqrt, exp, exp2, log, log2,
// log10, log1p, expm1, sin, cos, tan, asin, acos, atan, sinh, cosh, erf, erfc, floor, ceil,
// round, trunc, sign, lgamma, digamma, erfinv (and torch.special's ndtri) and their
// aliases and in-place forms. Integer tensors keep their dtype through neg, abs, sign and
// the rounding ops, and become float32 for the rest (torch's promotion).
#include "elementwise.h"

namespace aotc::ops {
namespace {

using rt::UnaryOp;

LowerFn unary(UnaryOp op) {
  return [op](LowerContext& ctx) {
    // torch raises for both; the unary kernels have no bool form of them.
    if ((op == UnaryOp::Neg || op == UnaryOp::Abs) && ctx.value(0).dtype == ir::DType::Bool)
      ctx.fail(std::string(op == UnaryOp::Neg ? "negation" : "abs") +
               " of a bool tensor is not supported (torch raises too); use logical_not or a cast");
    lower_unary(ctx, op);
  };
}

// round(self) and round.decimals(self, *, int decimals)
void lower_round(LowerContext& ctx) {
  if (ctx.num_inputs() > 1 && !ctx.is_none(1) && ctx.int_arg(1) != 0)
    ctx.fail("round with decimals != 0 is not supported");
  lower_unary(ctx, UnaryOp::Round);
}

}  // namespace

void register_unary_math(Registry& r) {
  const std::pair<const char*, UnaryOp> ops[] = {{"neg", UnaryOp::Neg},
                                                 {"negative", UnaryOp::Neg},
                                                 {"abs", UnaryOp::Abs},
                                                 {"absolute", UnaryOp::Abs},
                                                 {"reciprocal", UnaryOp::Reciprocal},
                                                 {"sqrt", UnaryOp::Sqrt},
                                                 {"rsqrt", UnaryOp::Rsqrt},
                                                 {"exp", UnaryOp::Exp},
                                                 {"exp2", UnaryOp::Exp2},
                                                 {"log", UnaryOp::Log},
                                                 {"log2", UnaryOp::Log2},
                                                 {"log10", UnaryOp::Log10},
                                                 {"log1p", UnaryOp::Log1p},
                                                 {"expm1", UnaryOp::Expm1},
                                                 {"sin", UnaryOp::Sin},
                                                 {"cos", UnaryOp::Cos},
                                                 {"tan", UnaryOp::Tan},
                                                 {"erf", UnaryOp::Erf},
                                                 {"floor", UnaryOp::Floor},
                                                 {"ceil", UnaryOp::Ceil},
                                                 {"trunc", UnaryOp::Trunc},
                                                 {"fix", UnaryOp::Trunc},
                                                 {"sign", UnaryOp::Sign},
                                                 {"sgn", UnaryOp::Sign},
                                                 {"asin", UnaryOp::Asin},
                                                 {"arcsin", UnaryOp::Asin},
                                                 {"acos", UnaryOp::Acos},
                                                 {"arccos", UnaryOp::Acos},
                                                 {"atan", UnaryOp::Atan},
                                                 {"arctan", UnaryOp::Atan},
                                                 {"sinh", UnaryOp::Sinh},
                                                 {"cosh", UnaryOp::Cosh},
                                                 {"erfc", UnaryOp::Erfc},
                                                 {"lgamma", UnaryOp::Lgamma},
                                                 {"digamma", UnaryOp::Digamma},
                                                 {"erfinv", UnaryOp::Erfinv}};
  for (const auto& [name, op] : ops) register_with_inplace(r, std::string("aten::") + name, unary(op));
  register_with_inplace(r, "aten::round", lower_round);
  // torch.special's names of the same functions (no in-place forms).
  const std::pair<const char*, UnaryOp> special[] = {
      {"special_gammaln", UnaryOp::Lgamma}, {"special_digamma", UnaryOp::Digamma},
      {"special_psi", UnaryOp::Digamma},    {"special_erfinv", UnaryOp::Erfinv},
      {"special_ndtri", UnaryOp::Ndtri},    {"special_erf", UnaryOp::Erf},
      {"special_erfc", UnaryOp::Erfc},      {"special_exp2", UnaryOp::Exp2},
      {"special_expm1", UnaryOp::Expm1},    {"special_log1p", UnaryOp::Log1p}};
  for (const auto& [name, op] : special) r.add_lowering(std::string("aten::") + name, unary(op));
}

}  // namespace aotc::ops
