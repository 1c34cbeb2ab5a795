// gather.cu - torch.gather / take_along_dim (GatherParams, as the CPU kernel takes it): one
// thread per output element reads x through its strides (0 along the dims take_along_dim
// broadcasts). Elements of 1, 2, 4 or 8 bytes (it moves bytes: any dtype); indices int64
// or int32, wrapped when negative and clamped into [0, x_dim_size) as on the CPU
// (runtime/src/kernels/index_util.h), so that no index reads outside x.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/index_nd.cuh>

#include <climits>

namespace aotc::rt::cuda {
namespace {

// Coord is uint32_t where the index space fits in 31 bits: 64-bit divisions cost several
// times more.
template <class T, class Index, class Coord>
__global__ void gather_kernel(GatherParams p, int64_t total, const T* __restrict__ x,
                              const Index* __restrict__ index, T* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  Coord rest = static_cast<Coord>(i);
  int64_t off = 0;  // x's offset without the gathered dim
  for (int d = p.rank - 1; d >= 0; --d) {
    const Coord n = static_cast<Coord>(p.dims[d]);
    const Coord c = rest % n;
    rest /= n;
    if (d != p.dim) off += static_cast<int64_t>(c) * p.x_strides[d];
  }
  y[i] = x[off + read_index(index, i, p.x_dim_size) * p.x_strides[p.dim]];
}

template <class T, class Index>
void launch(cudaStream_t stream, const GatherParams& p, int64_t total, const void* x, const void* index,
            void* y) {
  const auto* xs = static_cast<const T*>(x);
  const auto* is = static_cast<const Index*>(index);
  auto* ys = static_cast<T*>(y);
  if (total <= INT_MAX)
    gather_kernel<T, Index, uint32_t><<<blocks_for(total), kThreads, 0, stream>>>(p, total, xs, is, ys);
  else
    gather_kernel<T, Index, int64_t><<<blocks_for(total), kThreads, 0, stream>>>(p, total, xs, is, ys);
}

template <class T>
void launch_for_index(cudaStream_t stream, const GatherParams& p, int64_t total, const void* x,
                      const void* index, void* y) {
  if (p.index_elem_size == 4)
    launch<T, int32_t>(stream, p, total, x, index, y);
  else
    launch<T, int64_t>(stream, p, total, x, index, y);
}

}  // namespace

void gather(cudaStream_t stream, const GatherParams& p, const void* x, const void* index, void* y) {
  if (p.rank < 1 || p.rank > 8 || p.dim < 0 || p.dim >= p.rank || p.x_dim_size <= 0) return;
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.dims[d];
  if (total <= 0) return;
  switch (p.elem_size) {
    case 1:
      launch_for_index<uint8_t>(stream, p, total, x, index, y);
      break;
    case 2:
      launch_for_index<uint16_t>(stream, p, total, x, index, y);
      break;
    case 4:
      launch_for_index<uint32_t>(stream, p, total, x, index, y);
      break;
    case 8:
      launch_for_index<uint64_t>(stream, p, total, x, index, y);
      break;
    default:
      note_error("gather", "element size is not 1, 2, 4 or 8 bytes");
      return;
  }
  check_launch("gather_kernel");
}

}  // namespace aotc::rt::cuda
