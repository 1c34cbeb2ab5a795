// IR "binary" on CUDA: a kernel generated for this op with torch's broadcasting folded
// into compile-time index arithmetic (an operand read densely or as a scalar needs none),
// and the relu/clamp that the CUDA pipeline fused into it (the residual add + relu of
// a ResNet block is one pass). Operands of float32, int64, int32 or bool, computed as the
// CPU's rt::binary computes them (aotc/rt/cuda/pointwise.cuh); float32 values kept 16-bit
// (store_activations_16bit.cpp) are read and written in that type. Float ops also get a
// kernel of runs of consecutive outputs per thread, in 16-byte loads and stores.
#include <algorithm>
#include <cstdint>
#include <optional>

#include "cuda_registry.h"

namespace aotc::ops::cuda {

namespace {

using rt::BinaryOp;

// The ops whose result has the operands' dtype, per dtype, as the CPU computes them
// (rt::binary leaves the others unwritten; the lowering never makes them).
bool computes(BinaryOp op, ir::DType t) {
  if (rt::binary_op_gives_bool(op)) return true;  // comparisons and logical ops: any dtype
  const bool bitwise = op == BinaryOp::BitwiseAnd || op == BinaryOp::BitwiseOr || op == BinaryOp::BitwiseXor;
  switch (t) {
    case ir::DType::Float32:
      return !bitwise;
    case ir::DType::Int64:
    case ir::DType::Int32:
      return bitwise || op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul ||
             op == BinaryOp::FloorDiv || op == BinaryOp::TruncDiv || op == BinaryOp::Remainder ||
             op == BinaryOp::Fmod || op == BinaryOp::Pow || op == BinaryOp::Minimum ||
             op == BinaryOp::Maximum || op == BinaryOp::LeftShift || op == BinaryOp::RightShift;
    case ir::DType::Bool:
      return bitwise || op == BinaryOp::Add || op == BinaryOp::Mul || op == BinaryOp::Minimum ||
             op == BinaryOp::Maximum;
    default:
      return false;
  }
}

// The CPU's alpha for integer operands: static_cast<T>(float alpha), which x86 makes T's
// minimum when out of range.
std::string int_alpha_literal(ir::DType t, double alpha) {
  const float f = static_cast<float>(alpha);
  if (t == ir::DType::Bool) return "true";  // (unused: bool add is "or")
  if (t == ir::DType::Int32) {
    const bool in_range = f >= -2147483648.0f && f < 2147483648.0f;
    return "static_cast<int32_t>(" + std::to_string(in_range ? static_cast<int32_t>(f) : INT32_MIN) + ")";
  }
  const bool in_range = f >= -9223372036854775808.0f && f < 9223372036854775808.0f;
  const int64_t v = in_range ? static_cast<int64_t>(f) : INT64_MIN;
  return v == INT64_MIN ? "(-9223372036854775807ll - 1)" : std::to_string(v) + "ll";
}

bool is_float(ir::DType t) {
  return t == ir::DType::Float32 || t == ir::DType::Float16 || t == ir::DType::BFloat16;
}

// An operand element as the arithmetic takes it: a 16-bit one widened to float32.
std::string read_as_float(ir::DType t, const std::string& element) {
  if (t == ir::DType::Float16) return "aotc::rt::cuda::widen_fp16(" + element + ")";
  if (t == ir::DType::BFloat16) return "aotc::rt::cuda::widen_bf16(" + element + ")";
  return element;
}

// How an operand's elements follow the output's: one element for all (a scalar), the
// output's own order (dense), or neither. Dims of size 1 do not move the index.
enum class Follows { Scalar, Dense, Strided };
Follows operand_follows(const std::vector<int64_t>& strides, const ir::Shape& out) {
  const std::vector<int64_t> dense = dense_strides(out);
  bool all_zero = true, is_dense = true;
  for (size_t d = 0; d < out.size(); ++d) {
    all_zero = all_zero && (strides[d] == 0 || out[d] == 1);
    is_dense = is_dense && (strides[d] == dense[d] || out[d] == 1);
  }
  return all_zero ? Follows::Scalar : is_dense ? Follows::Dense : Follows::Strided;
}

// Index expression of one operand for output element i.
std::string operand_index(const std::vector<int64_t>& strides, const ir::Shape& out, const std::string& var,
                          std::string& code) {
  const Follows f = operand_follows(strides, out);
  if (f == Follows::Scalar) return "0";
  if (f == Follows::Dense) return "i";
  code += "  int64_t " + var + " = 0;\n  {\n    int64_t r = i;\n";
  for (size_t d = out.size(); d-- > 0;) {
    const std::string dim = std::to_string(out[d]) + "ll";
    if (strides[d] != 0)
      code += "    " + var + " += (r % " + dim + ") * " + std::to_string(strides[d]) + "ll;\n";
    if (d > 0) code += "    r /= " + dim + ";\n";
  }
  code += "  }\n";
  return var;
}

// How the kernel that computes a run of consecutive outputs per thread (inside one row of
// the output's last dim, or anywhere where every operand is dense or a scalar) reads an
// operand: a pack of consecutive elements, or one element for the whole run.
enum class RunRead { Pack, One };
struct VectorRead {
  RunRead read;
  bool needs_rows;  // a run inside one row: only where the last dim is a multiple of the run
};

std::optional<VectorRead> vector_read(const std::vector<int64_t>& strides, const ir::Shape& out) {
  const Follows f = operand_follows(strides, out);
  if (f == Follows::Scalar) return VectorRead{RunRead::One, false};
  if (f == Follows::Dense) return VectorRead{RunRead::Pack, false};
  if (strides.back() == 1) return VectorRead{RunRead::Pack, true};  // broadcast in another dim only
  if (strides.back() == 0) return VectorRead{RunRead::One, true};   // one value per row
  return std::nullopt;
}

// The result for operand elements a and b (C++ expressions of their stored types).
std::string result_value(const ir::Op& op, const ir::Graph& g, const std::string& a, const std::string& b) {
  // Comparisons and logical ops write bool (where's condition); the rest the operands' dtype
  // (both operands have one dtype: the lowering converts them to it). Float32 operands and
  // outputs may also be kept in a 16-bit type (store_activations_16bit.cpp): such values
  // are widened as read and the result rounded as written, float32 arithmetic between.
  const ir::DType a_t = g.value(op.inputs[0]).dtype, b_t = g.value(op.inputs[1]).dtype;
  const ir::DType out_t = g.value(op.outputs[0]).dtype;
  const ir::DType t = is_float(a_t) && is_float(b_t) ? ir::DType::Float32 : a_t;
  const bool to_bool = rt::binary_op_gives_bool(static_cast<BinaryOp>(op.i("op")));
  const std::string op_code = "<static_cast<aotc::rt::BinaryOp>(" + std::to_string(op.i("op")) + ")>";
  const std::string operands = "(" + read_as_float(a_t, a) + ", " + read_as_float(b_t, b);
  std::string value;
  if (to_bool) {
    value = "aotc::rt::cuda::compare_apply" + op_code + operands + ")";
  } else if (t == ir::DType::Float32) {
    value =
        "aotc::rt::cuda::binary_apply" + op_code + operands + ", " + EmitContext::f32(op.f("alpha")) + ")";
  } else {
    value = "aotc::rt::cuda::binary_apply_int<static_cast<aotc::rt::BinaryOp>(" + std::to_string(op.i("op")) +
            "), " + EmitContext::c_type(t) + ">" + operands + ", " + int_alpha_literal(t, op.f("alpha")) +
            ")";
  }
  if (op.has(ir::attr::clamp_lo)) {
    if (is_float(out_t)) {
      value = "aotc::rt::cuda::clamp_apply(" + value + ", " + EmitContext::f32(op.f(ir::attr::clamp_lo)) +
              ", " + EmitContext::f32(op.f(ir::attr::clamp_hi)) + ")";
    } else {  // a fused integer relu / clamp: the unary op's own formula and bounds
      const std::string out_type = EmitContext::c_type(out_t);
      value = "aotc::rt::cuda::unary_apply_int<aotc::rt::UnaryOp::Clamp, " + out_type + ">(" + value + ", " +
              int_bound_literal(out_t, op.f(ir::attr::clamp_lo)) + ", " +
              int_bound_literal(out_t, op.f(ir::attr::clamp_hi)) + ")";
    }
  }
  if (out_t == ir::DType::Float16) value = "aotc::rt::cuda::fp16_bits(" + value + ")";
  if (out_t == ir::DType::BFloat16) value = "aotc::rt::cuda::bf16_bits(" + value + ")";
  return value;
}

int64_t element_bytes(ir::DType t) { return t == ir::DType::Float32 ? 4 : 2; }

CudaCode emit_binary(const EmitContext& e, const ir::Op& op, size_t index) {
  const ir::Graph& g = e.graph;
  const ir::Shape& out = g.value(op.outputs[0]).shape;
  const int64_t count = ir::numel(out);
  const std::string name = kernel_name(index);
  const std::vector<int64_t> a_strides = broadcast_strides(g.value(op.inputs[0]).shape, out);
  const std::vector<int64_t> b_strides = broadcast_strides(g.value(op.inputs[1]).shape, out);
  std::string body;
  const std::string ia = operand_index(a_strides, out, "ia", body);
  const std::string ib = operand_index(b_strides, out, "ib", body);
  const ir::DType a_t = g.value(op.inputs[0]).dtype, b_t = g.value(op.inputs[1]).dtype;
  const ir::DType out_t = g.value(op.outputs[0]).dtype;
  const std::string a_type = EmitContext::c_type(a_t), b_type = EmitContext::c_type(b_t),
                    out_type = EmitContext::c_type(out_t);
  const std::string params = "(const " + a_type + "* __restrict__ a, const " + b_type + "* __restrict__ b, " +
                             out_type + "* y, " + kKernelDimsParam + ")";
  const std::string count_literal = std::to_string(count) + "ll";
  CudaCode code;
  code.kernels = "__global__ void __launch_bounds__(256) " + name + params +
                 " {\n"
                 "  const int64_t i = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;\n"
                 "  if (i >= " +
                 count_literal + ") return;\n" + body +
                 "  y[i] = " + result_value(op, g, "a[" + ia + "]", "b[" + ib + "]") + ";\n}\n";
  if (count <= 0) return code;
  const std::string scalar_launch = name + "<<<" + blocks_of_256(count) + ", 256, 0, stream>>>(" +
                                    e.in(op.inputs[0]) + ", " + e.in(op.inputs[1]) + ", " +
                                    e.out(op.outputs[0]) + ", aotc_dims); aotc::rt::cuda::check_launch(\"" +
                                    name + "\");";
  // Float arithmetic (the elementwise ops of a CNN's blocks: a squeeze-and-excitation gate,
  // a residual add) also gets a kernel that takes runs of 8 elements per thread where a
  // 16-bit tensor is read or written (4 where all are float32) in 16-byte loads and stores,
  // launched where the sizes make runs and the addresses are aligned (checked at run time,
  // as sizes may be named dims); the scalar kernel otherwise. One element per thread left
  // the loads far below the bandwidth on 16-bit tensors.
  const std::optional<VectorRead> a_read = vector_read(a_strides, out), b_read = vector_read(b_strides, out);
  const bool floats = is_float(a_t) && is_float(b_t) && is_float(out_t);
  if (!floats || !a_read || !b_read || out.empty()) {
    code.launch = kernel_call(op, "", scalar_launch);
    return code;
  }
  // 16 bytes of the narrowest type that moves in packs: a float32 operand beside 16-bit
  // ones (a squeeze-and-excitation gate) then takes two loads.
  int64_t narrowest = element_bytes(out_t);
  if (a_read->read == RunRead::Pack) narrowest = std::min(narrowest, element_bytes(a_t));
  if (b_read->read == RunRead::Pack) narrowest = std::min(narrowest, element_bytes(b_t));
  const std::string run = std::to_string(16 / narrowest);
  const std::string vname = kernel_name(index, "_runs");
  std::string loads, condition = "(" + count_literal + " % " + run + " == 0)";
  if (a_read->needs_rows || b_read->needs_rows)
    condition += " && (" + std::to_string(out.back()) + "ll % " + run + " == 0)";
  const auto operand = [&](const VectorRead& r, const std::string& type, const std::string& ptr,
                           const std::string& at, const std::string& local, const std::string& arg) {
    if (r.read == RunRead::One) {
      loads += "  const " + type + " " + local + " = " + ptr + "[" + at + "];\n";
      return local;
    }
    const std::string pack = "aotc::rt::cuda::Pack<" + type + ", " + run + ">";
    loads += "  const " + pack + " " + local + " = *reinterpret_cast<const " + pack + "*>(" + ptr + " + " +
             at + ");\n";
    condition += " && aotc::rt::cuda::pack_aligned(" + arg + ", sizeof(" + pack + "))";
    return local + ".v[k]";
  };
  const std::string a_elem = operand(*a_read, a_type, "a", ia, "pa", e.in(op.inputs[0]));
  const std::string b_elem = operand(*b_read, b_type, "b", ib, "pb", e.in(op.inputs[1]));
  const std::string out_pack = "aotc::rt::cuda::Pack<" + out_type + ", " + run + ">";
  condition += " && aotc::rt::cuda::pack_aligned(" + e.out(op.outputs[0]) + ", sizeof(" + out_pack + "))";
  code.kernels += "__global__ void __launch_bounds__(256) " + vname + params +
                  " {\n"
                  "  const int64_t i = (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) * " +
                  run + ";\n  if (i >= " + count_literal + ") return;\n" + body + loads + "  " + out_pack +
                  " py;\n#pragma unroll\n  for (int k = 0; k < " + run +
                  "; ++k) py.v[k] = " + result_value(op, g, a_elem, b_elem) + ";\n  *reinterpret_cast<" +
                  out_pack + "*>(y + i) = py;\n}\n";
  const std::string vector_launch = vname + "<<<static_cast<unsigned>((" + count_literal + " / " + run +
                                    " + 255) / 256), 256, 0, stream>>>(" + e.in(op.inputs[0]) + ", " +
                                    e.in(op.inputs[1]) + ", " + e.out(op.outputs[0]) +
                                    ", aotc_dims); aotc::rt::cuda::check_launch(\"" + vname + "\");";
  code.launch = kernel_call(
      op, "",
      "if (" + condition + ") {\n    " + vector_launch + "\n  } else {\n    " + scalar_launch + "\n  }");
  return code;
}

}  // namespace

void register_binary_cuda(CudaRegistry& r) {
  r.add(ir::kind::binary, emit_binary, nullptr,
        [](const ir::Op& op, size_t, ir::DType t) { return computes(static_cast<BinaryOp>(op.i("op")), t); });
}

}  // namespace aotc::ops::cuda
