#include "cuda_registry.h"

#include <aotc/rt/cuda/conv2d_plan.h>
#include <aotc/rt/kernels.h>

#include <algorithm>

namespace aotc::ops::cuda {

void register_all_cuda_ops(CudaRegistry& r) {
#define AOTC_CUDA_OP_FILE(name) register_##name##_cuda(r);
#include "cuda_op_files.def"
#undef AOTC_CUDA_OP_FILE
}

CudaRegistry& CudaRegistry::get() {
  static CudaRegistry* registry = [] {
    auto* r = new CudaRegistry;
    register_all_cuda_ops(*r);
    return r;
  }();
  return *registry;
}

void CudaRegistry::add(const std::string& kind, CudaEmitFn emit, CudaScratchFn scratch, CudaDtypeFn dtypes) {
  emit_[kind] = std::move(emit);
  if (scratch) scratch_[kind] = std::move(scratch);
  if (dtypes) dtypes_[kind] = std::move(dtypes);
}

bool CudaRegistry::takes_dtype(const ir::Op& op, size_t index, ir::DType dtype) const {
  auto it = dtypes_.find(op.kind);
  return it == dtypes_.end() ? dtype == ir::DType::Float32 : it->second(op, index, dtype);
}

const CudaEmitFn* CudaRegistry::find(const std::string& kind) const {
  auto it = emit_.find(kind);
  return it == emit_.end() ? nullptr : &it->second;
}

const CudaScratchFn* CudaRegistry::find_scratch(const std::string& kind) const {
  auto it = scratch_.find(kind);
  return it == scratch_.end() ? nullptr : &it->second;
}

std::vector<std::string> CudaRegistry::kinds() const {
  std::vector<std::string> names;
  for (const auto& [name, fn] : emit_) names.push_back(name);
  return names;
}

std::string storage_code(ir::DType t) {
  if (t == ir::DType::Float16) return "aotc::rt::cuda::Precision::Fp16";
  if (t == ir::DType::BFloat16) return "aotc::rt::cuda::Precision::Bf16";
  if (t != ir::DType::Float32) throw CompileError("internal: no CUDA storage for this dtype");
  return "aotc::rt::cuda::Precision::Fp32";
}

std::string kernel_name(size_t op_index, const std::string& suffix) {
  return "aotc_op" + std::to_string(op_index) + suffix;
}

CudaCode elementwise_map(const EmitContext& e, const ir::Op& op, size_t op_index, const std::string& value) {
  const ir::Value& x = e.graph.value(op.inputs[0]);
  const ir::Value& y = e.graph.value(op.outputs[0]);
  const int64_t count = ir::numel(y.shape);
  const std::string name = kernel_name(op_index);
  CudaCode code;
  code.kernels = "__global__ void __launch_bounds__(256) " + name + "(const " + EmitContext::c_type(x.dtype) +
                 "* __restrict__ x, " + EmitContext::c_type(y.dtype) + "* y, " + kKernelDimsParam +
                 ") {\n"
                 "  const int64_t i = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;\n"
                 "  if (i >= " +
                 std::to_string(count) + "ll) return;\n  y[i] = " + value + ";\n}\n";
  if (count > 0)
    code.launch = kernel_call(op, "",
                              name + "<<<" + blocks_of_256(count) + ", 256, 0, stream>>>(" +
                                  e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) +
                                  ", aotc_dims); aotc::rt::cuda::check_launch(\"" + name + "\");");
  return code;
}

std::string blocks_of_256(int64_t count) {
  return "static_cast<unsigned>((" + std::to_string(count) + "ll + 255) / 256)";
}

void check_cuda_support(const ir::Graph& graph) {
  const CudaRegistry& r = CudaRegistry::get();
  for (const ir::Op& op : graph.ops) {
    std::string where = op.loc.str();
    if (!op.loc.text.empty()) where += ": " + op.loc.text;
    if (!r.find(op.kind)) {
      std::string known;
      for (const std::string& k : r.kinds()) known += (known.empty() ? "" : ", ") + k;
      throw CompileError("--target cuda: IR op '" + op.kind + "' (at " + where +
                         ") has no CUDA implementation yet (the CUDA target has: " + known + ")");
    }
    for (size_t i = 0; i < op.inputs.size(); ++i)
      if (const int id = op.inputs[i]; id >= 0 && !r.takes_dtype(op, i, graph.value(id).dtype))
        throw CompileError("--target cuda: IR op '" + op.kind + "' (at " + where + ") reads a " +
                           ir::dtype_name(graph.value(id).dtype) + " tensor as input " + std::to_string(i) +
                           ", which its CUDA generator does not take");
  }
}

}  // namespace aotc::ops::cuda
