// cuda_registry.h - the CUDA target's code generators (aotc --target cuda), one file per
// IR op kind (<op>_cuda.cpp), kept apart from the CPU ones in compiler/ops/: an IR op
// kind that has no entry here cannot be compiled for CUDA, and aotc says so, naming the op
// and its Python line.
//
// A generator returns CUDA C++ in two parts: kernels specialised for this op (compile-time
// shapes; placed at namespace scope of the generated model.cu) and the code that enqueues
// the op on the run's stream (in the run function, whose locals are `ex` (the Exec),
// `stream`,
// `arena`, `w` and `in`, as EmitContext's pointer expressions expect).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <aotc/rt/cuda/precision.h>
#include <aotc/rt/kernels.h>

#include "../op_helpers.h"

namespace aotc::ops::cuda {

struct CudaCode {
  std::string kernels;  // __global__ functions, may be empty
  std::string launch;   // statements for the run function
};

// op_index is the op's position in the graph: unique, for the names of its kernels.
using CudaEmitFn = std::function<CudaCode(const EmitContext&, const ir::Op&, size_t op_index)>;
// Arena scratch the op's CUDA kernels need (planned before codegen), if not the CPU's.
using CudaScratchFn = std::function<int64_t(const ir::Op&)>;
// Whether the generator takes input `index` of op in `dtype`. Without one, float32 only.
using CudaDtypeFn = std::function<bool(const ir::Op& op, size_t index, ir::DType dtype)>;
// For generators whose kernels move or index elements of any dtype.
inline bool any_dtype(const ir::Op&, size_t, ir::DType) { return true; }

class CudaRegistry {
 public:
  static CudaRegistry& get();  // filled on first use by register_all_cuda_ops()
  void add(const std::string& kind, CudaEmitFn emit, CudaScratchFn scratch = nullptr,
           CudaDtypeFn dtypes = nullptr);
  const CudaEmitFn* find(const std::string& kind) const;
  const CudaScratchFn* find_scratch(const std::string& kind) const;
  bool takes_dtype(const ir::Op& op, size_t index, ir::DType dtype) const;
  std::vector<std::string> kinds() const;  // sorted

 private:
  std::map<std::string, CudaEmitFn> emit_;
  std::map<std::string, CudaScratchFn> scratch_;
  std::map<std::string, CudaDtypeFn> dtypes_;
};

// Every generator file's register function, in cuda_op_files.def's order.
void register_all_cuda_ops(CudaRegistry& r);

// One register function per generator file (cuda_op_files.def).
#define AOTC_CUDA_OP_FILE(name) void register_##name##_cuda(CudaRegistry& r);
#include "cuda_op_files.def"
#undef AOTC_CUDA_OP_FILE

// Every kernel a generator writes takes this last parameter, and its launch passes the run
// function's `aotc_dims`: with named dims (aotc --dim) the kernel's sizes are expressions in
// them (compiler/driver/dynamic_build.cpp), with fixed sizes it is unused.
inline constexpr const char* kKernelDimsParam = "const aotc::rt::cuda::KernelDims aotc_dims";
// The launch's grid for `count` threads in blocks of 256, written so that count is one
// literal of the generated code (a size the dynamic build fits).
std::string blocks_of_256(int64_t count);

// Shared by the generators: "{ // kind at file:line\n  <params> <call> }" like kernel_call,
// and the name of the op's generated kernel.
std::string kernel_name(size_t op_index, const std::string& suffix = "");
// A kernel generated for an op of one input and one output of the same element count,
// both dense, their element types those of the values: y[i] = <value>, where value is a
// C++ expression of x[i] (unary_cuda.cpp, cast_cuda.cpp).
CudaCode elementwise_map(const EmitContext& e, const ir::Op& op, size_t op_index, const std::string& value);

// An integer clamp's bound v rounded into t as the CPU's bound_to rounds it
// (runtime/src/kernels/unary.cpp: -inf and NaN give t's minimum, +inf its maximum; bool:
// v != 0), as a C++ literal of t (unary_cuda.cpp; binary_cuda.cpp for a fused clamp).
std::string int_bound_literal(ir::DType t, double v);

// "aotc::rt::cuda::RowGather{...}" when input `index` of op is a row order (an int32
// constant; attributes "row_period" and "row_src_period", fuse_row_gathers.cpp), else ""
// (gather_rows_cuda.cpp).
std::string row_gather_code(const EmitContext& e, const ir::Op& op, size_t index);
// Checks that every op of the graph has a CUDA generator that takes its operands' dtypes, and fails
// with a CompileError naming the first one that does not (its kind and Python line).
void check_cuda_support(const ir::Graph& graph);

// A convolution whose GEMM gathers its input (passes/cuda/convert_to_channels_last.cpp): its
// geometry as the gemm op's "conv_geometry" attribute, and back (gemm_cuda.cpp).
std::vector<int64_t> conv_geometry_attr(const rt::Conv2dParams& c);
rt::Conv2dParams gathered_conv_of(const ir::Op& op);
// Whether choose_gemm_operands.cpp gave a "gemm" op a 16-bit operand (gemm_cuda.cpp).
bool has_16bit_operand(const ir::Op& op);
// How a value of dtype t is stored, as the kernels that read either take it:
// "aotc::rt::cuda::Precision::Fp32" for float32, Fp16 / Bf16 for the 16-bit types that
// store_activations_16bit.cpp gives activations.
std::string storage_code(ir::DType t);

}  // namespace aotc::ops::cuda
