#include "op_helpers.h"

#include <cstring>

namespace aotc::ops {

int64_t normalize_dim(const LowerContext& ctx, int64_t dim, int64_t rank) {
  const int64_t bound = rank == 0 ? 1 : rank;  // torch accepts dim 0 and -1 for 0-d tensors
  if (dim < -bound || dim >= bound)
    ctx.fail("dim " + std::to_string(dim) + " is out of range for a tensor of rank " + std::to_string(rank));
  return dim < 0 ? dim + bound : dim;
}

int lower_as(LowerContext& ctx, const std::string& name, std::vector<Operand> args) {
  return lower_as_all(ctx, name, std::move(args), 1)[0];
}

std::vector<int> lower_as_all(LowerContext& ctx, const std::string& name, std::vector<Operand> args,
                              size_t num_outputs) {
  const LowerFn* lower = Registry::get().find_lowering(name);
  if (!lower) ctx.fail("internal: no lowering of " + name);
  LowerContext step(ctx.graph, ctx.op_name, std::move(args), num_outputs, ctx.loc);
  (*lower)(step);
  std::vector<int> outputs;
  for (const Operand& o : step.outputs) {
    if (!o.is_tensor()) ctx.fail("internal: " + name + " gave no tensor");
    outputs.push_back(o.tensor);
  }
  return outputs;
}

ir::Shape broadcast_shapes(const LowerContext& ctx, const ir::Shape& a, const ir::Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  ir::Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      ctx.fail("shapes " + ir::shape_str(a) + " and " + ir::shape_str(b) + " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> dense_strides(const ir::Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

std::vector<int64_t> broadcast_strides(const ir::Shape& shape, const ir::Shape& out) {
  std::vector<int64_t> dense = dense_strides(shape);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) strides[lead + i] = shape[i] == 1 ? 0 : dense[i];
  return strides;
}

const std::vector<int>& tensor_list_arg(const LowerContext& ctx) {
  const Operand& list = ctx.arg(0);
  if (list.kind != Operand::Kind::TensorList || list.tensors.empty())
    ctx.fail("argument 0 must be a non-empty list of tensors, got " + list.describe());
  for (int id : list.tensors)
    if (id < 0) ctx.fail("the list of tensors holds None");
  return list.tensors;
}

int scalar_constant(ir::Graph& graph, double value) {
  return graph.add_f32_constant({}, {static_cast<float>(value)});
}

std::string kernel_call(const ir::Op& op, const std::string& params, const std::string& call) {
  std::string line = "  {  // " + op.kind;
  if (!op.loc.file.empty()) {
    std::string where = op.loc.str();
    // Model-derived text goes into a comment: keep it on one line and unable to end it.
    for (char& c : where)
      if (c == '\n' || c == '\r' || static_cast<unsigned char>(c) < 0x20) c = ' ';
    for (size_t pos; (pos = where.find("*/")) != std::string::npos;) where.replace(pos, 2, "* /");
    for (size_t pos; (pos = where.find('\\')) != std::string::npos;) where.replace(pos, 1, "/");
    line += " at " + where;
  }
  return line + "\n    " + params + "\n    " + call + "\n  }\n";
}

}  // namespace aotc::ops
