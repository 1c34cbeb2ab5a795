// reduce.cpp - sum / mean / max / min / prod over any set of dims of a dense float32 or
// int64 tensor.
// Neighbouring dims with the same role are merged first, which turns most reductions
// into one of: a full reduction, rows (reduce the contiguous dim), or the generic walk
// that folds contiguous input rows into output rows. Every output element is folded in
// the same order whatever the thread count, so results are deterministic.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <Eigen/Core>
#include <limits>
#include <type_traits>

#include "kernel_util.h"

namespace aotc::rt {
namespace detail {

// Eigen's NaN-propagating reductions vectorise with every compiler and -O level.
float max_contiguous(const float* x, int64_t count) {
  if (count <= 0) return -__builtin_inff();
  return Eigen::Map<const Eigen::ArrayXf>(x, count).maxCoeff<Eigen::PropagateNaN>();
}
float min_contiguous(const float* x, int64_t count) {
  if (count <= 0) return __builtin_inff();
  return Eigen::Map<const Eigen::ArrayXf>(x, count).minCoeff<Eigen::PropagateNaN>();
}

}  // namespace detail

namespace {

struct Layout {
  int rank = 0;
  int64_t dims[8] = {};
  bool reduced[8] = {};
  int64_t in_strides[8] = {};   // dense input
  int64_t out_strides[8] = {};  // dense over the kept dims, 0 for reduced ones
};

template <class T>
T identity_of(ReduceOp op) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  switch (op) {
    case ReduceOp::Max:
      return kFloat ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::min();
    case ReduceOp::Min:
      return kFloat ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    case ReduceOp::Prod:
      return T(1);
    default:
      return T(0);
  }
}

// Integer sums and products wrap, as torch's (unsigned arithmetic: no UB).
template <class T>
inline T wrap_add(T m, T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(m) + static_cast<std::make_unsigned_t<T>>(v));
  } else {
    return m + v;
  }
}
template <class T>
inline T wrap_mul(T m, T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(m) * static_cast<std::make_unsigned_t<T>>(v));
  } else {
    return m * v;
  }
}

template <ReduceOp Op, class T>
inline T combine(T m, T v) {
  if constexpr (Op == ReduceOp::Max) {
    if constexpr (std::is_floating_point_v<T>) {
      return detail::max_nan(m, v);
    } else {
      return v > m ? v : m;
    }
  } else if constexpr (Op == ReduceOp::Min) {
    if constexpr (std::is_floating_point_v<T>) {
      return detail::min_nan(m, v);
    } else {
      return v < m ? v : m;
    }
  } else if constexpr (Op == ReduceOp::Prod) {
    return wrap_mul(m, v);
  } else {
    return wrap_add(m, v);
  }
}

// Folds a contiguous run into one value.
template <ReduceOp Op, class T>
T fold_contiguous(const T* x, int64_t count) {
  if constexpr (std::is_same_v<T, float> && Op == ReduceOp::Max) {
    return detail::max_contiguous(x, count);
  } else if constexpr (std::is_same_v<T, float> && Op == ReduceOp::Min) {
    return detail::min_contiguous(x, count);
  } else if constexpr (std::is_same_v<T, float> && (Op == ReduceOp::Sum || Op == ReduceOp::Mean)) {
    return detail::sum_contiguous(x, count);
  } else {
    T v = identity_of<T>(Op);
    for (int64_t i = 0; i < count; ++i) v = combine<Op>(v, x[i]);
    return v;
  }
}

// y[j] = combine(y[j], x[j]) over a row.
template <ReduceOp Op, class T>
void fold_row(const T* x, T* y, int64_t count) {
  if constexpr (std::is_same_v<T, float> && (Op == ReduceOp::Max || Op == ReduceOp::Min)) {
    const Eigen::Map<const Eigen::ArrayXf> xa(x, count);
    Eigen::Map<Eigen::ArrayXf> ya(y, count);
    if constexpr (Op == ReduceOp::Max) {
      ya = ya.binaryExpr(xa, Eigen::internal::scalar_max_op<float, float, Eigen::PropagateNaN>());
    } else {
      ya = ya.binaryExpr(xa, Eigen::internal::scalar_min_op<float, float, Eigen::PropagateNaN>());
    }
  } else {
    for (int64_t j = 0; j < count; ++j) y[j] = combine<Op>(y[j], x[j]);
  }
}

// Folds every input element of the layout into its output in y, which already holds the
// identity. The last dim is walked as rows: folded into one output when it is reduced,
// folded elementwise into an output row when it is kept.
template <ReduceOp Op, class T>
void fold_walk(const Layout& l, const T* x, T* y) {
  const int inner = l.rank - 1;
  const int64_t row = l.dims[inner];
  int64_t outer = 1;
  for (int d = 0; d < inner; ++d) outer *= l.dims[d];
  int64_t idx[8] = {};
  int64_t off_x = 0, off_y = 0;
  for (int64_t r = 0; r < outer; ++r) {
    const T* xr = x + off_x;
    if (l.reduced[inner]) {
      y[off_y] = combine<Op>(y[off_y], fold_contiguous<Op>(xr, row));
    } else {
      fold_row<Op>(xr, y + off_y, row);
    }
    // Next row: odometer over the outer dims.
    for (int d = inner - 1; d >= 0; --d) {
      off_x += l.in_strides[d];
      off_y += l.out_strides[d];
      if (++idx[d] < l.dims[d]) break;
      off_x -= l.dims[d] * l.in_strides[d];
      off_y -= l.dims[d] * l.out_strides[d];
      idx[d] = 0;
    }
  }
}

template <ReduceOp Op, class T>
T finish(T v, int64_t count) {
  if constexpr (Op == ReduceOp::Mean) {
    return v / static_cast<T>(count);
  } else {
    (void)count;
    return v;
  }
}

template <ReduceOp Op, class T>
void reduce_run(ThreadPool& pool, const Layout& l, int64_t total_in, int64_t total_out, const T* x, T* y) {
  const T init = identity_of<T>(Op);
  const int64_t count = total_in / total_out;  // elements folded into each output

  if (l.rank == 1) {
    // Full reduction: fixed chunks (independent of the thread count) into partials.
    constexpr int64_t kMaxChunks = 1024;
    const int64_t chunk = detail::max_i64(65536, detail::ceil_div(total_in, kMaxChunks));
    const int64_t chunks = detail::ceil_div(total_in, chunk);
    T partial[kMaxChunks];
    pool.parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t begin = c * chunk;
        partial[c] = fold_contiguous<Op>(x + begin, detail::min_i64(chunk, total_in - begin));
      }
    });
    T v = init;
    for (int64_t c = 0; c < chunks; ++c) v = combine<Op>(v, partial[c]);
    y[0] = finish<Op>(v, count);
    return;
  }

  if (l.rank == 2 && !l.reduced[0]) {
    // Rows: each output is one contiguous run.
    const int64_t row = l.dims[1];
    pool.parallel_for(l.dims[0], detail::min_chunk_for(row), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) y[r] = finish<Op>(fold_contiguous<Op>(x + r * row, row), count);
    });
    return;
  }

  // Generic: split the largest kept dim over threads (its outputs are disjoint).
  int split = -1;
  for (int d = 0; d < l.rank; ++d)
    if (!l.reduced[d] && (split < 0 || l.dims[d] > l.dims[split])) split = d;
  const int64_t per_item = total_in / l.dims[split];
  pool.parallel_for(total_out, detail::kElementwiseMinChunk, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) y[o] = init;
  });
  pool.parallel_for(l.dims[split], detail::min_chunk_for(per_item), [&](int64_t s0, int64_t s1) {
    Layout part = l;
    part.dims[split] = s1 - s0;
    fold_walk<Op>(part, x + s0 * l.in_strides[split], y + s0 * l.out_strides[split]);
  });
  if (Op == ReduceOp::Mean) {
    pool.parallel_for(total_out, detail::kElementwiseMinChunk, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) y[o] = finish<Op>(y[o], count);
    });
  }
}

template <class T>
void reduce_typed(ThreadPool& pool, const ReduceParams& p, const T* x, T* y) {
  if (p.rank < 0 || p.rank > 8) return;
  // Merge neighbouring dims of the same role; size-1 dims play no role at all.
  Layout l;
  int64_t total_in = 1, total_out = 1;
  for (int d = 0; d < p.rank; ++d) {
    total_in *= p.dims[d];
    if (!p.reduce_mask[d]) total_out *= p.dims[d];
    if (p.dims[d] == 1) continue;
    if (l.rank > 0 && l.reduced[l.rank - 1] == p.reduce_mask[d]) {
      l.dims[l.rank - 1] *= p.dims[d];
      continue;
    }
    l.dims[l.rank] = p.dims[d];
    l.reduced[l.rank] = p.reduce_mask[d];
    ++l.rank;
  }
  if (total_out <= 0) return;
  if (total_in <= 0) {
    // Reducing an empty set: the identity (mean of nothing is NaN, as in torch).
    T v = identity_of<T>(p.op);
    if constexpr (std::is_floating_point_v<T>)
      if (p.op == ReduceOp::Mean) v = std::numeric_limits<T>::quiet_NaN();
    for (int64_t o = 0; o < total_out; ++o) y[o] = v;
    return;
  }
  bool any_reduced = false;
  for (int d = 0; d < l.rank; ++d) any_reduced = any_reduced || l.reduced[d];
  if (!any_reduced) {  // nothing to fold: every output is its one input
    pool.parallel_for(total_out, detail::kElementwiseMinChunk, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) y[o] = x[o];
    });
    return;
  }
  int64_t in_stride = 1, out_stride = 1;
  for (int d = l.rank - 1; d >= 0; --d) {
    l.in_strides[d] = in_stride;
    in_stride *= l.dims[d];
    l.out_strides[d] = l.reduced[d] ? 0 : out_stride;
    if (!l.reduced[d]) out_stride *= l.dims[d];
  }
  switch (p.op) {
    case ReduceOp::Sum:
      return reduce_run<ReduceOp::Sum>(pool, l, total_in, total_out, x, y);
    case ReduceOp::Mean:
      if constexpr (std::is_floating_point_v<T>)
        reduce_run<ReduceOp::Mean>(pool, l, total_in, total_out, x, y);
      return;
    case ReduceOp::Max:
      return reduce_run<ReduceOp::Max>(pool, l, total_in, total_out, x, y);
    case ReduceOp::Min:
      return reduce_run<ReduceOp::Min>(pool, l, total_in, total_out, x, y);
    case ReduceOp::Prod:
      return reduce_run<ReduceOp::Prod>(pool, l, total_in, total_out, x, y);
  }
}

}  // namespace

void reduce_f32(ThreadPool& pool, const ReduceParams& p, const float* x, float* y) {
  reduce_typed<float>(pool, p, x, y);
}

void reduce_i64(ThreadPool& pool, const ReduceParams& p, const int64_t* x, int64_t* y) {
  reduce_typed<int64_t>(pool, p, x, y);
}

}  // namespace aotc::rt
