// elementwise.h - what the pointwise op files share: torch's type promotion, operands that
// are tensors or Python numbers, casts, and adding the IR ops "binary", "unary", "cast" and
// "where" for any of the dtypes the kernels take (float32, int64, int32, bool).
//
// Design: every dtype-generic pointwise op is one IR op that calls one runtime kernel per
// family (rt::binary, rt::unary, rt::cast, rt::where), which takes the element
// type as an argument. Operands are first converted to the op's computation dtype (a
// Python number becomes a 0-d constant of that dtype at compile time, a tensor of another
// dtype gets an explicit "cast" op), so a kernel sees one element type for its inputs and
// the generated code stays one call per op. Mixed-dtype tensor operands are rare in real
// models (masks are converted explicitly), so the extra pass a cast costs there is cheap.
#pragma once

#include <aotc/rt/kernels.h>

#include <string>
#include <vector>

#include "op_helpers.h"

namespace aotc::ops {

// One operand of an elementwise op as torch's type promotion sees it.
struct ElemArg {
  int tensor = -1;  // IR value, or -1 for a Python number
  double number = 0;
  ir::DType dtype = ir::DType::Float32;  // the tensor's, or the number's (bool, int64 or float32)
  bool zero_dim = false;                 // a 0-d tensor: promotes like a number of its category
  bool is_number() const { return tensor < 0; }
};

bool is_float(ir::DType t);
bool is_integral(ir::DType t);  // int32 and int64 (not bool)

// Argument i as an ElemArg: a tensor or a number known at compile time.
ElemArg elem_arg(const LowerContext& ctx, size_t i);
ElemArg elem_tensor(const LowerContext& ctx, int tensor);
// torch.promote_types on the dtypes aotc computes in.
ir::DType promote_types(ir::DType a, ir::DType b);
// torch.result_type: dimensioned tensors first, then 0-d tensors and numbers of a higher
// category (bool < integer < float).
ir::DType result_type(const std::vector<ElemArg>& args);
// The kernel element type; fails for dtypes the pointwise kernels do not take.
rt::ElemType elem_type(const LowerContext& ctx, ir::DType t);
std::string elem_type_code(ir::DType t);  // "aotc::rt::ElemType::F32", for generated code
ir::DType dtype_from_torch(const LowerContext& ctx, int64_t scalar_type);  // torch.float32 = 6, ...

// A 0-d constant holding value in dtype t.
int constant_scalar(ir::Graph& graph, ir::DType t, double value);
// The tensor converted to t (itself when it already is t).
int cast_to(LowerContext& ctx, int tensor, ir::DType t);
// The operand as a tensor of dtype t: a number becomes a constant, a tensor is cast.
int as_dtype(LowerContext& ctx, const ElemArg& arg, ir::DType t);

// IR ops. Inputs already have the computation dtype; shapes broadcast.
int add_binary_op(LowerContext& ctx, rt::BinaryOp op, int a, int b, double alpha = 1.0);
int add_unary_op(LowerContext& ctx, rt::UnaryOp op, int x, double a = 0, double b = 0);
int add_where_op(LowerContext& ctx, int cond, int a, int b);

// For in-place forms (op name ending in '_'): the result converted to self's dtype, which
// must be able to hold it (torch's can_cast) and have self's shape.
int finish_inplace(LowerContext& ctx, int self, int result);
bool is_inplace(const LowerContext& ctx);
// Sets output 0 to result, or, for an in-place form, to result converted for self (arg 0).
void set_elementwise_output(LowerContext& ctx, int result);

// Lowers op(argument 0) for the "unary" IR op: integer and bool tensors keep their dtype
// through the ops rt::unary implements and are converted to float32 for the others (as
// torch promotes them); in-place forms write back in self's dtype.
void lower_unary(LowerContext& ctx, rt::UnaryOp op, double a = 0, double b = 0);
// The unary ops that integer and bool tensors keep their dtype through (rt::unary computes
// them); lower_unary converts integers to float32 for the others. neg and abs of bool are
// refused before (unary_math.cpp), as torch refuses them.
bool unary_keeps_integer_dtype(rt::UnaryOp op);

// Registers name and name_ (the in-place form) with the same lowering.
void register_with_inplace(Registry& r, const std::string& name, LowerFn fn);

}  // namespace aotc::ops

namespace aotc::ops {

// ---- reductions (reduce.cpp)
// Which dims a reduction folds and the result's shape.
struct ReduceShape {
  std::vector<int64_t> mask;  // 1 for a reduced dim
  ir::Shape out;              // with or without the kept size-1 dims
  ir::Shape kept;             // always with size-1 dims (for broadcasting back)
  int64_t count = 1;          // elements folded into each output
};
// dims empty: every dim (torch's dim=None or dim=[]).
ReduceShape reduce_shape(const LowerContext& ctx, const ir::Shape& x, const std::vector<int64_t>& dims,
                         bool keepdim);
// The dims of argument i: an int, an int list, or None (every dim).
std::vector<int64_t> dims_arg(const LowerContext& ctx, size_t i);
// IR "reduce" of x (float32 or int64) into the shape rs.out.
int add_reduce_op(LowerContext& ctx, rt::ReduceOp op, int x, const ReduceShape& rs);
// Max or min over the dims of any dtype (int32 and bool go through int64).
int add_extremum(LowerContext& ctx, bool is_max, int x, const ReduceShape& rs);

// The kernel arguments after the pool (CPU) or stream (CUDA), as C++, of IR "arg_reduce"
// (max_min.cpp: type, is_max, outer, axis, inner, x, values, indices) and "cumsum"
// (cumsum.cpp: type, outer, axis, inner, x, y), for both targets' generators.
std::string arg_reduce_arguments(const EmitContext& e, const ir::Op& op);
std::string cumsum_arguments(const EmitContext& e, const ir::Op& op);
std::string scan_arguments(const EmitContext& e, const ir::Op& op);
std::string searchsorted_arguments(const EmitContext& e, const ir::Op& op);
std::string sort_arguments(const EmitContext& e, const ir::Op& op);

}  // namespace aotc::ops
