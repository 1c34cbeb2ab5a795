// scatter.cpp - torch.scatter without reduction: one element written per index, in index
// order on one thread (repeated indices: the last write wins, every run the same). Indices
// are int64 or int32, wrapped when negative and clamped into range (index_util.h).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>

#include "index_util.h"

namespace aotc::rt {

void scatter(ThreadPool& /*pool*/, const ScatterParams& p, const void* src, const void* index, void* y) {
  if (p.rank < 1 || p.rank > 8 || p.dim < 0 || p.dim >= p.rank || p.y_dim_size <= 0) return;
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.dims[d];
  if (total <= 0) return;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* dst = static_cast<unsigned char*>(y);
  const int64_t elem = p.elem_size;
  int64_t idx[8] = {};
  int64_t y_off = 0, s_off = 0;  // y's offset without the scattered dim; src's offset
  for (int64_t i = 0; i < total; ++i) {
    const int64_t j = detail::read_index(index, p.index_elem_size, i, p.y_dim_size);
    std::memcpy(dst + (y_off + j * p.y_strides[p.dim]) * elem, s + s_off * elem, static_cast<size_t>(elem));
    for (int d = p.rank - 1; d >= 0; --d) {
      if (d != p.dim) y_off += p.y_strides[d];
      s_off += p.src_strides[d];
      if (++idx[d] < p.dims[d]) break;
      if (d != p.dim) y_off -= p.dims[d] * p.y_strides[d];
      s_off -= p.dims[d] * p.src_strides[d];
      idx[d] = 0;
    }
  }
}

}  // namespace aotc::rt
