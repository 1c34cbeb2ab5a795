// embedding_bag.cpp - sums, means or maxima of bags of table rows (nn.EmbeddingBag,
// F.embedding_bag): a bag per task, its rows accumulated in order into its output row.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <cmath>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

int64_t element(const void* data, bool int32, int64_t i) {
  return int32 ? static_cast<const int32_t*>(data)[i] : static_cast<const int64_t*>(data)[i];
}

}  // namespace

void embedding_bag_f32(ThreadPool& pool, const EmbeddingBagParams& p, const void* ids, const void* offsets,
                       const float* weight, const float* per_sample_weights, float* y) {
  if (p.bags <= 0 || p.dim <= 0) return;
  const int64_t D = p.dim;
  pool.parallel_for(p.bags, detail::min_chunk_for(D * 8), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t start = std::clamp<int64_t>(element(offsets, p.offsets_int32, b), 0, p.count);
      const int64_t end = b + 1 < p.offsets_count
                              ? std::clamp<int64_t>(element(offsets, p.offsets_int32, b + 1), start, p.count)
                              : p.count;
      float* const out = y + b * D;
      std::fill(out, out + D, 0.0f);
      int64_t rows = 0;
      for (int64_t i = start; i < end; ++i) {
        const int64_t id = element(ids, p.ids_int32, i);
        if (id == p.padding_idx || id < 0 || id >= p.vocab) continue;
        const float* const row = weight + id * D;
        if (p.mode == EmbeddingBagMode::Max) {
          for (int64_t d = 0; d < D; ++d)
            out[d] = rows == 0 || row[d] > out[d] || std::isnan(row[d]) ? row[d] : out[d];
        } else {
          const float w = per_sample_weights ? per_sample_weights[i] : 1.0f;
          for (int64_t d = 0; d < D; ++d) out[d] += w * row[d];
        }
        ++rows;
      }
      if (p.mode == EmbeddingBagMode::Mean && rows > 0) {
        const float n = static_cast<float>(rows);
        for (int64_t d = 0; d < D; ++d) out[d] /= n;
      }
    }
  });
}

}  // namespace aotc::rt
