// dynamic_build.h - models whose inputs have named dims with ranges (aotc --input
// ids:BxS:int64 --dim B=1..32 --dim S=1..512): one library for every size in range.
//
// How: the model is lowered and compiled (passes and code generation, not the build) at
// sample sizes of its dims: the largest, a grid of up to three sizes per dim, and check
// points (the smallest sizes, random sizes). The graphs must agree op for op; the memory
// plan and the weights are the largest sample's (every buffer fits in its slot at smaller
// sizes). Every integer in the generated code that differs between samples (extents,
// strides, byte counts) becomes the polynomial in the dims through its grid values
// (dim_polynomial.h), checked exactly at the check points, and is computed once per run
// from the input shapes. Whatever cannot be expressed so (a branch, a loop or a kernel
// choice that changes with a dim, a size folded into a float) is a compile error naming
// the op, its source line and the dim. A dim that only some sizes allow (a view that
// splits it evenly) is restricted to multiples of the step the op needs, checked at run time.
// On CUDA the generated kernels are fitted too (they take the sizes as a KernelDims
// argument), and the runtime captures a CUDA graph per shape (runtime/cuda/device_runtime.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "../frontend/frontend.h"
#include "build_model.h"
#include "input_spec.h"

namespace aotc::driver {

struct DynamicSignature {
  std::vector<InputSignature> inputs;
  std::vector<DimRange> dims;
};

// Throws std::invalid_argument when a named dim has no --dim (the message says how to
// give it), a --dim names no input's dim, a name is given twice, there are too many
// dims, or the largest input is too large.
void check_dynamic_signature(const DynamicSignature& signature);

// The input specs at the given sizes of the named dims (signature.dims order).
std::vector<frontend::InputSpec> specs_at(const DynamicSignature& signature,
                                          const std::vector<int64_t>& sizes);

// Lowers the model for concrete input shapes (the frontend; called once per sample).
using LowerModel = std::function<ir::Graph(const std::vector<frontend::InputSpec>&)>;

// Compiles the model for every size of its named dims into build.output (CPU or CUDA).
// Throws CompileError on any problem; nothing is left at build.output then.
void build_dynamic_model(const LowerModel& lower, const DynamicSignature& signature, const ModelBuild& build);

}  // namespace aotc::driver
