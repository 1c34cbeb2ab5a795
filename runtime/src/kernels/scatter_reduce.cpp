// scatter_reduce.cpp - torch.scatter_reduce and its forms (scatter_add, index_add,
// index_reduce, x[indices] += v). Only positions of one line (every coordinate but dim's
// equal) reach the same element of y, so the threads take disjoint sets of lines (ranges of
// the coordinates after dim, or before it where those are too few) and walk their positions
// in index order: each element's contributions fold in the same order every run, and in
// the order the CUDA kernel folds them. Indices are int64 or int32, wrapped when negative
// and clamped into range (index_util.h); the arithmetic is scatter_reduce_step.h's.
#include <aotc/rt/kernels.h>
#include <aotc/rt/kernels/scatter_reduce_step.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>

#include "index_util.h"

namespace aotc::rt {
namespace {

// Offsets in y (dim's coordinate left out), src and the index.
struct Offsets {
  int64_t y = 0, s = 0, x = 0;
};

// The index space as [outer, length, inner]: dims before dim, dim, dims after it.
struct Split {
  int64_t outer = 1, length = 1, inner = 1;
};

Split split_of(const ScatterParams& g) {
  Split s;
  for (int d = 0; d < g.rank; ++d) {
    if (d < g.dim) s.outer *= g.dims[d];
    if (d > g.dim) s.inner *= g.dims[d];
  }
  s.length = g.dims[g.dim];
  return s;
}

// The offsets of coordinate c over dims [first, last) (c row-major over them).
Offsets offsets_of(const ScatterReduceParams& p, int first, int last, int64_t c) {
  const ScatterParams& g = p.geometry;
  Offsets o;
  for (int d = last - 1; d >= first; --d) {
    const int64_t k = c % g.dims[d];
    c /= g.dims[d];
    o.y += k * g.y_strides[d];
    o.s += k * g.src_strides[d];
    o.x += k * p.index_strides[d];
  }
  return o;
}

// Whether the dims after dim are one contiguous run in y and src (each the next's size
// times its stride, the last 1) and the index is broadcast over them (index_add's): then
// a line's positions at one k share their index, and run over consecutive elements.
bool inner_rows(const ScatterReduceParams& p) {
  const ScatterParams& g = p.geometry;
  int64_t y_next = 1, s_next = 1;
  for (int d = g.rank - 1; d > g.dim; --d) {
    if (p.index_strides[d] != 0 || g.y_strides[d] != y_next || g.src_strides[d] != s_next) return false;
    y_next *= g.dims[d];
    s_next *= g.dims[d];
  }
  return true;
}

// row(y offset with the index applied, src offset, n): n consecutive elements, for the
// positions of outer coordinates [o0, o1) and inner ones [i0, i1), each line's in index
// order (n = 1 but for inner_rows).
template <class Row>
void walk(const ScatterReduceParams& p, const Split& sp, int64_t o0, int64_t o1, int64_t i0, int64_t i1,
          const void* index, Row row) {
  const ScatterParams& g = p.geometry;
  const int dim = g.dim;
  const Offsets first_inner = offsets_of(p, dim + 1, g.rank, i0);
  if (inner_rows(p)) {
    for (int64_t o = o0; o < o1; ++o) {
      const Offsets outer = offsets_of(p, 0, dim, o);
      for (int64_t k = 0; k < sp.length; ++k) {
        const int64_t j =
            detail::read_index(index, g.index_elem_size, outer.x + k * p.index_strides[dim], g.y_dim_size);
        row(outer.y + j * g.y_strides[dim] + first_inner.y, outer.s + k * g.src_strides[dim] + first_inner.s,
            i1 - i0);
      }
    }
    return;
  }
  int64_t start[8] = {};  // i0's coordinates over the dims after dim
  int64_t c = i0;
  for (int d = g.rank - 1; d > dim; --d) {
    start[d] = c % g.dims[d];
    c /= g.dims[d];
  }
  for (int64_t o = o0; o < o1; ++o) {
    const Offsets outer = offsets_of(p, 0, dim, o);
    for (int64_t k = 0; k < sp.length; ++k) {
      Offsets at{outer.y + first_inner.y, outer.s + first_inner.s + k * g.src_strides[dim],
                 outer.x + first_inner.x + k * p.index_strides[dim]};
      int64_t idx[8];
      std::memcpy(idx, start, sizeof(idx));
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t j = detail::read_index(index, g.index_elem_size, at.x, g.y_dim_size);
        row(at.y + j * g.y_strides[dim], at.s, 1);
        for (int d = g.rank - 1; d > dim; --d) {  // the next inner coordinate
          at.y += g.y_strides[d];
          at.s += g.src_strides[d];
          at.x += p.index_strides[d];
          if (++idx[d] < g.dims[d]) break;
          at.y -= g.dims[d] * g.y_strides[d];
          at.s -= g.dims[d] * g.src_strides[d];
          at.x -= g.dims[d] * p.index_strides[d];
          idx[d] = 0;
        }
      }
    }
  }
}

// The threads' lines, folded. Op is a template argument so that each row's loop is one
// operation the compiler can vectorise.
template <class T, ScatterReduceOp Op>
void reduce_lines(const ScatterReduceParams& p, const Split& sp, int64_t o0, int64_t o1, int64_t i0,
                  int64_t i1, const T* src, const void* index, T* y, int64_t* counts) {
  namespace step = scatter_reduce_step;
  if (!p.include_self || counts)
    walk(p, sp, o0, o1, i0, i1, index, [&](int64_t yo, int64_t, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        if (!p.include_self) y[yo + i] = step::identity<T>(Op);
        if (counts) counts[yo + i] = 0;
      }
    });
  walk(p, sp, o0, o1, i0, i1, index, [&](int64_t yo, int64_t so, int64_t n) {
    T* __restrict yr = y + yo;
    const T* __restrict sr = src + so;
    for (int64_t i = 0; i < n; ++i) yr[i] = step::combine(Op, yr[i], sr[i]);
    if (counts)
      for (int64_t i = 0; i < n; ++i) ++counts[yo + i];
  });
  if (!counts) return;
  walk(p, sp, o0, o1, i0, i1, index, [&](int64_t yo, int64_t, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      if (counts[yo + i] > 0) {  // the first visit divides; later ones see the count cleared
        y[yo + i] = step::divide(y[yo + i], counts[yo + i] + (p.include_self ? 1 : 0));
        counts[yo + i] = 0;
      }
  });
}

template <class T, ScatterReduceOp Op>
void scatter_reduce_op(ThreadPool& pool, const ScatterReduceParams& p, const T* src, const void* index, T* y,
                       int64_t* counts) {
  const Split sp = split_of(p.geometry);
  // Lines by inner ranges where there are enough of them for every thread, else by outer.
  const int64_t least = 16384 / (sp.length > 0 ? sp.length : 1) + 1;  // lines: about 16K positions a range
  if (sp.inner >= 2 * pool.size() || sp.outer < 2) {
    pool.parallel_for(sp.inner, least, [&](int64_t i0, int64_t i1) {
      reduce_lines<T, Op>(p, sp, 0, sp.outer, i0, i1, src, index, y, counts);
    });
  } else {
    const int64_t per_outer = (least + sp.inner - 1) / sp.inner;
    pool.parallel_for(sp.outer, per_outer, [&](int64_t o0, int64_t o1) {
      reduce_lines<T, Op>(p, sp, o0, o1, 0, sp.inner, src, index, y, counts);
    });
  }
}

template <class T>
void scatter_reduce_typed(ThreadPool& pool, const ScatterReduceParams& p, const T* src, const void* index,
                          T* y, int64_t* counts) {
  switch (p.op) {
    case ScatterReduceOp::Sum:
      return scatter_reduce_op<T, ScatterReduceOp::Sum>(pool, p, src, index, y, counts);
    case ScatterReduceOp::Prod:
      return scatter_reduce_op<T, ScatterReduceOp::Prod>(pool, p, src, index, y, counts);
    case ScatterReduceOp::Mean:
      return scatter_reduce_op<T, ScatterReduceOp::Mean>(pool, p, src, index, y, counts);
    case ScatterReduceOp::Amax:
      return scatter_reduce_op<T, ScatterReduceOp::Amax>(pool, p, src, index, y, counts);
    case ScatterReduceOp::Amin:
      return scatter_reduce_op<T, ScatterReduceOp::Amin>(pool, p, src, index, y, counts);
  }
}

}  // namespace

void scatter_reduce(ThreadPool& pool, const ScatterReduceParams& p, const void* src, const void* index,
                    void* y, void* scratch) {
  const ScatterParams& g = p.geometry;
  if (g.rank < 1 || g.rank > 8 || g.dim < 0 || g.dim >= g.rank || g.y_dim_size <= 0) return;
  for (int d = 0; d < g.rank; ++d)
    if (g.dims[d] <= 0) return;
  int64_t* counts = p.op == ScatterReduceOp::Mean ? static_cast<int64_t*>(scratch) : nullptr;
  if (p.op == ScatterReduceOp::Mean && !counts) return;
  switch (p.type) {
    case ElemType::F32:
      scatter_reduce_typed(pool, p, static_cast<const float*>(src), index, static_cast<float*>(y), counts);
      break;
    case ElemType::I64:
      scatter_reduce_typed(pool, p, static_cast<const int64_t*>(src), index, static_cast<int64_t*>(y),
                           counts);
      break;
    case ElemType::I32:
      scatter_reduce_typed(pool, p, static_cast<const int32_t*>(src), index, static_cast<int32_t*>(y),
                           counts);
      break;
    case ElemType::Bool:
      break;  // not offered (the lowering refuses it)
  }
}

}  // namespace aotc::rt
