// graph.h - aotc's own IR: values with static dtype and shape, ops with typed attributes,
// constants (weights). No LibTorch types: everything after the frontend works on this.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "constant_bytes.h"
#include "names.h"

namespace aotc::ir {

// UInt8 and Int8 hold quantized tensors only (Value::quant); the C ABI has neither.
enum class DType { Float32, Float16, BFloat16, Int64, Int32, Bool, UInt8, Int8 };

const char* dtype_name(DType dtype);  // "float32", ...
int64_t dtype_size(DType dtype);
std::optional<DType> parse_dtype(const std::string& name);
// The enumerator name in aotc.h, e.g. "AOTC_DTYPE_FLOAT32", for generated code.
const char* dtype_abi_name(DType dtype);

using Shape = std::vector<int64_t>;
int64_t numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[1, 3, 224, 224]"

// Where an op came from in the user's Python (from TorchScript source ranges).
struct SourceLocation {
  std::string file;
  int line = 0;
  std::string text;         // the source line itself, trimmed, when known
  std::string str() const;  // "file.py:12" or "<unknown location>"
};

enum class Storage {
  Arena,     // an intermediate: placed in the activation arena by the memory planner
  Input,     // a model input: the caller's buffer
  Constant,  // a weight: in the weights blob
  Alias,     // a view of another value's bytes (reshape, flatten, squeeze, ...)
};

// A quantized tensor's affine map (torch.quantize_per_tensor): real = (q - zero_point) *
// scale. channels_last: a rank-4 value's bytes are NHWC, as torch's own tensor is in
// memory at that point (its quantized convolutions produce channels_last, and some of its
// quantized kernels round differently by layout); every other value is row-major.
struct QuantParams {
  double scale = 1;
  int64_t zero_point = 0;
  bool channels_last = false;
};

struct Value {
  int id = -1;
  DType dtype = DType::Float32;
  Shape shape;
  std::string name;  // for messages and generated comments
  Storage storage = Storage::Arena;
  int input_index = -1;     // Storage::Input
  int constant_index = -1;  // Storage::Constant
  int alias_of = -1;        // Storage::Alias: the value whose bytes this one views
  int64_t alias_byte_offset = 0;
  // A torch view that aotc materialised as a dense copy (a slice with a step, select,
  // transpose, expand, ...; compiler/ops/strided_view.h): the value it views. The copy has
  // its own bytes, but in torch the two share memory: an in-place update of one must be
  // seen by the other, which aotc refuses (see Graph::view_root). IR values are never
  // mutated after the op that produces them, so reading a copy is reading the view.
  int view_of = -1;
  int64_t arena_offset = -1;  // Storage::Arena, set by the memory planner
  // A model with named dims: the entry of the run's offset table (aotc_offsets[slot],
  // computed per context for its largest sizes) that holds this root's offset in place of
  // arena_offset; -1: arena_offset, a constant. Set by the dynamic build.
  int arena_slot = -1;
  // Set on UInt8 and Int8 values: what their integers mean.
  std::optional<QuantParams> quant;

  int64_t bytes() const { return numel(shape) * dtype_size(dtype); }
};

using Attr = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>>;

struct Op {
  std::string kind;          // an IR op kind registered in compiler/ops (e.g. "conv2d", "unary")
  std::vector<int> inputs;   // value ids; -1 for an absent optional input
  std::vector<int> outputs;  // value ids
  std::map<std::string, Attr> attrs;
  SourceLocation loc;
  int64_t scratch_bytes = 0;    // arena scratch the kernel needs while it runs
  int64_t scratch_offset = -1;  // set by the memory planner
  int scratch_slot = -1;        // as Value::arena_slot, for the scratch
  // The kernel also runs without its scratch, only more slowly (the implicit GEMM's shared
  // packing): the planner gives it only room the arena has anyway, else sets scratch_bytes 0.
  bool scratch_optional = false;
  // Scratch each thread of the pool needs for itself (GEMM packing), from the kernel's
  // *_thread_scratch_bytes(); the model reserves the largest per thread after the arena.
  int64_t thread_scratch_bytes = 0;

  int64_t i(const std::string& key) const;
  double f(const std::string& key) const;
  bool b(const std::string& key) const;
  const std::string& s(const std::string& key) const;
  const std::vector<int64_t>& ints(const std::string& key) const;
  bool has(const std::string& key) const { return attrs.count(key) != 0; }
};

struct Constant {
  DType dtype = DType::Float32;
  Shape shape;
  ConstantBytes bytes;  // dense row-major, possibly shared with other graphs
  int64_t offset = -1;  // in the weights blob, set by codegen (64-byte aligned)
  const float* f32() const { return reinterpret_cast<const float*>(bytes.data()); }
};

struct GraphOutput {
  int value = -1;
  std::string name;
};

// Whose arithmetic a quantized convolution reproduces: torch's quantized engines on x86-64.
// X86, torch's default engine, runs convolutions with symmetric weights and at most 100
// groups on oneDNN (on CPUs with AVX512-VNNI), which rounds in another order
// (QRequant::acc_scale in aotc/rt/kernels/quantized.h), and the rest on fbgemm; Fbgemm runs
// them all on fbgemm.
enum class QuantizedEngine { X86, Fbgemm };

class Graph {
 public:
  // A deque so that references to values stay valid while lowerings add more.
  std::deque<Value> values;
  std::vector<Op> ops;
  std::vector<Constant> constants;
  std::vector<int> inputs;  // value ids, in forward()'s argument order
  std::vector<GraphOutput> outputs;
  int64_t arena_bytes = 0;        // set by the memory planner
  int64_t arena_lower_bound = 0;  // peak of simultaneously live bytes
  // Every constant read has its Constant::offset in a weights blob laid out already (aotc
  // --dim: the code for every size reads the blob of the largest): codegen keeps them.
  bool weights_placed = false;
  // Compiled for a range of sizes (aotc --dim): a choice a pass makes by a size must hold
  // for every size, so passes decide as for large sizes where a size could be small.
  bool sizes_vary = false;
  // Control flow the frontend decided while compiling, in order: each `if` taken and each
  // loop's trip count, where. With sizes that vary, every size must decide alike.
  struct Decision {
    SourceLocation loc;
    std::string what;  // "if: then", "if: else", "loop: 12 trips"
  };
  std::vector<Decision> decisions;
  // Set where graphs share their constants' buffers (frontend::ModuleFile: aotc --dim's
  // samples): what passes compute from those buffers is kept here for the other graphs.
  std::shared_ptr<DerivedConstants> derived_constants;
  QuantizedEngine quantized_engine = QuantizedEngine::X86;  // aotc --quantized-engine

  int add_value(DType dtype, Shape shape, std::string name = {});
  int add_input(DType dtype, Shape shape, std::string name);
  int add_constant(DType dtype, Shape shape, std::vector<uint8_t> bytes, std::string name = {});
  int add_constant(DType dtype, Shape shape, ConstantBytes bytes, std::string name = {});
  int add_f32_constant(Shape shape, std::vector<float> data, std::string name = {});
  // A constant that a pass computes from constant values `sources` (-1: none), a weight
  // packed, transformed, merged, folded or converted: make() gives its bytes, and must read
  // nothing but the sources' bytes and what `recipe` names (the pass and every parameter).
  // With derived_constants set, a product made from the same buffers by the same recipe for
  // another graph is taken instead of made again.
  int add_derived_constant(const std::string& recipe, const std::vector<int>& sources, DType dtype,
                           Shape shape, const std::function<std::vector<uint8_t>()>& make,
                           std::string name = {});
  // A value viewing src's bytes with a new shape (same dtype, same element count or a
  // sub-range starting at byte_offset).
  int add_alias(int src, Shape shape, int64_t byte_offset = 0);
  Op& add_op(std::string kind, std::vector<int> inputs, std::vector<int> outputs, SourceLocation loc = {});

  Value& value(int id) { return values.at(static_cast<size_t>(id)); }
  const Value& value(int id) const { return values.at(static_cast<size_t>(id)); }
  // The value that owns the bytes of id (follows alias chains).
  int storage_root(int id) const;
  // Where id's bytes start in its storage root's (the alias offsets along the chain summed).
  int64_t root_byte_offset(int id) const;
  // The value whose memory id shares in torch: follows alias chains and view_of links.
  int view_root(int id) const;
  bool is_constant(int id) const { return value(storage_root(id)).storage == Storage::Constant; }
  Constant& constant_of(int id);
  const Constant& constant_of(int id) const;
  // Number of ops reading value id (aliases count as their own readers).
  std::vector<int> use_counts() const;

  std::string dump() const;  // human-readable, for -v and tests
};

}  // namespace aotc::ir
