// indexing.h - shared pieces of the indexing ops (index_select, x[idx], gather,
// repeat_interleave with tensor repeats, masked_select, scatter, tril/triu).
#pragma once

#include <functional>
#include <optional>

#include <aotc/rt/kernels.h>

#include "strided_view.h"

namespace aotc::ops {

// The values of an int64, int32 or bool tensor known at compile time (a constant, or an
// alias of one), row-major; nullopt for a tensor computed at run time.
std::optional<std::vector<int64_t>> constant_int_values(const ir::Graph& graph, int id);

// The positions (row-major, in `shape`) where a constant bool mask is true, one index list
// per dim of the mask.
std::vector<std::vector<int64_t>> mask_positions(const ir::Shape& shape, const std::vector<int64_t>& mask);

// A 1-d int64 constant holding values.
int int64_constant(ir::Graph& graph, const std::vector<int64_t>& values);

// int64 or int32: the dtypes of index tensors.
bool is_index_dtype(ir::DType t);
// Fails unless t is an index dtype ("the index must be int64 or int32, got ...").
void check_index_dtype(const LowerContext& ctx, ir::DType t);
// The index of an op along one dim (index_select, index_add, index_copy, ...): an index
// dtype, 0-d or 1-d.
void check_dim_index(const LowerContext& ctx, const ir::Value& index);

// The entries of a Tensor?[] of indices into a tensor of x_shape (aten::index, index_put),
// one per dim of x: an int64 / int32 index tensor, or -1 for a full slice (None, and the
// dims past the list); a constant bool mask becomes its positions, one int64 constant per
// dim it covers (its shape checked against those dims). A mask computed at run time calls
// runtime_mask, which fails with the caller's reason.
std::vector<int> index_tensors_per_dim(LowerContext& ctx, const Operand& list, const ir::Shape& x_shape,
                                       const std::function<void()>& runtime_mask);

// IR "index_gather": y = x indexed along the dims [first, first + K) by K index tensors
// of one shape (int64 or int32); y's shape is x's dims before first, the index shape, then
// x's dims after the indexed ones. x is read densely.
int add_index_gather(LowerContext& ctx, int x, int64_t first, const std::vector<int>& indices);

// index_select of x along dim with indices known at compile time (an int64 constant).
int index_select_constant(LowerContext& ctx, int x, int64_t dim, const std::vector<int64_t>& indices);

// The kernels' parameters as C++ for the CPU and CUDA generators alike, the struct named p:
// IR "gather" (gather.cpp), "tril_triu" (tril_triu.cpp); "index_gather" (indexing.cpp) with
// its index pointers as `idx`; "scatter" (scatter.cpp) with a scattered scalar's bytes as
// `value` where the op has no src.
ParamsCode gather_params_code(const EmitContext& e, const ir::Op& op);
ParamsCode tril_triu_params_code(const EmitContext& e, const ir::Op& op);
std::string index_gather_params_code(const EmitContext& e, const ir::Op& op);
std::string scatter_params_code(const EmitContext& e, const ir::Op& op);
// IR "scatter_reduce" (scatter_reduce.cpp): scatter_params_code's p, then the
// rt::ScatterReduceParams named r.
std::string scatter_reduce_params_code(const EmitContext& e, const ir::Op& op);

// Checks a scatter's operands as torch does (the index int64 or int32; its shape, index,
// with self's rank, at least 1, no larger than self outside dim, nor than src where
// src >= 0) and returns dim made non-negative (scatter.cpp).
int64_t check_scatter_operands(LowerContext& ctx, int self, int64_t dim_arg, int index_id,
                               const ir::Shape& index, int src);

// IR "scatter_reduce" of src into self along dim (scatter_reduce.cpp): self and src of one
// dtype, float32, int64 or int32; the checks of check_scatter_operands. The index is read
// in place through its view (an expand's zero strides included). Returns the output.
int add_scatter_reduce(LowerContext& ctx, int self, int64_t dim_arg, const StridedView& index, int src,
                       rt::ScatterReduceOp reduce, bool include_self);
// The index pointer of an IR "scatter_reduce", at its view's offset.
std::string scatter_reduce_index(const EmitContext& e, const ir::Op& op);
// scatter(self, dim, index, src or value, *, reduce="add" | "multiply") (scatter.cpp hands
// it over when reduce is given).
void lower_scatter_with_reduce(LowerContext& ctx);

}  // namespace aotc::ops
