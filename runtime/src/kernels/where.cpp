// where.cpp - y = cond ? a : b with broadcasting of all three operands (torch.where,
// masked_fill). The select only moves bytes, so one kernel serves every dtype by element
// size. The output is dense; the walk is an odometer over the output index space with
// the innermost dim as rows.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

template <class E>
void where_range(const WhereParams& p, const bool* cond, const E* a, const E* b, E* y, int64_t begin,
                 int64_t end) {
  const int rank = p.rank;
  if (rank == 0) {
    if (begin < end) y[0] = cond[0] ? a[0] : b[0];
    return;
  }
  const int inner = rank - 1;
  int64_t idx[8];
  int64_t oc = 0, oa = 0, ob = 0, rem = begin;
  for (int d = inner; d >= 0; --d) {
    idx[d] = rem % p.out_dims[d];
    rem /= p.out_dims[d];
    oc += idx[d] * p.cond_strides[d];
    oa += idx[d] * p.a_strides[d];
    ob += idx[d] * p.b_strides[d];
  }
  const int64_t sc = p.cond_strides[inner], sa = p.a_strides[inner], sb = p.b_strides[inner];
  for (int64_t e = begin; e < end;) {
    const int64_t len = detail::min_i64(p.out_dims[inner] - idx[inner], end - e);
    for (int64_t i = 0; i < len; ++i) y[e + i] = cond[oc + i * sc] ? a[oa + i * sa] : b[ob + i * sb];
    e += len;
    idx[inner] += len;
    oc += len * sc;
    oa += len * sa;
    ob += len * sb;
    for (int d = inner; d > 0 && idx[d] == p.out_dims[d]; --d) {
      oc += p.cond_strides[d - 1] - p.out_dims[d] * p.cond_strides[d];
      oa += p.a_strides[d - 1] - p.out_dims[d] * p.a_strides[d];
      ob += p.b_strides[d - 1] - p.out_dims[d] * p.b_strides[d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template <class E>
void where_run(ThreadPool& pool, const WhereParams& p, const bool* cond, const void* a, const void* b,
               void* y) {
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.out_dims[d];
  if (total <= 0) return;
  const E* ta = static_cast<const E*>(a);
  const E* tb = static_cast<const E*>(b);
  E* ty = static_cast<E*>(y);
  pool.parallel_for(total, detail::kElementwiseMinChunk,
                    [&](int64_t begin, int64_t end) { where_range<E>(p, cond, ta, tb, ty, begin, end); });
}

}  // namespace

void where(ThreadPool& pool, const WhereParams& p, int64_t elem_size, const bool* cond, const void* a,
           const void* b, void* y) {
  if (p.rank < 0 || p.rank > 8) return;
  switch (elem_size) {
    case 1:
      return where_run<uint8_t>(pool, p, cond, a, b, y);
    case 4:
      return where_run<uint32_t>(pool, p, cond, a, b, y);
    case 8:
      return where_run<uint64_t>(pool, p, cond, a, b, y);
    default:
      return;
  }
}

}  // namespace aotc::rt
