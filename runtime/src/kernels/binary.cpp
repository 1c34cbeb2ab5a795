// binary.cpp - y = a OP (alpha * b) with general broadcasting over strided inputs.
// Dimensions are first simplified (size-1 dims dropped, mergeable neighbours merged),
// so the common cases end up as a few long rows with a contiguous, scalar or
// broadcast operand, each handled by its own vectorisable loop. y may alias a or b
// when that operand has the full output shape.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

struct Add {
  float operator()(float x, float y) const { return x + y; }
};
struct Sub {
  float operator()(float x, float y) const { return x - y; }
};
struct AddScaled {  // add/sub with alpha != 1 (sub passes -alpha: x + (-alpha) y == x - alpha y)
  float alpha;
  float operator()(float x, float y) const { return x + alpha * y; }
};
struct Mul {
  float operator()(float x, float y) const { return x * y; }
};
struct Div {
  float operator()(float x, float y) const { return x / y; }
};

// One row of count outputs; the stride of each input is 1 (contiguous), 0 (broadcast)
// or anything else.
template <class F>
void binary_row(F f, const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t count) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < count; ++i) y[i] = f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const float bv = b[0];
    for (int64_t i = 0; i < count; ++i) y[i] = f(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const float av = a[0];
    for (int64_t i = 0; i < count; ++i) y[i] = f(av, b[i]);
  } else if (sa == 0 && sb == 0) {
    const float v = f(a[0], b[0]);
    for (int64_t i = 0; i < count; ++i) y[i] = v;
  } else {
    for (int64_t i = 0; i < count; ++i) y[i] = f(a[i * sa], b[i * sb]);
  }
}

// The simplified index space: dims[rank - 1] is the row.
struct Layout {
  int rank = 0;
  int64_t dims[8] = {};
  int64_t sa[8] = {};
  int64_t sb[8] = {};
};

// Drops size-1 dims and merges dim d into d + 1 where both inputs step through them as
// one dimension (the output is dense, so it always can). Returns false when empty.
bool simplify(const BinaryParams& p, Layout& l) {
  for (int d = 0; d < p.rank; ++d) {
    if (p.out_dims[d] <= 0) return false;
    if (p.out_dims[d] == 1) continue;
    if (l.rank > 0) {
      const int last = l.rank - 1;
      if (l.sa[last] == p.a_strides[d] * p.out_dims[d] && l.sb[last] == p.b_strides[d] * p.out_dims[d]) {
        l.dims[last] *= p.out_dims[d];
        l.sa[last] = p.a_strides[d];
        l.sb[last] = p.b_strides[d];
        continue;
      }
    }
    l.dims[l.rank] = p.out_dims[d];
    l.sa[l.rank] = p.a_strides[d];
    l.sb[l.rank] = p.b_strides[d];
    ++l.rank;
  }
  if (l.rank == 0) {  // a single element
    l.rank = 1;
    l.dims[0] = 1;
    l.sa[0] = 0;
    l.sb[0] = 0;
  }
  return true;
}

// Outputs [begin, end) of the dense output, row piece by row piece.
template <class F>
void binary_range(F f, const Layout& l, const float* a, const float* b, float* y, int64_t begin,
                  int64_t end) {
  const int inner = l.rank - 1;
  int64_t idx[8];
  int64_t off_a = 0, off_b = 0, rem = begin;
  for (int d = inner; d >= 0; --d) {
    idx[d] = rem % l.dims[d];
    rem /= l.dims[d];
    off_a += idx[d] * l.sa[d];
    off_b += idx[d] * l.sb[d];
  }
  for (int64_t e = begin; e < end;) {
    const int64_t len = detail::min_i64(l.dims[inner] - idx[inner], end - e);
    binary_row(f, a + off_a, l.sa[inner], b + off_b, l.sb[inner], y + e, len);
    e += len;
    idx[inner] += len;
    off_a += len * l.sa[inner];
    off_b += len * l.sb[inner];
    // Carry into the outer dims.
    for (int d = inner; d > 0 && idx[d] == l.dims[d]; --d) {
      off_a += l.sa[d - 1] - l.dims[d] * l.sa[d];
      off_b += l.sb[d - 1] - l.dims[d] * l.sb[d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template <class F>
void binary_run(ThreadPool& pool, F f, const Layout& l, const float* a, const float* b, float* y) {
  int64_t total = 1;
  for (int d = 0; d < l.rank; ++d) total *= l.dims[d];
  pool.parallel_for(total, detail::kElementwiseMinChunk,
                    [&](int64_t begin, int64_t end) { binary_range(f, l, a, b, y, begin, end); });
}

}  // namespace

void binary_f32(ThreadPool& pool, const BinaryParams& p, const float* a, const float* b, float* y) {
  Layout l;
  if (p.rank < 0 || p.rank > 8 || !simplify(p, l)) return;
  switch (p.op) {
    case BinaryOp::Add:
      if (p.alpha == 1.0f) {
        binary_run(pool, Add{}, l, a, b, y);
      } else {
        binary_run(pool, AddScaled{p.alpha}, l, a, b, y);
      }
      break;
    case BinaryOp::Sub:
      if (p.alpha == 1.0f) {
        binary_run(pool, Sub{}, l, a, b, y);
      } else {
        binary_run(pool, AddScaled{-p.alpha}, l, a, b, y);
      }
      break;
    case BinaryOp::Mul:
      binary_run(pool, Mul{}, l, a, b, y);
      break;
    case BinaryOp::Div:
      binary_run(pool, Div{}, l, a, b, y);
      break;
  }
}

}  // namespace aotc::rt
