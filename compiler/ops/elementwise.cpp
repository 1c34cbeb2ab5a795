// elementwise.cpp - type promotion, casts and the typed pointwise IR ops (see elementwise.h).
#include "elementwise.h"

#include <cstring>
#include <optional>

namespace aotc::ops {

bool is_float(ir::DType t) {
  return t == ir::DType::Float32 || t == ir::DType::Float16 || t == ir::DType::BFloat16;
}
bool is_integral(ir::DType t) { return t == ir::DType::Int64 || t == ir::DType::Int32; }

ElemArg elem_tensor(const LowerContext& ctx, int tensor) {
  ElemArg a;
  a.tensor = tensor;
  a.dtype = ctx.graph.value(tensor).dtype;
  a.zero_dim = ctx.graph.value(tensor).shape.empty();
  return a;
}

ElemArg elem_arg(const LowerContext& ctx, size_t i) {
  const Operand& o = ctx.arg(i);
  if (o.is_tensor()) return elem_tensor(ctx, o.tensor);
  ElemArg a;
  switch (o.kind) {
    case Operand::Kind::Bool:
      a.dtype = ir::DType::Bool;
      a.number = o.b ? 1.0 : 0.0;
      return a;
    case Operand::Kind::Int:
      a.dtype = ir::DType::Int64;
      a.number = static_cast<double>(o.i);
      return a;
    case Operand::Kind::Double:
      a.dtype = ir::DType::Float32;  // torch's default dtype for Python floats
      a.number = o.d;
      return a;
    default:
      ctx.fail("argument " + std::to_string(i) + " must be a tensor or a number, got " + o.describe());
  }
}

namespace {
int category(ir::DType t) { return t == ir::DType::Bool ? 0 : is_float(t) ? 2 : 1; }
}  // namespace

ir::DType promote_types(ir::DType a, ir::DType b) {
  if (a == b) return a;
  if (is_float(a) || is_float(b)) {
    if (is_float(a) && is_float(b)) return ir::DType::Float32;  // f16/bf16 mixes: float32 here
    return is_float(a) ? a : b;
  }
  if (a == ir::DType::Int64 || b == ir::DType::Int64) return ir::DType::Int64;
  if (a == ir::DType::Int32 || b == ir::DType::Int32) return ir::DType::Int32;
  return ir::DType::Bool;
}

ir::DType result_type(const std::vector<ElemArg>& args) {
  // Three priority classes, as c10's ResultTypeState: dimensioned tensors, 0-d tensors,
  // Python numbers; each promotes within itself first.
  std::optional<ir::DType> cls[3];
  for (const ElemArg& a : args) {
    const int c = a.is_number() ? 2 : a.zero_dim ? 1 : 0;
    cls[c] = cls[c] ? promote_types(*cls[c], a.dtype) : a.dtype;
  }
  // c10's combine_categories(higher, lower): the higher class wins unless the lower one
  // is of a higher category (bool < integer < float).
  auto combine = [](std::optional<ir::DType> hi, std::optional<ir::DType> lo) -> std::optional<ir::DType> {
    if (!hi) return lo;
    if (!lo) return hi;
    if (category(*lo) > category(*hi)) return promote_types(*hi, *lo);
    return hi;
  };
  return combine(cls[0], combine(cls[1], cls[2])).value_or(ir::DType::Float32);
}

rt::ElemType elem_type(const LowerContext& ctx, ir::DType t) {
  switch (t) {
    case ir::DType::Float32:
      return rt::ElemType::F32;
    case ir::DType::Int64:
      return rt::ElemType::I64;
    case ir::DType::Int32:
      return rt::ElemType::I32;
    case ir::DType::Bool:
      return rt::ElemType::Bool;
    default:
      ctx.fail(std::string("tensors of dtype ") + ir::dtype_name(t) +
               " are not supported by pointwise ops (float32, int64, int32 and bool are)");
  }
}

std::string elem_type_code(ir::DType t) {
  switch (t) {
    case ir::DType::Int64:
      return "aotc::rt::ElemType::I64";
    case ir::DType::Int32:
      return "aotc::rt::ElemType::I32";
    case ir::DType::Bool:
      return "aotc::rt::ElemType::Bool";
    default:
      return "aotc::rt::ElemType::F32";
  }
}

ir::DType dtype_from_torch(const LowerContext& ctx, int64_t scalar_type) {
  switch (scalar_type) {
    case 6:
      return ir::DType::Float32;
    case 4:
      return ir::DType::Int64;
    case 3:
      return ir::DType::Int32;
    case 11:
      return ir::DType::Bool;
    case 7:
      ctx.fail("float64 tensors are not supported (aotc computes in float32; use .float())");
    default:
      ctx.fail("torch dtype number " + std::to_string(scalar_type) +
               " is not supported (float32, int64, int32 and bool are)");
  }
}

int constant_scalar(ir::Graph& graph, ir::DType t, double value) {
  std::vector<uint8_t> bytes(static_cast<size_t>(ir::dtype_size(t)));
  switch (t) {
    case ir::DType::Int64: {
      const int64_t v = static_cast<int64_t>(value);
      std::memcpy(bytes.data(), &v, sizeof v);
      break;
    }
    case ir::DType::Int32: {
      const int32_t v = static_cast<int32_t>(value);
      std::memcpy(bytes.data(), &v, sizeof v);
      break;
    }
    case ir::DType::Bool:
      bytes[0] = value != 0.0 ? 1 : 0;
      break;
    default: {
      const float v = static_cast<float>(value);
      std::memcpy(bytes.data(), &v, sizeof v);
      break;
    }
  }
  return graph.add_constant(t, {}, std::move(bytes));
}

int cast_to(LowerContext& ctx, int tensor, ir::DType t) {
  const ir::Value& x = ctx.graph.value(tensor);
  if (x.dtype == t) return tensor;
  elem_type(ctx, x.dtype);
  elem_type(ctx, t);
  const int out = ctx.new_value(t, x.shape);
  ctx.add_op(ir::kind::cast, {tensor}, {out});
  return out;
}

int as_dtype(LowerContext& ctx, const ElemArg& arg, ir::DType t) {
  if (arg.is_number()) return constant_scalar(ctx.graph, t, arg.number);
  return cast_to(ctx, arg.tensor, t);
}

int add_binary_op(LowerContext& ctx, rt::BinaryOp op, int a, int b, double alpha) {
  const ir::DType t = ctx.graph.value(a).dtype;
  if (ctx.graph.value(b).dtype != t) ctx.fail("internal: binary operands of different dtypes");
  elem_type(ctx, t);
  const ir::Shape shape = broadcast_shapes(ctx, ctx.graph.value(a).shape, ctx.graph.value(b).shape);
  const int out = ctx.new_value(rt::binary_op_gives_bool(op) ? ir::DType::Bool : t, shape);
  ir::Op& ir_op = ctx.add_op(ir::kind::binary, {a, b}, {out});
  ir_op.attrs = {{"op", static_cast<int64_t>(op)}, {"alpha", alpha}};
  return out;
}

int add_unary_op(LowerContext& ctx, rt::UnaryOp op, int x, double a, double b) {
  const ir::Value& v = ctx.graph.value(x);
  elem_type(ctx, v.dtype);
  const int out = ctx.new_value(v.dtype, v.shape);
  ir::Op& ir_op = ctx.add_op(ir::kind::unary, {x}, {out});
  ir_op.attrs = {{"op", static_cast<int64_t>(op)}, {"a", a}, {"b", b}};
  return out;
}

int add_where_op(LowerContext& ctx, int cond, int a, int b) {
  if (ctx.graph.value(cond).dtype != ir::DType::Bool) cond = cast_to(ctx, cond, ir::DType::Bool);
  const ir::DType t = ctx.graph.value(a).dtype;
  if (ctx.graph.value(b).dtype != t) ctx.fail("internal: where operands of different dtypes");
  ir::Shape shape = broadcast_shapes(ctx, ctx.graph.value(a).shape, ctx.graph.value(b).shape);
  shape = broadcast_shapes(ctx, ctx.graph.value(cond).shape, shape);
  const int out = ctx.new_value(t, shape);
  ctx.add_op(ir::kind::where, {cond, a, b}, {out});
  return out;
}

bool is_inplace(const LowerContext& ctx) {
  const std::string& n = ctx.op_name;
  if (n.empty() || n.back() != '_') return false;
  // Python operators: aten::__and__ is not in-place, aten::__iand__ is.
  if (n.rfind("aten::__", 0) == 0) return n.rfind("aten::__i", 0) == 0;
  return true;
}

int finish_inplace(LowerContext& ctx, int self, int result) {
  const ir::Value& s = ctx.graph.value(self);
  const ir::Value& r = ctx.graph.value(result);
  if (r.shape != s.shape)
    ctx.fail("the in-place result has shape " + ir::shape_str(r.shape) + ", not the shape of self " +
             ir::shape_str(s.shape));
  // torch's can_cast: no float -> integer, no non-bool -> bool.
  if ((is_float(r.dtype) && !is_float(s.dtype)) || (r.dtype != ir::DType::Bool && s.dtype == ir::DType::Bool))
    ctx.fail(std::string("result type ") + ir::dtype_name(r.dtype) +
             " can't be cast to the in-place output of type " + ir::dtype_name(s.dtype));
  return cast_to(ctx, result, s.dtype);
}

void set_elementwise_output(LowerContext& ctx, int result) {
  if (is_inplace(ctx)) result = finish_inplace(ctx, ctx.tensor(0), result);
  ctx.set_tensor_output(0, result);
}

bool unary_keeps_integer_dtype(rt::UnaryOp op) {
  using rt::UnaryOp;
  switch (op) {
    case UnaryOp::Identity:
    case UnaryOp::Relu:
    case UnaryOp::Clamp:
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Sign:
    case UnaryOp::Square:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
    case UnaryOp::BitwiseNot:
      return true;
    default:
      return false;
  }
}

void lower_unary(LowerContext& ctx, rt::UnaryOp op, double a, double b) {
  int x = ctx.tensor(0);
  if (!unary_keeps_integer_dtype(op)) x = cast_to(ctx, x, ir::DType::Float32);
  set_elementwise_output(ctx, add_unary_op(ctx, op, x, a, b));
}

void register_with_inplace(Registry& r, const std::string& name, LowerFn fn) {
  r.add_lowering(name, fn);
  r.add_lowering(name + "_", fn);
}

}  // namespace aotc::ops
