// op_registry.h - how ops plug into aotc. Each file in compiler/ops/ registers
//   - lowerings: from a TorchScript node (e.g. "aten::conv2d") to IR ops, and/or
//   - IR op kinds: how codegen turns an IR op (e.g. "conv2d") into C++ that calls a kernel.
// Adding an op = one file here + one line in op_files.def (docs/HACKING.md).
// Nothing here includes LibTorch: the frontend converts TorchScript values to Operands.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../ir/error.h"
#include "../ir/graph.h"

namespace aotc::ops {

// The weights of a quantized convolution or linear layer: torch's packed parameters
// (Conv2dPackedParamsBase, LinearPackedParamsBase) as the frontend unpacks them.
struct QuantizedWeights {
  int weight = -1;  // IR constant, Int8 integers in torch's shape ([c_out][c_in/groups][kh][kw] or [n][k])
  int bias = -1;    // IR constant, Float32 [c_out]; -1 without bias
  // One entry per tensor or one per output channel (axis 0).
  std::vector<double> scales;
  std::vector<int64_t> zero_points;
  // Convolutions only.
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
  bool transpose = false;
};

// A node argument after the frontend's compile-time evaluation: either a tensor that
// lives in the IR graph, or a constant known at compile time.
struct Operand {
  enum class Kind {
    None,
    Bool,
    Int,
    Double,
    String,
    IntList,
    DoubleList,
    BoolList,
    Tensor,
    TensorList,
    Device,
    QuantizedWeights,
    Other
  };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;  // String, Device (its name), Other (the TorchScript type)
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  std::vector<bool> bools;
  int tensor = -1;           // Tensor: IR value id
  std::vector<int> tensors;  // TensorList; -1 for a None item of a Tensor?[] (aten::index)
  std::shared_ptr<const QuantizedWeights> qweights;  // QuantizedWeights

  static Operand none() { return {}; }
  static Operand of_bool(bool v) {
    Operand o;
    o.kind = Kind::Bool;
    o.b = v;
    return o;
  }
  static Operand of_int(int64_t v) {
    Operand o;
    o.kind = Kind::Int;
    o.i = v;
    return o;
  }
  static Operand of_double(double v) {
    Operand o;
    o.kind = Kind::Double;
    o.d = v;
    return o;
  }
  static Operand of_ints(std::vector<int64_t> v) {
    Operand o;
    o.kind = Kind::IntList;
    o.ints = std::move(v);
    return o;
  }
  static Operand of_tensor(int id) {
    Operand o;
    o.kind = Kind::Tensor;
    o.tensor = id;
    return o;
  }
  static Operand of_tensors(std::vector<int> ids) {
    Operand o;
    o.kind = Kind::TensorList;
    o.tensors = std::move(ids);
    return o;
  }
  bool is_none() const { return kind == Kind::None; }
  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Double || kind == Kind::Bool; }
  std::string describe() const;  // for error messages: "int 3", "Tensor float32[1, 4]", ...
};

// What a lowering sees and produces for one TorchScript node.
class LowerContext {
 public:
  LowerContext(ir::Graph& graph, std::string op_name, std::vector<Operand> inputs, size_t num_outputs,
               ir::SourceLocation loc)
      : graph(graph),
        op_name(std::move(op_name)),
        inputs(std::move(inputs)),
        outputs(num_outputs),
        loc(std::move(loc)) {}

  ir::Graph& graph;
  const std::string op_name;  // e.g. "aten::conv2d"
  const std::vector<Operand> inputs;
  std::vector<Operand> outputs;  // the lowering fills every entry
  const ir::SourceLocation loc;

  size_t num_inputs() const { return inputs.size(); }
  const Operand& arg(size_t i) const;
  // Typed access; each throws a CompileError naming the op, the argument and the source line.
  int tensor(size_t i) const;
  const ir::Value& value(size_t i) const { return graph.value(tensor(i)); }
  int64_t int_arg(size_t i) const;
  double double_arg(size_t i) const;  // ints convert
  bool bool_arg(size_t i) const;
  std::vector<int64_t> ints_arg(size_t i, size_t expand_to = 0) const;  // a single int expands
  const QuantizedWeights& qweights_arg(size_t i) const;
  // A quantized tensor argument's scale, zero point and layout (fails for others).
  const ir::QuantParams& quant(size_t i) const;
  bool is_none(size_t i) const { return i >= inputs.size() || inputs[i].is_none(); }

  // Adds an IR op at this node's source location.
  ir::Op& add_op(std::string kind, std::vector<int> in, std::vector<int> out);
  int new_value(ir::DType dtype, ir::Shape shape) { return graph.add_value(dtype, std::move(shape)); }
  void set_output(size_t i, Operand o) { outputs.at(i) = std::move(o); }
  void set_tensor_output(size_t i, int id) { outputs.at(i) = Operand::of_tensor(id); }

  // A CompileError that says which op, where, and what is wrong.
  [[noreturn]] void fail(const std::string& what) const;
  // Requires float32 for every listed tensor argument (the dtype the kernels support).
  void require_float32(std::initializer_list<size_t> args) const;
};

using LowerFn = std::function<void(LowerContext&)>;

// How codegen sees the graph when it emits one IR op.
class EmitContext {
 public:
  explicit EmitContext(const ir::Graph& graph) : graph(graph) {}
  const ir::Graph& graph;
  // C++ expressions for a value's data pointer: read-only, writable (arena values only),
  // and the op's scratch buffer.
  std::string in(int value_id) const;
  std::string out(int value_id) const;
  std::string scratch(const ir::Op& op) const;
  static std::string c_type(ir::DType dtype);  // "float", "int64_t", ...
  static std::string f32(double v);            // exact float literal, inf/nan safe
};

using EmitFn = std::function<std::string(const EmitContext&, const ir::Op&)>;

class Registry {
 public:
  static Registry& get();  // filled on first use by register_all_ops()

  void add_lowering(const std::string& torch_name, LowerFn fn);
  // The lowering of a node with a quantized tensor among its arguments (quantized::conv2d,
  // or aten::max_pool2d of a quantized tensor); such a node never reaches add_lowering's.
  void add_quantized_lowering(const std::string& torch_name, LowerFn fn);
  void add_ir_op(const std::string& kind, EmitFn emit);
  const LowerFn* find_lowering(const std::string& torch_name) const;
  const LowerFn* find_quantized_lowering(const std::string& torch_name) const;
  const EmitFn* find_ir_op(const std::string& kind) const;
  std::vector<std::string> lowering_names() const;            // sorted, for --list-ops and the docs
  std::vector<std::string> quantized_lowering_names() const;  // sorted
  std::vector<std::string> ir_op_kinds() const;               // sorted: the IR kinds with a CPU generator

 private:
  std::map<std::string, LowerFn> lowerings_;
  std::map<std::string, LowerFn> quantized_lowerings_;
  std::map<std::string, EmitFn> ir_ops_;
};

// Every op file's register function, in op_files.def's order.
void register_all_ops(Registry& r);

// One register function per op file (op_files.def).
#define AOTC_OP_FILE(name) void register_##name(Registry& r);
#include "op_files.def"
#undef AOTC_OP_FILE

}  // namespace aotc::ops
