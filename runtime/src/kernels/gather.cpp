// gather.cpp - torch.gather / take_along_dim: one element per index, read through x's
// strides (0 along dims that take_along_dim broadcasts). Indices are int64 or int32,
// wrapped when negative and clamped into range (index_util.h).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>

#include "index_util.h"
#include "kernel_util.h"

namespace aotc::rt {

void gather(ThreadPool& pool, const GatherParams& p, const void* x, const void* index, void* y) {
  if (p.rank < 1 || p.rank > 8 || p.dim < 0 || p.dim >= p.rank || p.x_dim_size <= 0) return;
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.dims[d];
  if (total <= 0) return;
  const auto* src = static_cast<const unsigned char*>(x);
  auto* dst = static_cast<unsigned char*>(y);
  const int64_t elem = p.elem_size;
  const int inner = p.rank - 1;
  pool.parallel_for(total, detail::kElementwiseMinChunk, [&](int64_t begin, int64_t end) {
    // Walk the index space in row-major order, keeping x's offset without the gathered dim.
    int64_t idx[8];
    int64_t off = 0, rem = begin;
    for (int d = inner; d >= 0; --d) {
      idx[d] = rem % p.dims[d];
      rem /= p.dims[d];
      if (d != p.dim) off += idx[d] * p.x_strides[d];
    }
    for (int64_t i = begin; i < end; ++i) {
      const int64_t j = detail::read_index(index, p.index_elem_size, i, p.x_dim_size);
      std::memcpy(dst + i * elem, src + (off + j * p.x_strides[p.dim]) * elem, static_cast<size_t>(elem));
      for (int d = inner; d >= 0; --d) {
        if (d != p.dim) off += p.x_strides[d];
        if (++idx[d] < p.dims[d]) break;
        if (d != p.dim) off -= p.dims[d] * p.x_strides[d];
        idx[d] = 0;
      }
    }
  });
}

}  // namespace aotc::rt
