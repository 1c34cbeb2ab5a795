// embedding.cu - y[i, :] = weight[ids[i], :] (EmbeddingParams, as the CPU kernel takes
// it), one thread per output element. An id outside [0, vocab) gives a row of zeros, as on
// the CPU: a compiled model cannot raise, and must never read outside the table.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

template <class Id>
__global__ void embedding_kernel(EmbeddingParams p, const Id* __restrict__ ids,
                                 const float* __restrict__ weight, float* __restrict__ y) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= p.count * p.dim) return;
  const int64_t i = idx / p.dim, col = idx % p.dim;
  const int64_t id = static_cast<int64_t>(ids[i]);
  y[idx] = id >= 0 && id < p.vocab ? weight[id * p.dim + col] : 0.0f;
}

}  // namespace

void embedding_f32(cudaStream_t stream, const EmbeddingParams& p, const void* ids, const float* weight,
                   float* y) {
  if (p.count <= 0 || p.dim <= 0) return;
  const unsigned blocks = blocks_for(p.count * p.dim);
  if (p.ids_int32)
    embedding_kernel<<<blocks, kThreads, 0, stream>>>(p, static_cast<const int32_t*>(ids), weight, y);
  else
    embedding_kernel<<<blocks, kThreads, 0, stream>>>(p, static_cast<const int64_t*>(ids), weight, y);
  check_launch("embedding_kernel");
}

}  // namespace aotc::rt::cuda
