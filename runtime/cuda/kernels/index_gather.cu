// index_gather.cu - advanced indexing (x[idx], x[:, idx], x[i, j] with index tensors) and
// index_select (IndexGatherParams, as the CPU kernel takes it): y[o, n, :] = the block of
// `inner` elements that the n-th indices select in x[o]. Blocks are moved in the widest
// unit (16, 8, 4, 2 or 1 bytes) that divides them and both pointers' alignment, one thread
// per unit, so that consecutive threads move consecutive bytes. Indices int64 or int32,
// wrapped when negative and clamped into range as on the CPU (runtime/src/kernels/
// index_util.h): no index reads outside x.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/index_nd.cuh>

#include <climits>
#include <cstdint>

namespace aotc::rt::cuda {
namespace {

struct IndexPointers {
  const void* at[8];
};

__device__ __forceinline__ int64_t read_index(const void* index, int64_t elem_size, int64_t n, int64_t size) {
  return wrap_index(elem_size == 4 ? static_cast<int64_t>(static_cast<const int32_t*>(index)[n])
                                   : static_cast<const int64_t*>(index)[n],
                    size);
}

// Coord is uint32_t where the units fit in 31 bits: 64-bit divisions cost several times more.
template <class Unit, class Coord>
__global__ void index_gather_kernel(IndexGatherParams p, IndexPointers indices, int64_t total,
                                    int64_t block_units, int64_t block_count, const Unit* __restrict__ x,
                                    Unit* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const Coord on = static_cast<Coord>(i) / static_cast<Coord>(block_units);
  const Coord e = static_cast<Coord>(i) - on * static_cast<Coord>(block_units);
  const Coord o = on / static_cast<Coord>(p.count);
  const int64_t n = static_cast<int64_t>(on - o * static_cast<Coord>(p.count));
  int64_t block = 0;
  for (int k = 0; k < p.num_indices; ++k)
    block = block * p.sizes[k] + read_index(indices.at[k], p.index_elem_size[k], n, p.sizes[k]);
  y[i] = x[(static_cast<int64_t>(o) * block_count + block) * block_units + static_cast<int64_t>(e)];
}

template <class Unit>
void launch(cudaStream_t stream, const IndexGatherParams& p, const IndexPointers& indices,
            int64_t block_bytes, int64_t block_count, const void* x, void* y) {
  const int64_t block_units = block_bytes / static_cast<int64_t>(sizeof(Unit));
  const int64_t total = p.outer * p.count * block_units;
  const auto* xs = static_cast<const Unit*>(x);
  auto* ys = static_cast<Unit*>(y);
  if (total <= INT_MAX)
    index_gather_kernel<Unit, uint32_t>
        <<<blocks_for(total), kThreads, 0, stream>>>(p, indices, total, block_units, block_count, xs, ys);
  else
    index_gather_kernel<Unit, int64_t>
        <<<blocks_for(total), kThreads, 0, stream>>>(p, indices, total, block_units, block_count, xs, ys);
}

}  // namespace

void index_gather(cudaStream_t stream, const IndexGatherParams& p, const void* x, const void* const* indices,
                  void* y) {
  if (p.outer <= 0 || p.count <= 0 || p.inner <= 0 || p.num_indices < 1 || p.num_indices > 8) return;
  int64_t block_count = 1;  // blocks of `inner` elements per outer index
  IndexPointers pointers{};
  for (int k = 0; k < p.num_indices; ++k) {
    if (p.sizes[k] <= 0) return;  // nothing to index (torch would raise for count > 0)
    block_count *= p.sizes[k];
    pointers.at[k] = indices[k];
  }
  const int64_t block_bytes = p.inner * p.elem_size;
  const auto aligned = [&](int64_t unit) {
    return block_bytes % unit == 0 &&
           (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % static_cast<uintptr_t>(unit) ==
               0;
  };
  if (aligned(16))
    launch<uint4>(stream, p, pointers, block_bytes, block_count, x, y);
  else if (aligned(8))
    launch<uint64_t>(stream, p, pointers, block_bytes, block_count, x, y);
  else if (aligned(4))
    launch<uint32_t>(stream, p, pointers, block_bytes, block_count, x, y);
  else if (aligned(2))
    launch<uint16_t>(stream, p, pointers, block_bytes, block_count, x, y);
  else
    launch<uint8_t>(stream, p, pointers, block_bytes, block_count, x, y);
  check_launch("index_gather_kernel");
}

}  // namespace aotc::rt::cuda
