// op_helpers.h - small shared pieces of the op files: dims, broadcasting, and building
// the kernel parameter structs in generated code.
#pragma once

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "op_registry.h"

namespace aotc::ops {

// A dim in [-rank, rank) made non-negative; fails on the op's context otherwise.
int64_t normalize_dim(const LowerContext& ctx, int64_t dim, int64_t rank);

// Output 0 of torch op `name`'s own lowering run on `args` at ctx's node (a step of an op
// composed of others), as an IR value.
int lower_as(LowerContext& ctx, const std::string& name, std::vector<Operand> args);
// Every tensor output (num_outputs of them) of the same.
std::vector<int> lower_as_all(LowerContext& ctx, const std::string& name, std::vector<Operand> args,
                              size_t num_outputs);

// Numpy/torch broadcasting of two shapes; fails with both shapes in the message.
ir::Shape broadcast_shapes(const LowerContext& ctx, const ir::Shape& a, const ir::Shape& b);

// Element strides of a dense row-major tensor of this shape.
std::vector<int64_t> dense_strides(const ir::Shape& shape);

// Strides for reading `shape` as if broadcast to `out` (0 along broadcast dims).
std::vector<int64_t> broadcast_strides(const ir::Shape& shape, const ir::Shape& out);

// Argument 0 as a non-empty list of tensors with no None (cat, stack); fails otherwise.
const std::vector<int>& tensor_list_arg(const LowerContext& ctx);

// A 1-element float32 constant, for scalar operands.
int scalar_constant(ir::Graph& graph, double value);

// Builds "Type name{}; name.a = 1; ..." for one kernel call in generated code.
class ParamsCode {
 public:
  ParamsCode(std::string type, std::string var = "p") : var_(std::move(var)) {
    code_ << type << " " << var_ << "{};";
  }
  ParamsCode& set(const std::string& field, int64_t v) { return raw(field, std::to_string(v)); }
  ParamsCode& set_bool(const std::string& field, bool v) { return raw(field, v ? "true" : "false"); }
  ParamsCode& set_f32(const std::string& field, double v) { return raw(field, EmitContext::f32(v)); }
  ParamsCode& raw(const std::string& field, const std::string& expr) {
    code_ << " " << var_ << "." << field << " = " << expr << ";";
    return *this;
  }
  ParamsCode& set_array(const std::string& field, const std::vector<int64_t>& v) {
    for (size_t i = 0; i < v.size(); ++i) raw(field + "[" + std::to_string(i) + "]", std::to_string(v[i]));
    return *this;
  }
  std::string str() const { return code_.str(); }

 private:
  std::string var_;
  std::ostringstream code_;
};

// An IR "copy" op's rt::CopyParams as C++, and its source pointer (at the view's
// src_offset, in bytes), for the CPU and CUDA generators alike (copy.cpp).
ParamsCode copy_params_code(const ir::Op& op);
std::string copy_source(const EmitContext& e, const ir::Op& op);

// "{ <params> <call> }\n" with a comment naming the op's source line.
std::string kernel_call(const ir::Op& op, const std::string& params, const std::string& call);

}  // namespace aotc::ops
