// index_gather.cpp - advanced indexing (x[idx], x[:, idx], x[i, j] with index tensors) and
// index_select: each output block of `inner` elements is one memcpy of the block its
// indices select. Indices are read as int64 or int32, wrapped when negative and clamped
// into range so that a bad index can never read outside x.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>

#include "index_util.h"
#include "kernel_util.h"

namespace aotc::rt {

void index_gather(ThreadPool& pool, const IndexGatherParams& p, const void* x, const void* const* indices,
                  void* y) {
  if (p.outer <= 0 || p.count <= 0 || p.inner <= 0 || p.num_indices < 1 || p.num_indices > 8) return;
  int64_t block_count = 1;  // blocks of `inner` elements per outer index
  for (int k = 0; k < p.num_indices; ++k) {
    if (p.sizes[k] <= 0) return;  // nothing to index (torch would raise for count > 0)
    block_count *= p.sizes[k];
  }
  const int64_t block_bytes = p.inner * p.elem_size;
  const auto* src = static_cast<const unsigned char*>(x);
  auto* dst = static_cast<unsigned char*>(y);
  pool.parallel_for(p.outer * p.count, detail::min_chunk_for(p.inner), [&](int64_t begin, int64_t end) {
    for (int64_t on = begin; on < end; ++on) {
      const int64_t o = on / p.count, n = on % p.count;
      int64_t block = 0;
      for (int k = 0; k < p.num_indices; ++k)
        block = block * p.sizes[k] + detail::read_index(indices[k], p.index_elem_size[k], n, p.sizes[k]);
      std::memcpy(dst + on * block_bytes, src + (o * block_count + block) * block_bytes,
                  static_cast<size_t>(block_bytes));
    }
  });
}

}  // namespace aotc::rt
