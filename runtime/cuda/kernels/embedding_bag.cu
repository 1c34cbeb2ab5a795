// embedding_bag.cu - sums, means or maxima of bags of table rows (EmbeddingBagParams, as the
// CPU kernel takes them: the same skipped ids, empty bags, clamped offsets and order of
// additions). A block per bag, its threads over the columns, each walking the bag's ids.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

template <class Id, class Offset>
__global__ void embedding_bag_kernel(EmbeddingBagParams p, const Id* __restrict__ ids,
                                     const Offset* __restrict__ offsets, const float* __restrict__ weight,
                                     const float* __restrict__ per_sample_weights, float* __restrict__ y) {
  const int64_t b = blockIdx.x;
  const int64_t start = min(max(static_cast<int64_t>(offsets[b]), int64_t{0}), p.count);
  const int64_t end =
      b + 1 < p.offsets_count ? min(max(static_cast<int64_t>(offsets[b + 1]), start), p.count) : p.count;
  for (int64_t d = threadIdx.x; d < p.dim; d += blockDim.x) {
    float acc = 0.0f;
    int64_t rows = 0;
    for (int64_t i = start; i < end; ++i) {
      const int64_t id = static_cast<int64_t>(ids[i]);
      if (id == p.padding_idx || id < 0 || id >= p.vocab) continue;
      const float v = weight[id * p.dim + d];
      if (p.mode == EmbeddingBagMode::Max)
        acc = rows == 0 || v > acc || isnan(v) ? v : acc;
      else
        acc += (per_sample_weights ? per_sample_weights[i] : 1.0f) * v;
      ++rows;
    }
    if (p.mode == EmbeddingBagMode::Mean && rows > 0) acc /= static_cast<float>(rows);
    y[b * p.dim + d] = acc;
  }
}

template <class Id>
void launch(cudaStream_t stream, const EmbeddingBagParams& p, const Id* ids, const void* offsets,
            const float* weight, const float* per_sample_weights, float* y) {
  const unsigned threads = p.dim >= 128 ? 128u : static_cast<unsigned>((p.dim + 31) / 32 * 32);
  const auto bags = static_cast<unsigned>(p.bags);
  if (p.offsets_int32)
    embedding_bag_kernel<<<bags, threads, 0, stream>>>(p, ids, static_cast<const int32_t*>(offsets), weight,
                                                       per_sample_weights, y);
  else
    embedding_bag_kernel<<<bags, threads, 0, stream>>>(p, ids, static_cast<const int64_t*>(offsets), weight,
                                                       per_sample_weights, y);
}

}  // namespace

void embedding_bag_f32(cudaStream_t stream, const EmbeddingBagParams& p, const void* ids, const void* offsets,
                       const float* weight, const float* per_sample_weights, float* y) {
  if (p.bags <= 0 || p.dim <= 0) return;
  if (p.bags > 0x7fffffff) {
    note_error("embedding_bag_f32", "more than 2^31 - 1 bags");
    return;
  }
  if (p.ids_int32)
    launch(stream, p, static_cast<const int32_t*>(ids), offsets, weight, per_sample_weights, y);
  else
    launch(stream, p, static_cast<const int64_t*>(ids), offsets, weight, per_sample_weights, y);
  check_launch("embedding_bag_kernel");
}

}  // namespace aotc::rt::cuda
