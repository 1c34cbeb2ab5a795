// kernels/data_movement.h - the kernels that move bytes: strided copy, fill, tril/triu, gather, scatter.
#pragma once

#include <aotc/rt/kernels/pointwise.h>

#include <cstdint>

namespace aotc::rt {

class ThreadPool;

// ---------------------------------------------------------------- data movement
// Copies a rank-dim index space of elem_size-byte elements between two strided views
// (strides in elements). Used for permute, transpose, expand, slicing and cat.
struct CopyParams {
  int32_t rank = 0;
  int64_t elem_size = 4;
  int64_t dims[8] = {};
  int64_t src_strides[8] = {};
  int64_t dst_strides[8] = {};
};
void copy_strided(ThreadPool& pool, const CopyParams& p, const void* src, void* dst);

// ---------------------------------------------------------------- views, indexing, factories
// Every element size: these kernels move bytes. Index tensors are int64 or
// int32 (index_elem_size 8 or 4); a negative index counts from the end, and an index still
// out of range is clamped into it (torch raises; a kernel cannot, and must never read
// outside x).

// count elements of elem_size bytes, each set to value[0..elem_size).
struct FillParams {
  int64_t count = 0;
  int64_t elem_size = 4;
  unsigned char value[8] = {};
};
void fill(ThreadPool& pool, const FillParams& p, void* dst);

// tril (upper false) / triu (upper true) of batch matrices rows x cols: y = x where
// col - row <= diagonal (tril) or col - row >= diagonal (triu), else zero bytes.
struct TriangleParams {
  int64_t batch = 1;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t diagonal = 0;
  bool upper = false;
  int64_t elem_size = 4;
};
void tril_triu(ThreadPool& pool, const TriangleParams& p, const void* x, void* y);

// Advanced indexing of dense x viewed as [outer, sizes[0], ..., sizes[K-1], inner] by K
// index tensors of count elements each (already broadcast to one shape):
// y[o, n, i] = x[o, indices[0][n], ..., indices[K-1][n], i]. index_select is K = 1.
struct IndexGatherParams {
  int64_t outer = 1;
  int64_t count = 0;
  int64_t inner = 1;
  int64_t elem_size = 4;
  int32_t num_indices = 1;
  int64_t sizes[8] = {};
  int64_t index_elem_size[8] = {};
};
void index_gather(ThreadPool& pool, const IndexGatherParams& p, const void* x, const void* const* indices,
                  void* y);

// torch.gather along dim: y[i] = x[i with i[dim] replaced by index[i]] for every i in the
// index's (and y's) shape dims. x_strides are x's element strides (0 broadcasts, as
// take_along_dim needs); x_dim_size bounds the index.
struct GatherParams {
  int32_t rank = 0;
  int32_t dim = 0;
  int64_t dims[8] = {};
  int64_t x_strides[8] = {};
  int64_t x_dim_size = 0;
  int64_t elem_size = 4;
  int64_t index_elem_size = 8;
};
void gather(ThreadPool& pool, const GatherParams& p, const void* x, const void* index, void* y);

// torch.scatter (no reduction) into y, which already holds self: for every i in the
// index's shape, y[i with i[dim] = index[i]] = src[i] (src_strides; all 0 to scatter one
// value). y_strides are y's dense strides, y_dim_size bounds the index. Runs in index
// order on one thread, so that with repeated indices the last write wins, deterministically.
struct ScatterParams {
  int32_t rank = 0;
  int32_t dim = 0;
  int64_t dims[8] = {};
  int64_t y_strides[8] = {};
  int64_t src_strides[8] = {};
  int64_t y_dim_size = 0;
  int64_t elem_size = 4;
  int64_t index_elem_size = 8;
};
void scatter(ThreadPool& pool, const ScatterParams& p, const void* src, const void* index, void* y);

// torch.scatter_reduce (scatter_add, index_add, index_reduce, x[indices] += v are its
// forms) into y, which already holds self: for every i in the index's shape, in index
// order, y[j] = y[j] OP src[i] where j is i with i[dim] = index[i] (geometry as scatter's;
// the index read through index_strides, 0 along dims it is broadcast over, as index_add's
// 1-d index is). Without include_self, each element of y that some index reaches starts
// from OP's identity instead of self's value. Mean divides each such element by its count
// (plus one with include_self), flooring for integers; Amax / Amin keep a NaN once met, as
// torch does; integer sums and products wrap. Elements of type t (F32, I64 or I32).
// Only positions of one line (every coordinate but dim's equal) reach the same element, so
// the lines are split over the threads and each element's contributions still fold in
// index order. scratch: scatter_reduce_scratch_bytes (the counts of Mean), else null.
enum class ScatterReduceOp : int32_t { Sum = 0, Prod = 1, Mean = 2, Amax = 3, Amin = 4 };
struct ScatterReduceParams {
  ScatterParams geometry;
  ScatterReduceOp op = ScatterReduceOp::Sum;
  ElemType type = ElemType::F32;
  bool include_self = true;
  int64_t y_numel = 0;  // y's elements (the counts of Mean)
  int64_t index_strides[8] = {};
};
inline int64_t scatter_reduce_scratch_bytes(const ScatterReduceParams& p) {
  return p.op == ScatterReduceOp::Mean ? p.y_numel * 8 : 0;
}
void scatter_reduce(ThreadPool& pool, const ScatterReduceParams& p, const void* src, const void* index,
                    void* y, void* scratch);

}  // namespace aotc::rt
