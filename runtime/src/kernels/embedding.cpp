// embedding.cpp - gathers table rows by index (nn.Embedding, F.embedding).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>

#include "kernel_util.h"

namespace aotc::rt {

void embedding_f32(ThreadPool& pool, const EmbeddingParams& p, const void* ids, const float* weight,
                   float* y) {
  if (p.count <= 0 || p.dim <= 0) return;
  const auto* ids64 = static_cast<const int64_t*>(ids);
  const auto* ids32 = static_cast<const int32_t*>(ids);
  const size_t row_bytes = static_cast<size_t>(p.dim) * sizeof(float);
  pool.parallel_for(p.count, detail::min_chunk_for(p.dim), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t id = p.ids_int32 ? ids32[i] : ids64[i];
      float* row = y + i * p.dim;
      if (id < 0 || id >= p.vocab) {  // torch raises; never read outside the table
        std::memset(row, 0, row_bytes);
        continue;
      }
      std::memcpy(row, weight + id * p.dim, row_bytes);
    }
  });
}

}  // namespace aotc::rt
