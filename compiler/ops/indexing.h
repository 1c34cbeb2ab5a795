// indexing.h - shared pieces of the indexing ops (index_select, x[idx], gather,
// repeat_interleave with tensor repeats, masked_select).
#pragma once

#include <optional>

#include "strided_view.h"

namespace aotc::ops {

// The values of an int64, int32 or bool tensor known at compile time (a constant, or an
// alias of one), row-major; nullopt for a tensor computed at run time.
std::optional<std::vector<int64_t>> constant_int_values(const ir::Graph& graph, int id);

// IR "index_gather": y = x indexed along the dims [first, first + K) by K index tensors
// of one shape (int64 or int32); y's shape is x's dims before first, the index shape, then
// x's dims after the indexed ones. x is read densely.
int add_index_gather(LowerContext& ctx, int x, int64_t first, const std::vector<int>& indices);

// index_select of x along dim with indices known at compile time (an int64 constant).
int index_select_constant(LowerContext& ctx, int x, int64_t dim, const std::vector<int64_t>& indices);

}  // namespace aotc::ops
