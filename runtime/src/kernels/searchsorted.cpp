// searchsorted.cpp - each value's position among sorted boundaries (torch.searchsorted,
// torch.bucketize): lines of `count` values, each line searched in its own row of `length`
// boundaries, or all in row 0 (shared). A binary search per value (kernels/binary_search.h).
#include <aotc/rt/kernels.h>
#include <aotc/rt/kernels/binary_search.h>
#include <aotc/rt/thread_pool.h>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

template <class T>
void search(ThreadPool& pool, bool right, int64_t lines, int64_t length, int64_t count, bool shared,
            const T* sorted, const T* values, int64_t* y) {
  pool.parallel_for(lines * count, detail::min_chunk_for(8), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const T* row = shared ? sorted : sorted + i / count * length;
      y[i] = binary_search::position(row, length, values[i], right);
    }
  });
}

}  // namespace

void searchsorted(ThreadPool& pool, ElemType t, bool right, int64_t lines, int64_t length, int64_t count,
                  bool shared, const void* sorted, const void* values, int64_t* y) {
  if (lines <= 0 || count <= 0) return;
  if (t == ElemType::F32)
    search(pool, right, lines, length, count, shared, static_cast<const float*>(sorted),
           static_cast<const float*>(values), y);
  else if (t == ElemType::I64)
    search(pool, right, lines, length, count, shared, static_cast<const int64_t*>(sorted),
           static_cast<const int64_t*>(values), y);
}

}  // namespace aotc::rt
