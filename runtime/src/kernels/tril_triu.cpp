// tril_triu.cpp - the lower (tril) or upper (triu) triangle of a batch of matrices, the
// rest zeroed (zero bytes are zero in every dtype). Each row is one copy of its kept run
// and a memset of the rest: the kept columns of row r are a single interval.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>

#include "kernel_util.h"

namespace aotc::rt {

void tril_triu(ThreadPool& pool, const TriangleParams& p, const void* x, void* y) {
  if (p.batch <= 0 || p.rows <= 0 || p.cols <= 0 || p.elem_size <= 0) return;
  const auto* src = static_cast<const unsigned char*>(x);
  auto* dst = static_cast<unsigned char*>(y);
  const int64_t row_bytes = p.cols * p.elem_size;
  // A diagonal past either corner acts as that corner's; clamping it keeps r + diagonal
  // from overflowing (torch accepts any int64).
  const int64_t diagonal = detail::max_i64(-p.rows - 1, detail::min_i64(p.diagonal, p.cols + 1));
  pool.parallel_for(p.batch * p.rows, detail::min_chunk_for(p.cols), [&](int64_t begin, int64_t end) {
    for (int64_t br = begin; br < end; ++br) {
      const int64_t r = br % p.rows;
      // Kept columns [lo, hi): tril keeps c <= r + diagonal, triu keeps c >= r + diagonal.
      int64_t lo = p.upper ? r + diagonal : 0;
      int64_t hi = p.upper ? p.cols : r + diagonal + 1;
      lo = detail::max_i64(0, detail::min_i64(lo, p.cols));
      hi = detail::max_i64(lo, detail::min_i64(hi, p.cols));
      const unsigned char* s = src + br * row_bytes;
      unsigned char* d = dst + br * row_bytes;
      std::memset(d, 0, static_cast<size_t>(lo * p.elem_size));
      std::memcpy(d + lo * p.elem_size, s + lo * p.elem_size, static_cast<size_t>((hi - lo) * p.elem_size));
      std::memset(d + hi * p.elem_size, 0, static_cast<size_t>((p.cols - hi) * p.elem_size));
    }
  });
}

}  // namespace aotc::rt
